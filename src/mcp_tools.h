/*-------------------------------------------------------------------------
 *
 * mcp_tools.h
 *		MCP tools of the worker (mcp_tools.c): mcp__<server>__<tool>, and the
 *		asynchronous MCP call of a run slot.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_MCP_TOOLS_H
#define PG_AGENTS_MCP_TOOLS_H

#include "jansson_prelude.h"

#include "datatype/timestamp.h"
#include "http.h"
#include "tools.h"

extern void McpAppendToolDefinitions(json_t *tools, int64 agent_id, int64 run_id);
extern ToolOutcome McpToolExecute(const ToolRun *tr, const char *name, json_t *input,
								  json_t **result, TimestampTz started);

/* an MCP call in flight, asynchronous (the slot state SLOT_MCP of the run slots) */
typedef struct McpCall McpCall;
extern McpCall *McpTakePrepared(void);
extern void McpCallStart(McpCall *mc, void *owner);	/* no transaction open */
extern bool McpCallCollect(McpCall *mc, HttpRequest *req);	/* true: answered */
extern void McpCallPump(McpCall *mc);
extern bool McpCallWantsUnit(McpCall *mc, TimestampTz now);
extern void McpCallElicitStep(const ToolRun *tr, McpCall *mc);
extern bool McpRefreshLaunch(void);	/* false: do the refresh in the loop */
extern bool McpCallDue(McpCall *mc, TimestampTz now);
extern bool McpCallInFlight(McpCall *mc);
extern bool McpCallAnswered(McpCall *mc);
extern TimestampTz McpCallNextAt(McpCall *mc);
extern ToolOutcome McpCallRecord(const ToolRun *tr, McpCall *mc, json_t **result);	/* in a unit */
extern void McpCallFree(McpCall *mc);
extern void McpReplyDone(HttpRequest *req);
extern void McpWorkerHousekeeping(void);
extern int	McpTransfersInFlight(void);

#endif							/* PG_AGENTS_MCP_TOOLS_H */
