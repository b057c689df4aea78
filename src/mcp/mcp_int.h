/*-------------------------------------------------------------------------
 *
 * mcp_int.h
 *		What the MCP client's files share, private to them: the client and
 *		transfer structs and the functions one file calls in another.
 *
 * The client is split by phase: mcp_transport.c (the small helpers,
 * libcurl, SSE, JSON-RPC over POST, answers to server requests),
 * mcp_protocol.c (URL policy, the client's lifecycle, protocol versions,
 * initialize/discover, requests, tools/list, tools/call, close) and
 * mcp_async.c (requests on the worker's curl multi handle).  Each calls
 * only the files before it.  Outside callers use mcp.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_MCP_INT_H
#define PG_AGENTS_MCP_INT_H

#include <stddef.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mcp.h"

#define MCP_MAX_BODY		(16 * 1024 * 1024)	/* biggest response kept */
#define MCP_MAX_RESUMES		5	/* GET reconnections of one request */
#define MCP_DEFAULT_RETRY	1000	/* ms before a resume without retry: */
#define MCP_SESSION_LOST	(-10)	/* McpRpcSend: the server forgot our session */

typedef struct StrBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} StrBuf;

struct McpClient
{
	char	   *url;
	json_t	   *headers;		/* extra headers (object), never printed */
	long		timeout_ms;
	CURL	   *curl;
	char	   *session_id;
	char		protocol_version[32];
	json_t	   *server_info;
	int			initialized;
	int			initializations;
	json_int_t	next_id;
	int			era;			/* 0 unknown, 1 initialize, 2 stateless */
	long		last_http_status;	/* of the last POST, 0 when none came */
	McpAbortCallback abort_cb;
	void	   *abort_arg;
	char		error[1024];
	char		curl_error[CURL_ERROR_SIZE];
	/* protocol generation */
	char	   *want_version;	/* NULL: auto (server/discover first) */
	int			stateless;		/* speaking 2026-07-28 */
	int			version_retried;	/* -32022 retry done */
	json_t	   *tools_cache;	/* name -> tool of the last tools/list */
	json_t	   *rejected;		/* [{name, reason}] of the last tools/list */
	long		tools_ttl_ms;	/* -1: none given */
	long		tools_listed_at;	/* now_ms() of the last tools/list */
	McpElicitCallback elicit_cb;
	void	   *elicit_arg;
	int			elicit_deferred;	/* answered later: stateless servers only */
	long		elicit_hold_ms; /* async, stateful: requests held this long for people */
	/* authorization */
	McpAuthCallback auth_cb;
	void	   *auth_arg;
	char	   *bearer;			/* access token, never printed */
	long		auth_status;	/* status of the last 401/403 */
	char	   *www_auth;		/* its WWW-Authenticate */
};

/* State of one request's transfer(s): the POST and any resuming GETs. */
typedef struct Xfer
{
	McpClient  *c;
	json_int_t	want_id;		/* id of our request; -1 for a notification */
	int			have_type;		/* content type looked at */
	int			is_sse;
	int			too_big;
	json_t	   *response;		/* the matched JSON-RPC response */
	StrBuf		body;			/* JSON body */
	/* SSE parser */
	StrBuf		line;
	StrBuf		data;
	char		event[64];
	int			skip_lf;		/* a CR ended the last line */
	char	   *last_event_id;
	long		retry_ms;
	/* captured response headers */
	char	   *session_hdr;
	char	   *www_auth_hdr;
	CURL	   *handle;			/* when not the client's own */
	json_t	   *outbox;			/* async: answers to server requests, sent by the caller */
	int			list_changed;	/* notifications/tools/list_changed seen */
	json_t	   *held;			/* async: elicitation/create requests held for people */
} Xfer;

/* mcp_transport.c: helpers */
extern void McpSbAppend(StrBuf *b, const char *s, size_t n);
extern void McpSbReset(StrBuf *b);
extern char *McpXstrdup(const char *s);
extern void McpSetError(McpClient *c, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern int McpContainsCi(const char *s, const char *word);

/* mcp_transport.c: libcurl, headers, SSE and JSON-RPC */
extern size_t McpHeaderCb(char *buf, size_t size, size_t nitems, void *arg);
extern size_t McpWriteCb(char *ptr, size_t size, size_t nmemb, void *arg);
extern struct curl_slist *McpBaseHeaders(McpClient *c, struct curl_slist *h, int with_version);
extern long McpSetupHandle(McpClient *c, CURL *h, long deadline);
extern struct curl_slist *McpRoutingHeaders(McpClient *c, json_t *msg, struct curl_slist *h);
extern const char *McpXHeaderProblem(json_t *tool);
extern void McpHandleMessage(Xfer *x, json_t *msg);
extern int McpCurlFailure(McpClient *c, CURLcode rc, const char *what);
extern const char *McpBodyRpcMessage(Xfer *x, json_t **hold);
extern void McpXferFree(Xfer *x);
extern int McpRpcSend(McpClient *c, json_t *msg, json_int_t id, const char *what,
						json_t **response, char **session_out);

/* mcp_protocol.c */
extern int McpSupportedVersion(const char *v);
extern int McpStatelessVersion(const char *v);
extern void McpRpcErrorText(McpClient *c, const char *what, json_t *err);
extern json_t *McpClientCapabilities(McpClient *c);
extern json_t *McpBuildRequest(McpClient *c, const char *method, json_t *params, json_int_t id);
extern void McpSessionForget(McpClient *c);

#endif							/* PG_AGENTS_MCP_INT_H */
