/*-------------------------------------------------------------------------
 *
 * mcp_async.c
 *		MCP client, asynchronous requests: initialize and tools/call driven
 *		by the worker's curl multi handle (see mcp.h).
 *
 * Free of PostgreSQL backend dependencies; calls the transport and the
 * protocol (mcp_transport.c, mcp_protocol.c, through mcp_int.h).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mcp_int.h"

/* ---------------------------------------------------------------------- */
/* asynchronous tools/call (the worker's curl multi handle)				  */
/* ---------------------------------------------------------------------- */

#define ASYNC_CALL	0				/* tools/call */
#define ASYNC_INIT	1				/* initialize, then notifications/initialized */
#define ASYNC_NOTE	2				/* notifications/initialized */

struct McpAsync
{
	McpClient  *c;
	int			kind;
	CURL	   *easy;
	Xfer		x;
	json_int_t	id;
	char	   *payload;
	struct curl_slist *hl;
	long		deadline;
	long		soft_deadline;	/* McpNowMs() bound without the people's wait */
	int			resumes;
	long		delay_ms;
	char		curl_error[CURL_ERROR_SIZE];
};

/* common options of the async handle, our own error buffer */
static void
async_setup(McpAsync *a)
{
	McpSetupHandle(a->c, a->easy, a->deadline);
	curl_easy_setopt(a->easy, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(a->easy, CURLOPT_ERRORBUFFER, a->curl_error);
	curl_easy_setopt(a->easy, CURLOPT_WRITEFUNCTION, McpWriteCb);
	curl_easy_setopt(a->easy, CURLOPT_WRITEDATA, &a->x);
	curl_easy_setopt(a->easy, CURLOPT_HEADERFUNCTION, McpHeaderCb);
	curl_easy_setopt(a->easy, CURLOPT_HEADERDATA, &a->x);
	a->curl_error[0] = '\0';
	a->x.have_type = 0;
	a->x.skip_lf = 0;
	McpSbReset(&a->x.line);
	McpSbReset(&a->x.data);
	a->x.event[0] = '\0';
}

/*
 * A new asynchronous request of kind on its own easy handle, its deadline
 * the client's timeout from now.  NULL, with the client error set, when
 * libcurl cannot make a handle; aborts when out of memory.
 */
static McpAsync *
async_new(McpClient *c, int kind)
{
	McpAsync   *a = calloc(1, sizeof(McpAsync));

	if (a == NULL)
		abort();
	a->c = c;
	a->kind = kind;
	a->easy = curl_easy_init();
	if (a->easy == NULL)
	{
		free(a);
		McpSetError(c, "could not initialize libcurl");
		return NULL;
	}
	a->deadline = McpNowMs() + c->timeout_ms;
	a->soft_deadline = a->deadline;
	a->delay_ms = -1;
	a->x.c = c;
	a->x.retry_ms = -1;
	a->x.handle = a->easy;
	a->x.outbox = json_array();
	return a;
}

/* the POST of msg on the handle (is_init: no MCP-Protocol-Version yet) */
static void
async_post(McpAsync *a, json_t *msg, int is_init)
{
	McpClient  *c = a->c;

	free(a->payload);
	a->payload = json_dumps(msg, JSON_COMPACT);
	if (a->payload == NULL)
		abort();
	async_setup(a);
	if (a->hl)
		curl_slist_free_all(a->hl);
	a->hl = curl_slist_append(NULL, "Content-Type: application/json");
	a->hl = curl_slist_append(a->hl, "Accept: application/json, text/event-stream");
	a->hl = McpBaseHeaders(c, a->hl, !is_init);
	if (c->stateless)
		a->hl = McpRoutingHeaders(c, msg, a->hl);
	curl_easy_setopt(a->easy, CURLOPT_HTTPHEADER, a->hl);
	curl_easy_setopt(a->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(a->easy, CURLOPT_POSTFIELDS, a->payload);
	curl_easy_setopt(a->easy, CURLOPT_POSTFIELDSIZE, (long) strlen(a->payload));
}

/*
 * Whether the client needs a session initialized and knows which version to
 * ask for (negotiated before, or configured as a stateful version), so that
 * McpAsyncInitialize can do it.
 */
int
McpClientWantsSession(McpClient *c)
{
	if (c->initialized || c->stateless)
		return 0;
	if (c->era == 1 && c->protocol_version[0])
		return 1;
	return c->want_version != NULL && McpSupportedVersion(c->want_version) &&
		!McpStatelessVersion(c->want_version);
}

/*
 * See mcp.h.  Prepares the POST of initialize on a fresh session (the old
 * one is forgotten); NULL when the client needs no session or its version
 * is not known (auto mode), or no handle could be made.
 */
McpAsync *
McpAsyncInitialize(McpClient *c)
{
	McpAsync   *a;
	json_t	   *req;
	const char *want = (c->era == 1 && c->protocol_version[0]) ? c->protocol_version : c->want_version;
	char		version[32];

	if (!McpClientWantsSession(c))
		return NULL;
	snprintf(version, sizeof(version), "%s", want);
	a = async_new(c, ASYNC_INIT);
	if (a == NULL)
		return NULL;
	McpSessionForget(c);			/* a fresh session */
	a->id = c->next_id++;
	a->x.want_id = a->id;
	req = json_pack("{s:s, s:I, s:s, s:{s:s, s:o, s:{s:s, s:s}}}",
					"jsonrpc", "2.0", "id", a->id, "method", "initialize",
					"params", "protocolVersion", version,
					"capabilities", McpClientCapabilities(c),
					"clientInfo", "name", MCP_CLIENT_NAME, "version", MCP_CLIENT_VERSION);
	async_post(a, req, 1);
	json_decref(req);
	return a;
}

/*
 * See mcp.h.  Prepares the POST of tools/call; with a stateless server,
 * tool_def is stored in the client's tool cache for the routing headers.
 * When elicitations are held for people, the transfer's deadline is
 * extended by the hold time while the soft deadline keeps the timeout.
 * NULL, with the client error set, when no handle could be made.
 */
McpAsync *
McpAsyncCall(McpClient *c, const char *name, json_t *arguments, json_t *tool_def,
			   json_t *input_responses, const char *request_state)
{
	McpAsync   *a = async_new(c, ASYNC_CALL);
	json_t	   *params;
	json_t	   *msg;

	if (a == NULL)
		return NULL;

	/* 2026-07-28: the tool's definition gives its Mcp-Param-* headers */
	if (c->stateless && json_is_object(tool_def))
	{
		if (c->tools_cache == NULL)
			c->tools_cache = mcp_json_object();
		json_object_set(c->tools_cache, name, tool_def);
	}
	params = json_pack("{s:s, s:o}", "name", name, "arguments",
					   (arguments && json_is_object(arguments)) ? json_incref(arguments) : mcp_json_object());
	if (input_responses)
		json_object_set(params, "inputResponses", input_responses);
	if (request_state)
		json_object_set_new(params, "requestState", json_string(request_state));
	/*
	 * A server may ask a person something in the stream: the transfer's own
	 * bound leaves room for the wait, the caller bounds the rest
	 * (McpAsyncSoftDeadline).
	 */
	a->soft_deadline = a->deadline;
	if (c->elicit_hold_ms > 0 && !c->stateless)
		a->deadline += c->elicit_hold_ms;
	a->id = c->next_id++;
	a->x.want_id = a->id;
	msg = McpBuildRequest(c, "tools/call", params, a->id);
	json_decref(params);
	async_post(a, msg, 0);
	json_decref(msg);
	return a;
}

/* The easy handle of the request, for the caller's multi handle. */
CURL *
McpAsyncHandle(McpAsync *a)
{
	return a->easy;
}

/*
 * After MCP_AGAIN, how long to wait before adding the handle again; -1
 * otherwise.
 */
long
McpAsyncDelayMs(McpAsync *a)
{
	return a->delay_ms;
}

/* Whether notifications/tools/list_changed came in the stream. */
int
McpAsyncListChanged(McpAsync *a)
{
	return a->x.list_changed;
}

/* GET + Last-Event-ID on the same handle: the stream closed before our response */
static void
async_resume(McpAsync *a)
{
	char		line[1024];

	a->resumes++;
	async_setup(a);
	curl_slist_free_all(a->hl);
	a->hl = curl_slist_append(NULL, "Accept: text/event-stream");
	a->hl = McpBaseHeaders(a->c, a->hl, 1);
	snprintf(line, sizeof(line), "Last-Event-ID: %s", a->x.last_event_id);
	a->hl = curl_slist_append(a->hl, line);
	curl_easy_setopt(a->easy, CURLOPT_HTTPHEADER, a->hl);
	curl_easy_setopt(a->easy, CURLOPT_HTTPGET, 1L);
}

/*
 * The initialize response arrived: checked as the synchronous client checks
 * it, the session taken, and the same handle turned into the POST of
 * notifications/initialized (MCP_AGAIN: to be sent at once).
 */
static int
async_initialized(McpAsync *a)
{
	McpClient  *c = a->c;
	json_t	   *resp = a->x.response;
	json_t	   *res = json_object_get(resp, "result");
	const char *version = json_string_value(json_object_get(res, "protocolVersion"));
	json_t	   *note;

	if (json_is_object(json_object_get(resp, "error")))
	{
		McpRpcErrorText(c, "initialize", json_object_get(resp, "error"));
		return MCP_ERROR;
	}
	if (!json_is_object(res) || version == NULL)
	{
		McpSetError(c, "initialize: the server's answer has no protocolVersion");
		return MCP_ERROR;
	}
	if (!McpSupportedVersion(version) || McpStatelessVersion(version))
	{
		McpSetError(c, "initialize: unsupported protocol version \"%.40s\" (supported: 2026-07-28 without initialize, 2025-11-25, 2025-06-18, 2025-03-26)",
				  version);
		return MCP_ERROR;
	}
	snprintf(c->protocol_version, sizeof(c->protocol_version), "%s", version);
	if (c->server_info)
		json_decref(c->server_info);
	c->server_info = json_incref(json_object_get(res, "serverInfo"));
	free(c->session_id);
	c->session_id = a->x.session_hdr;
	a->x.session_hdr = NULL;
	c->initialized = 1;
	c->era = 1;

	/* the same handle sends notifications/initialized */
	a->kind = ASYNC_NOTE;
	json_decref(a->x.response);
	a->x.response = NULL;
	a->x.is_sse = 0;
	McpSbReset(&a->x.body);
	a->resumes = 0;
	a->x.want_id = -1;
	note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
	async_post(a, note, 0);
	json_decref(note);
	a->delay_ms = 0;
	return MCP_AGAIN;
}

/*
 * See mcp.h: the outcome of the finished transfer, given its CURLcode.
 * Handles the notifications/initialized step of an asynchronous initialize,
 * a lost session (404, or 400 whose message mentions the session) as
 * MCP_SESSION_GONE, 401/403 as MCP_UNAUTHORIZED, and a stream closed before
 * the response as MCP_AGAIN (resumed, up to MCP_MAX_RESUMES times within
 * the deadline).  On MCP_OK, MCP_RPC_ERROR and MCP_INPUT_REQUIRED *result is
 * a new reference, else NULL; the client error says why on failure.
 */
int
McpAsyncDone(McpAsync *a, int curl_code, json_t **result)
{
	McpClient  *c = a->c;
	Xfer	   *x = &a->x;
	CURLcode	rc = (CURLcode) curl_code;
	long		status = 0;
	const char *what = a->kind == ASYNC_INIT ? "initialize" :
		a->kind == ASYNC_NOTE ? "notifications/initialized" : "tools/call";
	json_t	   *err;
	const char *rt;

	*result = NULL;
	a->delay_ms = -1;
	curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &status);
	if (x->too_big)
	{
		McpSetError(c, "%s: the response is larger than %d bytes", what, MCP_MAX_BODY);
		return MCP_ERROR;
	}
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->response))
	{
		memcpy(c->curl_error, a->curl_error, sizeof(c->curl_error));
		return McpCurlFailure(c, rc, what);
	}
	if (a->kind == ASYNC_NOTE)
	{
		/* 202 Accepted (any 2xx and body are tolerated) */
		if (status >= 200 && status < 300)
			return MCP_OK;
		c->initialized = 0;
		McpSetError(c, "%s: the server answered HTTP %ld", what, status);
		return status == 401 || status == 403 ? MCP_UNAUTHORIZED : MCP_ERROR;
	}
	if (a->resumes == 0)
	{
		if (status == 404 && c->session_id && a->kind == ASYNC_CALL)
			return MCP_SESSION_GONE;
		if (status < 200 || status >= 300)
		{
			json_t	   *hold;
			const char *m = McpBodyRpcMessage(x, &hold);

			if (status == 400 && c->session_id && a->kind == ASYNC_CALL && m && McpContainsCi(m, "session"))
			{
				if (hold)
					json_decref(hold);
				return MCP_SESSION_GONE;
			}
			if (status == 401 || status == 403)
				McpSetError(c, "%s: the server refused the credentials (HTTP %ld)%s%s", what, status,
						  m ? ": " : "", m ? m : "");
			else
				McpSetError(c, "%s: the server answered HTTP %ld%s%s", what, status,
						  m ? ": " : "", m ? m : "");
			if (hold)
				json_decref(hold);
			return status == 401 || status == 403 ? MCP_UNAUTHORIZED : MCP_ERROR;
		}
		if (!x->is_sse)
		{
			json_error_t jerr;
			json_t	   *j;

			if (x->body.len == 0)
			{
				McpSetError(c, "%s: the server sent an empty answer (HTTP %ld)", what, status);
				return MCP_ERROR;
			}
			j = json_loadb(x->body.data, x->body.len, 0, &jerr);
			if (j == NULL)
			{
				McpSetError(c, "%s: the server did not answer JSON-RPC (invalid JSON at line %d: %s)",
						  what, jerr.line, jerr.text);
				return MCP_ERROR;
			}
			McpHandleMessage(x, j);
			json_decref(j);
		}
	}
	else if (x->response == NULL && (status < 200 || status >= 300))
	{
		McpSetError(c, "%s: the stream closed before the response and resuming it failed (HTTP %ld)",
				  what, status);
		return MCP_ERROR;
	}
	if (x->response == NULL && x->is_sse && x->last_event_id && a->resumes < MCP_MAX_RESUMES)
	{
		long		wait = x->retry_ms >= 0 ? x->retry_ms : MCP_DEFAULT_RETRY;

		if (McpNowMs() + wait >= a->deadline)
		{
			McpSetError(c, "%s timed out after %ld ms", what, c->timeout_ms);
			return MCP_ERROR;
		}
		async_resume(a);
		a->delay_ms = wait;
		return MCP_AGAIN;
	}
	if (x->response == NULL)
	{
		McpSetError(c, "%s: the server sent no JSON-RPC response with id %lld", what, (long long) a->id);
		return MCP_ERROR;
	}
	err = json_object_get(x->response, "error");
	if (a->kind == ASYNC_INIT)
		return async_initialized(a);
	if (json_is_object(err))
	{
		McpRpcErrorText(c, what, err);
		*result = json_incref(err);
		return MCP_RPC_ERROR;
	}
	if (!json_is_object(json_object_get(x->response, "result")))
	{
		McpSetError(c, "%s: the server's response has no result object", what);
		return MCP_ERROR;
	}
	*result = json_incref(json_object_get(x->response, "result"));
	rt = json_string_value(json_object_get(*result, "resultType"));
	if (rt && strcmp(rt, "input_required") == 0)
	{
		McpSetError(c, "tools/call: the server asks for input during the call");
		return MCP_INPUT_REQUIRED;
	}
	return MCP_OK;
}

