/*-------------------------------------------------------------------------
 *
 * mcp.h
 *		MCP client: Streamable HTTP JSON-RPC over libcurl and jansson.
 *
 * This header and the client (src/mcp/mcp_transport.c, mcp_protocol.c,
 * mcp_async.c; their private mcp_int.h) use no PostgreSQL backend facility
 * (no palloc, no ereport), so that the command-line probe
 * tools/pg_agents_mcp.c links the very same client as the extension.  Memory is malloc'd: whatever the
 * client returns (json_t, strings) is released by the caller with
 * json_decref()/free() before anything that can ereport.
 *
 * Protocol generations (chosen per server, see McpClientSetProtocol):
 *   2026-07-28, stateless: no initialize and no session; every request
 *     carries MCP-Protocol-Version, Mcp-Method (and Mcp-Name for tools/call,
 *     resources/read, prompts/get), Mcp-Param-* headers for the tool
 *     parameters marked x-mcp-header, and params._meta with the protocol
 *     version, clientInfo and clientCapabilities.  A -32022 (unsupported
 *     version) answer is retried once with a version from its "supported"
 *     list.  A result with resultType "input_required" is answered through
 *     the elicitation callback and retried with inputResponses and the
 *     server's requestState, or handed back as MCP_INPUT_REQUIRED.
 *   2025-11-25 / 2025-06-18 / 2025-03-26 Streamable HTTP (below).
 * In auto mode (the default) the client sends server/discover first: a
 * server that answers it with 2026-07-28 among its supportedVersions is
 * spoken to statelessly, any other answer falls back to initialize.
 *
 * Legacy transport: one JSON-RPC message per POST; the answer
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

#include <curl/curl.h>

#include "util/jansson_prelude.h"

#define MCP_PROTOCOL_VERSION	"2025-11-25"	/* newest stateful version */
#define MCP_STATELESS_VERSION	"2026-07-28"
#define MCP_CLIENT_NAME			"pg_agents"
/* the extension's version: the Makefile passes it from pg_agents.control */
#define MCP_CLIENT_VERSION		PG_AGENTS_VERSION

/* An empty JSON object (the workaround is jansson_prelude.h's). */
#define mcp_json_object() json_object()

/* Result codes of the client calls. */
#define MCP_OK				0
#define MCP_ERROR			(-1)	/* transport, HTTP or protocol failure */
#define MCP_RPC_ERROR		(-2)	/* the server answered a JSON-RPC error */
#define MCP_ABORTED			(-3)	/* the abort callback asked to stop */
#define MCP_INPUT_REQUIRED	(-4)	/* tools/call: the server asks for input */
#define MCP_UNAUTHORIZED	(-5)	/* HTTP 401/403 and no (more) credentials */

typedef struct McpClient McpClient;
typedef struct McpAsync McpAsync;	/* an asynchronous request, below */

/* Returns non-zero to abort the transfer under way (e.g. query cancel). */
typedef int (*McpAbortCallback) (void *arg);

/*
 * Checks that url is acceptable: https:// anywhere, http:// only to a
 * loopback host (127.0.0.0/8, ::1, localhost).  Returns NULL when it is, or a
 * static sentence saying why not.
 */
extern const char *McpUrlProblem(const char *url);
extern char *McpHeaderValue(const char *buf, size_t n, size_t name_len);

/*
 * New client for one server.  headers is a JSON object of extra HTTP headers
 * (e.g. {"Authorization": "Bearer ..."}) or NULL; it is copied.  timeout_ms
 * bounds every call (each initialize, list or call as a whole).
 */
extern McpClient *McpClientNew(const char *url, json_t *headers, long timeout_ms);
extern void McpClientSetAbort(McpClient *c, McpAbortCallback cb, void *arg);
extern void McpClientSetTimeout(McpClient *c, long timeout_ms);

/*
 * The protocol to speak: NULL or "auto" (discover), or one version among
 * 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26.  Before the first request.
 */
extern void McpClientSetProtocol(McpClient *c, const char *version);

/*
 * Elicitation: called for a server's elicitation/create (a 2025-11-25
 * request in a stream, or an inputRequest of a 2026-07-28 input_required
 * result) with its params.  Returns a new ElicitResult object
 * ({"action": "accept"|"decline"|"cancel", "content"?}), or NULL when no
 * answer can be given now (then a 2026-07-28 call returns
 * MCP_INPUT_REQUIRED; a 2025-11-25 request is declined).  Defaults of the
 * requested schema (SEP-1034) are applied by the client to an accepted
 * answer.  Without a callback, elicitation is not declared as a capability.
 */
