/*-------------------------------------------------------------------------
 *
 * mcp_tools_int.h
 *		What the MCP family's files share, private to them: the call a tool
 *		transaction prepares (mcp_tools.c, McpToolExecute) and the
 *		asynchronous machinery sends and records (mcp_tools_async.c).
 *
 * mcp_tools.c calls mcp_tools_async.c, never the other way round.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_MCP_TOOLS_INT_H
#define PG_AGENTS_MCP_TOOLS_INT_H

#include "util/jansson_prelude.h"

#include "datatype/timestamp.h"
#include "llm/http.h"
#include "mcp.h"
#include "tools/tool_family.h"

typedef struct McpEntry McpEntry;	/* a worker's client (mcp_tools_async.c) */

typedef struct McpCall
{
	ToolCall	call;			/* the head the dispatcher reads (tool_family.h) */
	/* prepared in the tool transaction */
	int64		server_id;
	char	   *exposed;
	char	   *server;
	char	   *tool;
	char	   *url;
	char	   *protocol;
	char	   *key;
	json_t	   *headers;		/* secret: never printed */
	json_t	   *input;			/* the model's input, for the step */
	json_t	   *arguments;
	json_t	   *tool_def;
	json_t	   *responses;
	char	   *request_state;
	TimestampTz started;
	/* the transfer, with no transaction open */
	McpEntry   *entry;
	McpAsync   *async;
	bool		initializing;	/* async is the session's initialize */
	char	   *session;		/* the session the call went out on */
	HttpRequest *req;
	int			session_retries;
	TimestampTz next_at;
	/* what came back: {"ok", "result"|"error", ...} */
	json_t	   *answer;
	bool		list_changed;
	/* a question the server asked in the stream, waiting for people */
	json_t	   *elicit;			/* its elicitation/create request */
	int			elicit_state;	/* ELICIT_* */
	int64		elicit_id;		/* agent.mcp_elicitations.id */
	long		elicit_since;	/* McpNowMs() when it came */
	TimestampTz elicit_until;	/* answered "cancel" then */
	TimestampTz poll_at;
} McpCall;

/* mcp_tools_async.c */
extern McpCall *McpPreparedCall;	/* left by McpToolExecute (TOOL_ASYNC) */
extern const ToolAsyncRoutine McpAsyncRoutine;
extern char *McpXdup(const char *s);
extern json_t *McpJsonFromText(const char *text);
extern Datum McpJsonbArg(json_t *j);
extern ToolOutcome McpRecordCall(const ToolRun *tr, const char *name, json_t *input, json_t *call,
								 json_t **result, TimestampTz started);
extern void McpCallFree(McpCall *mc);

#endif							/* PG_AGENTS_MCP_TOOLS_INT_H */
