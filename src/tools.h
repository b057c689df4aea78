/*-------------------------------------------------------------------------
 *
 * tools.h
 *		The tool dispatcher of the worker (tools.c): a call's family found
 *		through the registry (tool_family.h), run inside the run slots'
 *		transactions; the types every tool family shares.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_TOOLS_H
#define PG_AGENTS_TOOLS_H

#include "jansson_prelude.h"

#include "datatype/timestamp.h"

typedef struct ToolRun
{
	int64		run_id;
	int64		agent_id;
	const char *workspace;
	const char *regime;			/* manual | autonomous */
	const char *user_id;		/* requested_by for manual runs, else NULL */
	const char *approval_mode;	/* none | writes | all */
	json_t	   *scope;			/* agents.scope (borrowed) */
	bool		can_delegate;
} ToolRun;

typedef enum ToolOutcome
{
	TOOL_DONE,					/* result is set */
	TOOL_PAUSE,					/* approval requested: the run waits */
	TOOL_WAIT_CHILD,			/* delegated: child_run_id is set */
	TOOL_MCP_ASYNC				/* an MCP call is prepared (McpTakePrepared) */
} ToolOutcome;

extern json_t *ToolsDefinitions(void);
extern void ToolsAddRunDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate);
extern ToolOutcome ToolsExecute(const ToolRun *tr, const char *name, json_t *input,
								json_t **result, int64 *child_run_id);
extern json_t *ToolsChildResult(int64 child_run_id, bool *finished);	/* tools_builtin.c */

/*
 * The gate every tool family goes through (identity, steps, access,
 * approval, subtransactions) is tool_gate.h; the registry of families
 * tool_family.h; the SPI helpers spi_util.h.
 */

#endif							/* PG_AGENTS_TOOLS_H */
