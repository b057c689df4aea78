/*-------------------------------------------------------------------------
 *
 * tool_family.h
 *		The tool registry: each family of tools (the built-in tools, agent
 *		teams, MCP tools) describes itself with a ToolFamily, and the
 *		dispatcher (tools.c) finds a call's family through the registry.  A
 *		family's code goes through the gate (tool_gate.h) and never calls
 *		the dispatcher back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_TOOL_FAMILY_H
#define PG_AGENTS_TOOL_FAMILY_H

#include "tools.h"

/* executes one call of a tool of the family (the contract of ToolsExecute) */
typedef ToolOutcome (*ToolFamilyExecute) (const ToolRun *tr, const char *name, json_t *input,
										  json_t **result, int64 *child_run_id,
										  TimestampTz started);

/* appends the family's definitions for one claimed run to tools */
typedef void (*ToolFamilyDefinitions) (json_t *tools, int64 agent_id, int64 run_id,
									   bool can_delegate);

typedef struct ToolFamily
{
	const char *family;			/* for messages and reading */
	const char *prefix;			/* names starting with it are the family's, or NULL */
	bool		(*handles) (const ToolRun *tr, const char *name);	/* or NULL: prefix */
	/* the fixed definitions, offered before context assembly, or NULL */
	ToolFamilyDefinitions base_definitions;
	/* the run's own definitions, added after context assembly, or NULL */
	ToolFamilyDefinitions run_definitions;
	ToolFamilyExecute execute;
} ToolFamily;

/* the families, in the order the dispatcher asks them */
extern const ToolFamily ToolsBuiltinFamily;		/* tools_builtin.c */
extern const ToolFamily ToolsRowsFamily;		/* tools_rows.c */
extern const ToolFamily TeamsToolFamily;		/* teams.c */
extern const ToolFamily McpToolFamily;			/* mcp_tools.c */
extern const ToolFamily WebToolFamily;			/* tools_web.c */

#endif							/* PG_AGENTS_TOOL_FAMILY_H */
