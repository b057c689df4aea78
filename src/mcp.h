/*-------------------------------------------------------------------------
 *
 * mcp.h
 *		MCP client: Streamable HTTP JSON-RPC over libcurl and jansson.
 *
 * This header and src/mcp.c use no PostgreSQL backend facility (no palloc,
 * no ereport), so that the command-line probe tools/pg_agents_mcp.c links
 * the very same client as the extension.  Memory is malloc'd: whatever the
 * client returns (json_t, strings) is released by the caller with
 * json_decref()/free() before anything that can ereport.
 *
 * Protocol: MCP 2025-11-25 Streamable HTTP transport (2025-06-18 and
 * 2025-03-26 servers accepted).  One JSON-RPC message per POST; the answer
 * is either a JSON body or an SSE stream, in which notifications and server
 * requests that come before our response are skipped (a server request is
 * answered "method not found", ping with an empty result).  A stream closed
 * before the response is resumed with GET + Last-Event-ID after the server's
 * retry delay.  Mcp-Session-Id is kept and echoed, MCP-Protocol-Version is
 * sent after initialization, a lost session (404) is re-initialized once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_MCP_H
#define PG_AGENTS_MCP_H

#include <stddef.h>

#include <jansson.h>

#define MCP_PROTOCOL_VERSION	"2025-11-25"
#define MCP_CLIENT_NAME			"pg_agents"
#define MCP_CLIENT_VERSION		"0.1.0"

/*
 * An empty JSON object.  Code loaded into the server must never call
 * jansson's json_object() directly: the postgres executable exports a
 * function of the same name (SQL json_object), and the dynamic linker binds
 * our call to it.  (libjansson's own internal calls are not affected.)
 */
#define mcp_json_object() json_pack("{}")

/* Result codes of the client calls. */
#define MCP_OK				0
#define MCP_ERROR			(-1)	/* transport, HTTP or protocol failure */
#define MCP_RPC_ERROR		(-2)	/* the server answered a JSON-RPC error */
#define MCP_ABORTED			(-3)	/* the abort callback asked to stop */

typedef struct McpClient McpClient;

/* Returns non-zero to abort the transfer under way (e.g. query cancel). */
typedef int (*McpAbortCallback) (void *arg);

/*
 * Checks that url is acceptable: https:// anywhere, http:// only to a
 * loopback host (127.0.0.0/8, ::1, localhost).  Returns NULL when it is, or a
 * static sentence saying why not.
 */
extern const char *mcp_url_problem(const char *url);

/*
 * New client for one server.  headers is a JSON object of extra HTTP headers
 * (e.g. {"Authorization": "Bearer ..."}) or NULL; it is copied.  timeout_ms
 * bounds every call (each initialize, list or call as a whole).
 */
extern McpClient *mcp_client_new(const char *url, json_t *headers, long timeout_ms);
extern void mcp_client_set_abort(McpClient *c, McpAbortCallback cb, void *arg);
extern void mcp_client_set_timeout(McpClient *c, long timeout_ms);

/* Sends DELETE for the session (if any), then frees everything. */
extern void mcp_client_close(McpClient *c);

/*
 * initialize + notifications/initialized.  Called implicitly by list/call
 * when the client is not initialized yet.
 */
extern int	mcp_initialize(McpClient *c);

/* tools/list, following nextCursor to the end: *tools is a new array. */
extern int	mcp_list_tools(McpClient *c, json_t **tools);

/*
 * tools/call.  On MCP_OK, *result is the CallToolResult object (it may carry
 * "isError": true: a failed tool is a result, not a transport error).  On
 * MCP_RPC_ERROR, *result is the JSON-RPC error object ({code, message}).
 */
extern int	mcp_call_tool(McpClient *c, const char *name, json_t *arguments, json_t **result);

/* The last error in clear (never contains a header value), or "". */
extern const char *mcp_client_error(McpClient *c);

/* After initialization: negotiated version, session id (or NULL), serverInfo. */
extern const char *mcp_client_protocol_version(McpClient *c);
extern const char *mcp_client_session_id(McpClient *c);
extern json_t *mcp_client_server_info(McpClient *c);

/* How many times the client (re-)initialized, and lost its session. */
extern int	mcp_client_initializations(McpClient *c);

/*
 * A CallToolResult as one text: the text parts joined by newlines, other
 * parts as compact JSON.  malloc'd.
 */
extern char *mcp_result_text(json_t *result);

#endif							/* PG_AGENTS_MCP_H */