typedef json_t *(*McpElicitCallback) (void *arg, json_t *params);
extern void McpClientSetElicitation(McpClient *c, McpElicitCallback cb, void *arg);

/*
 * Elicitation answered later, by people (the worker): declared to 2026-07-28
 * servers only, whose input_required results come back as
 * MCP_INPUT_REQUIRED to be answered with McpCallToolWithInput once
 * someone has; a 2025-11-25 server is not told the client elicits, since a
 * synchronous call cannot wait for a person with its stream open.
 */
extern void McpClientDeferElicitation(McpClient *c);

/*
 * Elicitation in the stream of a stateful (2025-11-25) server, answered by
 * people while the stream stays open (the worker): declared to such
 * servers; an elicitation/create request in the stream of an asynchronous
 * call is held (McpAsyncTakeElicitation) instead of being answered, and
 * the call's transfer may last hold_ms longer than the client's timeout (the
 * caller bounds the time outside a person's wait, McpAsyncSoftDeadline).
 * 0: not declared (the default).
 */
extern void McpClientHoldElicitation(McpClient *c, long hold_ms);

/*
 * Authorization: called when the server answers 401, or 403 with
 * error="insufficient_scope", with the HTTP status and the
 * WWW-Authenticate header (or NULL).  Returns 0 after it set a new
 * credential with McpClientSetBearer (the request is retried), non-zero
 * to give up (it may set the error with McpClientSetError).  At most
 * MCP_MAX_AUTH_RETRIES attempts per request.
 */
