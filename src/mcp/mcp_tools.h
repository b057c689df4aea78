/*-------------------------------------------------------------------------
 *
 * mcp_tools.h
 *		MCP tools of the worker (mcp_tools.c): mcp__<server>__<tool>, and the
 *		asynchronous MCP call of a run slot (mcp_tools_async.c), reached
 *		through the registry (McpToolFamily, tool_family.h) only; the
 *		refresh in a process of its own (mcp_refresh.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_MCP_TOOLS_H
#define PG_AGENTS_MCP_TOOLS_H

#include "util/jansson_prelude.h"

#include "datatype/timestamp.h"
#include "llm/http.h"
#include "tools/tools.h"

/* the worker loop (worker.c): the refresh, the transfers counted */
extern bool McpRefreshLaunch(void);	/* false: do the refresh in the loop */
extern int	McpTransfersInFlight(void);	/* mcp_tools_async.c */

#endif							/* PG_AGENTS_MCP_TOOLS_H */