/*
 * See mcp.h.  Takes the oldest queued answer to a server request, as a
 * JSON body and the headers to POST it with; 0 when none is queued (or it
 * could not be encoded, then it is dropped).
 */
int
McpAsyncNextReply(McpAsync *a, struct curl_slist **headers, char **body)
{
	json_t	   *m;

	if (a->x.outbox == NULL || json_array_size(a->x.outbox) == 0)
		return 0;
	m = json_array_get(a->x.outbox, 0);
	*body = json_dumps(m, JSON_COMPACT);
	json_array_remove(a->x.outbox, 0);
	if (*body == NULL)
		return 0;
	*headers = curl_slist_append(NULL, "Content-Type: application/json");
	*headers = curl_slist_append(*headers, "Accept: application/json, text/event-stream");
	*headers = McpBaseHeaders(a->c, *headers, 1);
	return 1;
}

/*
 * See mcp.h.  Takes the oldest held elicitation/create request off the
 * queue; NULL when none is held.
 */
json_t *
McpAsyncTakeElicitation(McpAsync *a)
{
	json_t	   *m;

	if (a->x.held == NULL || json_array_size(a->x.held) == 0)
		return NULL;
	m = json_incref(json_array_get(a->x.held, 0));
	json_array_remove(a->x.held, 0);
	return m;
}

