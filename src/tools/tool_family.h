/*-------------------------------------------------------------------------
 *
 * tool_family.h
 *		The tool registry: each family of tools (the built-in tools, agent
 *		teams, MCP tools) describes itself with a ToolFamily, and the
 *		dispatcher (tools.c) finds a call's family through the registry.  A
 *		family's code goes through the gate (tool_gate.h) and never calls
 *		the dispatcher back.  The runs module reaches a family through the
 *		dispatcher only, as PostgreSQL reaches an index access method through
 *		its IndexAmRoutine: an asynchronous call (ToolAsyncRoutine), what is
 *		delivered between turns and a child's wait are optional callbacks.
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

typedef struct ToolFamily ToolFamily;

/*
 * The head of a family's asynchronous call (its own struct starts with it):
 * the dispatcher finds the call's family there.  owner is the holder given
 * to ToolsCallStart (a run slot), what ToolsTransferDone returns.
 */
struct ToolCall
{
	const ToolFamily *family;
	void	   *owner;
};

/*
 * The asynchronous calls of a family whose execute may return TOOL_ASYNC
 * (the contracts of the ToolsCall* functions of tools.h).  take gives the
 * call the last execute prepared; transfer_done is asked about every
 * transfer that is not an LLM call: false when it is not the family's, else
 * *answered is the call that has its answer now, or NULL.
 */
typedef struct ToolAsyncRoutine
{
	ToolCall   *(*take) (void);
	void		(*start) (ToolCall *call);
	bool		(*due) (ToolCall *call, TimestampTz now);
	bool		(*in_flight) (ToolCall *call);
	bool		(*answered) (ToolCall *call);
	TimestampTz (*next_at) (ToolCall *call);
	void		(*pump) (ToolCall *call);
	bool		(*wants_unit) (ToolCall *call, TimestampTz now);
	void		(*unit_step) (const ToolRun *tr, ToolCall *call);
	ToolOutcome (*record) (const ToolRun *tr, ToolCall *call, json_t **result);
	void		(*free) (ToolCall *call);
	bool		(*transfer_done) (HttpRequest *req, ToolCall **answered);
	void		(*housekeeping) (void);	/* once a pass, no transaction open */
} ToolAsyncRoutine;

struct ToolFamily
{
	const char *family;			/* for messages and reading */
	const char *prefix;			/* names starting with it are the family's, or NULL */
	bool		(*handles) (const ToolRun *tr, const char *name);	/* or NULL: prefix */
	/* the fixed definitions, offered before context assembly, or NULL */
	ToolFamilyDefinitions base_definitions;
	/* the run's own definitions, added after context assembly, or NULL */
	ToolFamilyDefinitions run_definitions;
	ToolFamilyExecute execute;
	/* optional: asynchronous calls (TOOL_ASYNC), or NULL */
	const ToolAsyncRoutine *async;
	/* optional, between turns (in a unit): what reached the run meanwhile, delivered */
	int			(*between_turns) (int64 run_id, const char *workspace, LlmProvider provider,
								  json_t *messages);
	/* ... whether there is any, without delivering it */
	bool		(*between_turns_pending) (int64 run_id, const char *workspace);
	/* optional, a run waiting for its child (in a unit): the wait's result, or NULL */
	json_t	   *(*child_poll) (int64 run_id, const char *workspace, int64 child_run_id);
};

/* the families, in the order the dispatcher asks them */
extern const ToolFamily ToolsBuiltinFamily;		/* tools_builtin.c */
extern const ToolFamily ToolsRowsFamily;		/* tools_rows.c */
extern const ToolFamily TeamsToolFamily;		/* teams.c */
extern const ToolFamily McpToolFamily;			/* mcp_tools.c */
extern const ToolFamily WebToolFamily;			/* tools_web.c */

#endif							/* PG_AGENTS_TOOL_FAMILY_H */