#define MCP_MAX_AUTH_RETRIES	3
typedef int (*McpAuthCallback) (void *arg, McpClient *c, long status, const char *www_authenticate);
extern void McpClientSetAuth(McpClient *c, McpAuthCallback cb, void *arg);
/* "Authorization: Bearer <token>" on every request from now on (NULL: none). */
extern void McpClientSetBearer(McpClient *c, const char *token);
extern void McpClientSetError(McpClient *c, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern const char *McpClientUrl(McpClient *c);
extern long McpClientTimeout(McpClient *c);

/* Sends DELETE for the session (if any), then frees everything. */
extern void McpClientClose(McpClient *c);

/*
 * initialize + notifications/initialized.  Called implicitly by list/call
 * when the client is not initialized yet.
 */
extern int	McpInitialize(McpClient *c);

/*
 * tools/list, following nextCursor to the end: *tools is a new array.  The
 * schemas are kept as sent (JSON Schema 2020-12 keywords, $ref never
 * dereferenced).  A tool whose x-mcp-header annotations are invalid is left
 * out (and cannot be called); McpClientRejectedTools lists them.  The
 * list is kept for the Mcp-Param-* headers of later calls, and listed again
 * before a call once its ttlMs (when the server gave one) has passed.
 */
extern int	McpListTools(McpClient *c, json_t **tools);
/* ttlMs of the last tools/list (smallest of its pages), or -1 when none was given. */
extern long McpClientToolsTtlMs(McpClient *c);
/* Borrowed array of {"name", "reason"} of the tools left out by the last list. */
extern json_t *McpClientRejectedTools(McpClient *c);

/*
 * Any request (e.g. resources/read), with the same transport rules; on
 * MCP_OK *result is the result object, on MCP_RPC_ERROR the error object.
 */
extern int	McpRequest(McpClient *c, const char *method, json_t *params, json_t **result);

/*
 * tools/call.  On MCP_OK, *result is the CallToolResult object (it may carry
 * "isError": true: a failed tool is a result, not a transport error).  On
 * MCP_RPC_ERROR, *result is the JSON-RPC error object ({code, message}).
 */
extern int	McpCallTool(McpClient *c, const char *name, json_t *arguments, json_t **result);

/*
 * tools/call continuing an input_required round: input_responses (object)
 * and request_state (or NULL) are sent with the call.  MCP_INPUT_REQUIRED
 * when the server asks again (and the callback could not answer): *result
 * is then the input_required result ({"inputRequests", "requestState"?}).
 */
extern int	McpCallToolWithInput(McpClient *c, const char *name, json_t *arguments,
									 json_t *input_responses, const char *request_state,
									 json_t **result);

/* Base64 (urlsafe: the URL alphabet without padding), malloc'd. */
extern char *McpBase64(const void *data, size_t len, int urlsafe);

/* Applies the defaults of an elicitation's requestedSchema to an accepted answer (SEP-1034). */
extern void McpElicitationApplyDefaults(json_t *params, json_t *answer);

/* The last error in clear (never contains a header value), or "". */
extern const char *McpClientError(McpClient *c);

/* After initialization: negotiated version, session id (or NULL), serverInfo. */
extern const char *McpClientProtocolVersion(McpClient *c);
extern const char *McpClientSessionId(McpClient *c);
extern json_t *McpClientServerInfo(McpClient *c);

/* How many times the client (re-)initialized, and lost its session. */
extern int	McpClientInitializations(McpClient *c);

/*
 * A CallToolResult as one text: the text parts joined by newlines, other
 * parts as compact JSON.  malloc'd.
 */
extern char *McpResultText(json_t *result);

/*
 * Asynchronous tools/call, for a caller that drives libcurl's multi
 * interface itself (the worker, src/mcp/mcp_tools_async.c).  McpClientReady first
 * (it may initialize a session or discover, synchronously), then
 * McpAsyncCall prepares the POST on a handle of its own: the caller adds
 * McpAsyncHandle() to its multi handle and, once the transfer is done,
 * gives its CURLcode to McpAsyncDone, which returns MCP_OK,
 * MCP_RPC_ERROR, MCP_INPUT_REQUIRED (with *result as for
 * McpCallToolWithInput), MCP_ERROR/MCP_UNAUTHORIZED (the client error
 * says why), MCP_SESSION_GONE (the server forgot the session: forget it,
 * get ready again and call again) or MCP_AGAIN (the SSE stream closed
 * before the response: add the same handle again after McpAsyncDelayMs,
 * it resumes with GET + Last-Event-ID).  Several calls may be in flight on
 * one client.  tool_def is the tool as listed (its inputSchema gives the
 * Mcp-Param-* headers of 2026-07-28), or NULL.  Requests the server makes
 * in the stream are answered through McpAsyncNextReply (POSTs the
 * caller sends), never synchronously.
 */
#define MCP_SESSION_GONE	(-6)
#define MCP_AGAIN			(-7)

extern int	McpClientReady(McpClient *c);
extern void McpClientForgetSession(McpClient *c);
extern int	McpClientStateless(McpClient *c);
extern int	McpClientIsReady(McpClient *c);

/*
 * A session server whose version is known (set with McpClientSetProtocol,
 * or negotiated before) can be initialized asynchronously too:
 * McpAsyncInitialize prepares initialize (NULL when the client cannot,
 * e.g. in auto mode: then McpClientReady), McpAsyncDone answers
 * MCP_AGAIN once with delay 0 (the same handle now sends
 * notifications/initialized), then MCP_OK when the session is ready.
 */
extern int	McpClientWantsSession(McpClient *c);
extern McpAsync *McpAsyncInitialize(McpClient *c);
extern McpAsync *McpAsyncCall(McpClient *c, const char *name, json_t *arguments, json_t *tool_def,
								json_t *input_responses, const char *request_state);
extern CURL *McpAsyncHandle(McpAsync *a);
extern int	McpAsyncDone(McpAsync *a, int curl_code, json_t **result);
extern long McpAsyncDelayMs(McpAsync *a);
/* notifications/tools/list_changed came in the stream */
extern int	McpAsyncListChanged(McpAsync *a);
/* 1 with a POST to send (headers and body malloc'd, the caller's), 0 when none is left */
extern int	McpAsyncNextReply(McpAsync *a, struct curl_slist **headers, char **body);
extern void McpAsyncRequestFree(McpAsync *a);

/*
 * Held elicitation (McpClientHoldElicitation): the next elicitation/create
 * request the server made in the stream (a new reference, {"id", "method",
 * "params"}), or NULL; its answer (an ElicitResult, the requested schema's
 * defaults applied to an accepted one) goes out through
 * McpAsyncNextReply.  The soft deadline (McpNowMs() clock) is when the
 * call times out outside a person's wait; McpAsyncExtend moves it.
 */
extern json_t *McpAsyncTakeElicitation(McpAsync *a);
extern void McpAsyncAnswerElicitation(McpAsync *a, json_t *request, json_t *answer);
extern long McpAsyncSoftDeadline(McpAsync *a);
extern void McpAsyncExtend(McpAsync *a, long ms);
extern long McpNowMs(void);

#endif							/* PG_AGENTS_MCP_H */