/*
 * Queues the answer to a held elicitation request for McpAsyncNextReply:
 * a copy of answer (or "cancel" when it is not an object) with the
 * requested schema's defaults applied.
 */
void
McpAsyncAnswerElicitation(McpAsync *a, json_t *request, json_t *answer)
{
	json_t	   *params = json_object_get(request, "params");
	json_t	   *res = json_deep_copy(answer);

	if (!json_is_object(res))
	{
		if (res)
			json_decref(res);
		res = json_pack("{s:s}", "action", "cancel");
	}
	McpElicitationApplyDefaults(params, res);
	if (a->x.outbox == NULL)
		a->x.outbox = json_array();
	json_array_append_new(a->x.outbox, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0",
												 "id", json_object_get(request, "id"), "result", res));
}

/* The call's deadline outside a person's wait (McpNowMs clock). */
long
McpAsyncSoftDeadline(McpAsync *a)
{
	return a->soft_deadline;
}

/* Moves the soft deadline ms later (the time a person took to answer). */
void
McpAsyncExtend(McpAsync *a, long ms)
{
	a->soft_deadline += ms;
}

/*
 * Frees the request, its handle and transfer state; NULL is accepted.  The
 * caller removes the handle from its multi handle first.
 */
void
McpAsyncRequestFree(McpAsync *a)
{
	if (a == NULL)
		return;
	if (a->easy)
		curl_easy_cleanup(a->easy);
	if (a->hl)
		curl_slist_free_all(a->hl);
	free(a->payload);
	McpXferFree(&a->x);
	free(a);
}
