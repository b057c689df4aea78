/*-------------------------------------------------------------------------
 *
 * tools.h
 *		Built-in tools of the worker (tools.c), run inside the run slots'
 *		transactions, with the approval gate, step recording and the SPI
 *		helpers the other worker files share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_TOOLS_H
#define PG_AGENTS_TOOLS_H

#include "jansson_prelude.h"

#include "datatype/timestamp.h"
#include "executor/spi.h"

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

extern json_t *ToolsDefinitions(bool can_delegate);
extern void ToolsSetIdentity(const ToolRun *tr);
extern ToolOutcome ToolsExecute(const ToolRun *tr, const char *name, json_t *input,
								json_t **result, int64 *child_run_id);
extern char *ToolsInSubxact(void (*body) (void *arg), void *arg);
extern void ToolsRecordStep(int64 run_id, const char *kind, const char *name,
							json_t *input, json_t *output, const char *status,
							int64 tokens, TimestampTz started);
extern bool ToolsRecordStepText(int64 run_id, const char *kind, const char *name,
								const char *input_json, const char *output_json,
								const char *status, int64 tokens, TimestampTz started);
extern json_t *ToolsChildResult(int64 child_run_id, bool *finished);
extern bool PgAgentsFunctionExists(const char *signature);
extern Oid	PgAgentsLookupProcedure(const char *signature);
extern void ToolsRefreshCatalog(void);
extern json_t *ToolsRunAsTool(const char *sql, int nargs, Oid *types, Datum *vals, const char *nulls,
							  int expect, json_t *(*convert) (void *arg), void *arg, bool *failed);
extern int	PgAgentsExecPlan(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types,
							 Datum *vals, const char *nulls, bool read_only, long count);

/* approval policy and gate, shared with mcp_tools.c */
extern bool ToolsNeedsApproval(const ToolRun *tr, const char *tool, bool is_write);
extern ToolOutcome ToolsApprovalGate(const ToolRun *tr, const char *tool, json_t *input,
									 json_t **result, TimestampTz started);

#endif							/* PG_AGENTS_TOOLS_H */
