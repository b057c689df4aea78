/*-------------------------------------------------------------------------
 *
 * tool_gate.h
 *		The gate every tool family goes through (tool_gate.c): access
 *		checks, the approval policy and gate, the tool role's
 *		subtransaction, and the run's steps.  Families (tools_builtin.c,
 *		teams.c, mcp_tools.c, context.c) call it; it calls no family.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_TOOL_GATE_H
#define PG_AGENTS_TOOL_GATE_H

#include "tools.h"

/* makes a tool result from the rows of the last SPI statement */
typedef json_t *(*ToolGateRowsToJson) (void *arg);

extern void ToolGateBegin(void);
extern void ToolGateSetIdentity(const ToolRun *tr);
extern json_t *ToolGateError(const char *fmt,...) pg_attribute_printf(1, 2);
extern Datum ToolGateJsonb(json_t *v);

/* an id argument of a call: TOOL_ID_OK (*out > 0), TOOL_ID_ABSENT, TOOL_ID_BAD */
typedef enum ToolIdArg
{
	TOOL_ID_OK,
	TOOL_ID_ABSENT,
	TOOL_ID_BAD
} ToolIdArg;
extern ToolIdArg ToolGateInputId(json_t *input, const char *key, int64 *out);

/* steps */
extern void ToolGateRecordStep(int64 run_id, const char *workspace, const char *kind, const char *name,
							   json_t *input, json_t *output, const char *status,
							   int64 tokens, TimestampTz started);

/* access: agent.explain_access, and the refusal of a denied call */
extern bool ToolGateAllowed(const ToolRun *tr, const char *rtype, const char *rid,
							const char *mode, char **reason);
extern json_t *ToolGateDeny(const ToolRun *tr, const char *tool, json_t *input,
							const char *rtype, const char *rid, const char *reason,
							TimestampTz started);

/* approval */
extern bool ToolGateNeedsApproval(const ToolRun *tr, const char *tool, bool is_write);
extern ToolOutcome ToolGateApproval(const ToolRun *tr, const char *tool, json_t *input,
									json_t **result, TimestampTz started);
extern bool ToolGateHolds(const ToolRun *tr, const char *tool, bool is_write, json_t *input,
						  json_t **result, TimestampTz started, ToolOutcome *outcome);
extern ToolOutcome ToolGateFail(const ToolRun *tr, const char *tool, json_t *input,
								json_t **result, TimestampTz started,
								const char *fmt,...) pg_attribute_printf(6, 7);

/* subtransactions: any body, and data SQL as the tool role */
extern char *ToolGateInSubxact(void (*body) (void *arg), void *arg);
extern json_t *ToolGateRunAsTool(const char *sql, int nargs, Oid *types, Datum *vals,
								 const char *nulls, int expect, ToolGateRowsToJson convert,
								 void *arg, bool *failed);

#endif							/* PG_AGENTS_TOOL_GATE_H */
