/*-------------------------------------------------------------------------
 *
 * mcp_protocol.c
 *		MCP client, protocol: the URL policy, the client's lifecycle and
 *		settings, protocol versions, initialize and server/discover,
 *		requests with authorization, tools/list, tools/call, close.
 *
 * Free of PostgreSQL backend dependencies (see mcp.h); calls the transport
 * (mcp_transport.c, through mcp_int.h).
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mcp_int.h"

#define MCP_MAX_PAGES		1000	/* tools/list pages followed */
#define MCP_CLOSE_TIMEOUT	2000	/* ms given to the closing DELETE */

static int	curl_ready = 0;

/* ---------------------------------------------------------------------- */
/* URL policy															  */
/* ---------------------------------------------------------------------- */

/*
 * Whether host (as libcurl gives it) is loopback: localhost, ::1, or
 * 127.0.0.0/8 written as a dotted quad of four decimal parts (shortened
 * forms such as 127.1 are refused).
 */
static int
is_loopback_host(const char *host)
{
	size_t		n = strlen(host);

	if (strcasecmp(host, "localhost") == 0 || strcasecmp(host, "localhost.") == 0)
		return 1;
	if (strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0)
		return 1;
	/* 127.0.0.0/8 written as a dotted quad */
	if (n >= 7 && strncmp(host, "127.", 4) == 0)
	{
		int			parts = 0;
		const char *p = host;

		while (*p)
		{
			int			digits = 0;
			long		v = 0;

			while (isdigit((unsigned char) *p))
			{
				v = v * 10 + (*p - '0');
				p++;
				if (++digits > 3)
					return 0;
			}
			if (digits == 0 || v > 255)
				return 0;
			parts++;
			if (*p == '.')
				p++;
			else if (*p != '\0')
				return 0;
		}
		return parts == 4;
	}
	return 0;
}

/*
 * See mcp.h.  Parses url with libcurl's URL API (initializing libcurl on
 * first use); the answer is a static sentence, or NULL when url is fine.
 */
const char *
McpUrlProblem(const char *url)
{
	CURLU	   *u;
	char	   *scheme = NULL;
	char	   *host = NULL;
	const char *problem = NULL;

	if (url == NULL || *url == '\0')
		return "The URL is empty.";
	if (!curl_ready)
	{
		curl_global_init(CURL_GLOBAL_DEFAULT);
		curl_ready = 1;
	}
	u = curl_url();
	if (u == NULL)
		return "The URL could not be parsed.";
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
		curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
		curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		problem = "The URL could not be parsed; write it as https://host/path.";
	else if (strcasecmp(scheme, "https") == 0)
		problem = NULL;
	else if (strcasecmp(scheme, "http") == 0)
	{
		if (!is_loopback_host(host))
			problem = "Plain http:// is accepted only for loopback hosts (127.0.0.0/8, ::1, localhost); use https://.";
	}
	else
		problem = "Only https:// URLs (and http:// to a loopback host) are accepted.";
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return problem;
}

/* ---------------------------------------------------------------------- */
/* client lifecycle														  */
/* ---------------------------------------------------------------------- */

/*
 * See mcp.h.  Allocates the client (aborts when out of memory), copies
 * headers, and defaults the timeout to 60 s when timeout_ms <= 0.  No
 * network traffic until the first request.
 */
McpClient *
McpClientNew(const char *url, json_t *headers, long timeout_ms)
{
	McpClient  *c;

	if (!curl_ready)
	{
		curl_global_init(CURL_GLOBAL_DEFAULT);
		curl_ready = 1;
	}
	c = calloc(1, sizeof(McpClient));
	if (c == NULL)
		abort();
	c->url = McpXstrdup(url);
	c->headers = (headers && json_is_object(headers)) ? json_deep_copy(headers) : mcp_json_object();
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 60000;
	c->next_id = 1;
	c->tools_ttl_ms = -1;
	c->curl = curl_easy_init();
	return c;
}

/*
 * Sets the callback polled during transfers; non-zero from it aborts the
 * transfer under way (MCP_ABORTED).
 */
void
McpClientSetAbort(McpClient *c, McpAbortCallback cb, void *arg)
{
	c->abort_cb = cb;
	c->abort_arg = arg;
}

/* Sets the bound of later calls; a value <= 0 leaves it unchanged. */
void
McpClientSetTimeout(McpClient *c, long timeout_ms)
{
	if (timeout_ms > 0)
		c->timeout_ms = timeout_ms;
}

/* The last error, in the client's own buffer (see mcp.h). */
const char *
McpClientError(McpClient *c)
{
	return c->error;
}

/* The negotiated protocol version, or NULL before initialization. */
const char *
McpClientProtocolVersion(McpClient *c)
{
	return c->initialized ? c->protocol_version : NULL;
}

/* The Mcp-Session-Id the server gave, or NULL (borrowed). */
const char *
McpClientSessionId(McpClient *c)
{
	return c->session_id;
}

/* The server's serverInfo (borrowed), or NULL when none was sent. */
json_t *
McpClientServerInfo(McpClient *c)
{
	return c->server_info;
}

/* How many times the client (re-)initialized a session. */
int
McpClientInitializations(McpClient *c)
{
	return c->initializations;
}

/*
 * Sets the client error from outside (e.g. an auth callback), masked like
 * every error (see McpSetError); truncated to 1 kB.
 */
void
McpClientSetError(McpClient *c, const char *fmt,...)
{
	va_list		ap;
	char		buf[1024];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	McpSetError(c, "%s", buf);
}

/* The server URL (borrowed). */
const char *
McpClientUrl(McpClient *c)
{
	return c->url;
}

/* The bound of every call, in milliseconds. */
long
McpClientTimeout(McpClient *c)
{
	return c->timeout_ms;
}

/*
 * See mcp.h.  NULL, "" and "auto" mean discover; the version is only
 * checked against the supported list when the first request is made.
 */
void
McpClientSetProtocol(McpClient *c, const char *version)
{
	free(c->want_version);
	c->want_version = (version && *version && strcmp(version, "auto") != 0) ? McpXstrdup(version) : NULL;
}

/*
 * Sets the elicitation callback (see mcp.h); a non-NULL cb also declares the
 * elicitation capability.
 */
void
McpClientSetElicitation(McpClient *c, McpElicitCallback cb, void *arg)
{
	c->elicit_cb = cb;
	c->elicit_arg = arg;
}

/*
 * Holds in-stream elicitations for people for up to hold_ms (see mcp.h);
 * negative values count as 0 (not declared).
 */
void
McpClientHoldElicitation(McpClient *c, long hold_ms)
{
	c->elicit_hold_ms = hold_ms > 0 ? hold_ms : 0;
}

/* Declares deferred elicitation to 2026-07-28 servers (see mcp.h). */
void
McpClientDeferElicitation(McpClient *c)
{
	c->elicit_deferred = 1;
}

/* Sets the callback called on 401/403 answers (see mcp.h). */
void
McpClientSetAuth(McpClient *c, McpAuthCallback cb, void *arg)
{
	c->auth_cb = cb;
	c->auth_arg = arg;
}

/*
 * See mcp.h.  The previous token is wiped before being freed; NULL or ""
 * removes the Authorization header.
 */
void
McpClientSetBearer(McpClient *c, const char *token)
{
	if (c->bearer)
	{
		memset(c->bearer, 0, strlen(c->bearer));
		free(c->bearer);
	}
	c->bearer = (token && *token) ? McpXstrdup(token) : NULL;
}

/* ttlMs of the last tools/list, or -1 (see mcp.h). */
long
McpClientToolsTtlMs(McpClient *c)
{
	return c->tools_ttl_ms;
}

/* Tools left out by the last tools/list (borrowed, or NULL before one). */
json_t *
McpClientRejectedTools(McpClient *c)
{
	return c->rejected;
}

/* ---------------------------------------------------------------------- */
/* the protocol															  */
/* ---------------------------------------------------------------------- */

/* Whether v is a protocol version this client speaks. */
int
McpSupportedVersion(const char *v)
{
	return v && (strcmp(v, MCP_STATELESS_VERSION) == 0 ||
				 strcmp(v, "2025-11-25") == 0 ||
				 strcmp(v, "2025-06-18") == 0 ||
				 strcmp(v, "2025-03-26") == 0);
}

/* Whether v is the stateless (2026-07-28) protocol version. */
int
McpStatelessVersion(const char *v)
{
	return v && strcmp(v, MCP_STATELESS_VERSION) == 0;
}

/* Our preferred version among a server's list (array of strings), or NULL. */
static const char *
best_version(json_t *list)
{
	static const char *const ours[] = {MCP_STATELESS_VERSION, "2025-11-25", "2025-06-18", "2025-03-26", NULL};
	int			i;
	size_t		j;
	json_t	   *v;

	for (i = 0; ours[i]; i++)
		json_array_foreach(list, j, v)
			if (json_is_string(v) && strcmp(json_string_value(v), ours[i]) == 0)
			return ours[i];
	return NULL;
}

/* A JSON-RPC error response to the client error text. */
void
McpRpcErrorText(McpClient *c, const char *what, json_t *err)
{
	json_t	   *code = json_object_get(err, "code");
	const char *m = json_string_value(json_object_get(err, "message"));

	McpSetError(c, "%s: the server answered JSON-RPC error %lld: %s", what,
			  (long long) (json_is_integer(code) ? json_integer_value(code) : 0),
			  m ? m : "(no message)");
}

/* Capabilities we declare: elicitation when someone can answer; never sampling or roots. */
json_t *
McpClientCapabilities(McpClient *c)
{
	json_t	   *caps = mcp_json_object();

	if (c->elicit_cb || (c->elicit_deferred && c->stateless) ||
		(c->elicit_hold_ms > 0 && !c->stateless))
		json_object_set_new(caps, "elicitation", mcp_json_object());
	return caps;
}

/*
 * McpRpcSend, and on 401 (or 403 insufficient_scope) the authorization
 * callback, then again, at most MCP_MAX_AUTH_RETRIES times.
 */
static int
send_authorized(McpClient *c, json_t *msg, json_int_t id, const char *what,
				json_t **response, char **session_out)
{
	int			tries = 0;

	for (;;)
	{
		int			rc = McpRpcSend(c, msg, id, what, response, session_out);
		char	   *wa;
		int			r;

		if (rc != MCP_UNAUTHORIZED)
			return rc;
		if (c->auth_cb == NULL)
			return rc;
		if (tries++ >= MCP_MAX_AUTH_RETRIES)
		{
			McpSetError(c, "%s: the server still refuses the credentials after %d authorizations",
					  what, MCP_MAX_AUTH_RETRIES);
			return rc;
		}
		wa = c->www_auth ? McpXstrdup(c->www_auth) : NULL;
		r = c->auth_cb(c->auth_arg, c, c->auth_status, wa);
		free(wa);
		if (r != 0)
			return MCP_UNAUTHORIZED;
	}
}

/* A request message; in stateless mode params carry _meta. */
json_t *
McpBuildRequest(McpClient *c, const char *method, json_t *params, json_int_t id)
{
	json_t	   *p = json_is_object(params) ? json_copy(params) : mcp_json_object();

	if (c->stateless)
	{
		json_t	   *meta = json_object_get(p, "_meta");

		meta = json_is_object(meta) ? json_copy(meta) : mcp_json_object();
		json_object_set_new(meta, "io.modelcontextprotocol/protocolVersion", json_string(c->protocol_version));
		json_object_set_new(meta, "io.modelcontextprotocol/clientInfo",
							json_pack("{s:s, s:s}", "name", MCP_CLIENT_NAME, "version", MCP_CLIENT_VERSION));
		json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities", McpClientCapabilities(c));
		json_object_set_new(p, "_meta", meta);
	}
	return json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params", p);
}

/* forgets the client's session before a new initialize (counted) */
void
McpSessionForget(McpClient *c)
{
	free(c->session_id);
	c->session_id = NULL;
	c->initialized = 0;
	c->stateless = 0;
	if (c->server_info)
	{
		json_decref(c->server_info);
		c->server_info = NULL;
	}
	c->initializations++;
}

/*
 * initialize asking for version want, then notifications/initialized, on a
 * fresh session (the old one is forgotten).  The answered version must be a
 * supported stateful one; the session id and serverInfo are kept.  MCP_OK,
 * or an error code with the client error set (a JSON-RPC error answer is
 * MCP_ERROR here); a failed notification leaves the client uninitialized.
 */
static int
initialize_version(McpClient *c, const char *want)
{
	json_t	   *req;
	json_t	   *resp = NULL;
	json_t	   *result;
	json_t	   *note;
	char	   *session = NULL;
	const char *version;
	int			rc;
	json_int_t	id = c->next_id++;

	McpSessionForget(c);			/* a fresh session */

	req = json_pack("{s:s, s:I, s:s, s:{s:s, s:o, s:{s:s, s:s}}}",
					"jsonrpc", "2.0", "id", id, "method", "initialize",
					"params", "protocolVersion", want,
					"capabilities", McpClientCapabilities(c),
					"clientInfo", "name", MCP_CLIENT_NAME, "version", MCP_CLIENT_VERSION);
	rc = send_authorized(c, req, id, "initialize", &resp, &session);
	json_decref(req);
	if (rc == MCP_SESSION_LOST)
		rc = MCP_ERROR;
	if (rc != MCP_OK)
	{
		free(session);
		return rc;
	}
	if (json_is_object(json_object_get(resp, "error")))
	{
		McpRpcErrorText(c, "initialize", json_object_get(resp, "error"));
		json_decref(resp);
		free(session);
		return MCP_ERROR;
	}
	result = json_object_get(resp, "result");
	version = json_string_value(json_object_get(result, "protocolVersion"));
	if (!json_is_object(result) || version == NULL)
	{
		McpSetError(c, "initialize: the server's answer has no protocolVersion");
		json_decref(resp);
		free(session);
		return MCP_ERROR;
	}
	if (!McpSupportedVersion(version) || McpStatelessVersion(version))
	{
		McpSetError(c, "initialize: unsupported protocol version \"%.40s\" (supported: 2026-07-28 without initialize, 2025-11-25, 2025-06-18, 2025-03-26)",
				  version);
		json_decref(resp);
		free(session);
		return MCP_ERROR;
	}
	snprintf(c->protocol_version, sizeof(c->protocol_version), "%s", version);
	c->server_info = json_incref(json_object_get(result, "serverInfo"));
	json_decref(resp);
	c->session_id = session;
	c->initialized = 1;
	c->era = 1;

	note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
	rc = send_authorized(c, note, -1, "notifications/initialized", NULL, NULL);
	json_decref(note);
	if (rc == MCP_SESSION_LOST)
	{
		/* an internal code: never returned by the public calls */
		McpSetError(c, "notifications/initialized: the server no longer knows the session it has just created");
		rc = MCP_ERROR;
	}
	if (rc != MCP_OK)
	{
		c->initialized = 0;
		return rc;
	}
	return MCP_OK;
}

/*
 * See mcp.h.  Asks for the configured version, or, in auto mode or when
 * the stateless version was configured, the version negotiated before (else
 * the newest stateful one).
 */
int
McpInitialize(McpClient *c)
{
	const char *v = c->want_version;

	if (v == NULL || McpStatelessVersion(v))
		v = (c->era == 1 && c->protocol_version[0]) ? c->protocol_version : MCP_PROTOCOL_VERSION;
	return initialize_version(c, v);
}

/*
 * Marks the client as speaking the stateless protocol version: ready at
 * once, with no initialize and no session.
 */
static void
go_stateless(McpClient *c, const char *version)
{
	c->stateless = 1;
	c->initialized = 1;
	c->era = 2;
	if (version != c->protocol_version)
		snprintf(c->protocol_version, sizeof(c->protocol_version), "%s", version);
}

/*
 * Auto mode: server/discover as 2026-07-28.  A server that lists
 * 2026-07-28 is spoken to statelessly; one that answers anything else over
 * HTTP (method not found, 400 for a missing session, another version) gets
 * initialize.  A transport failure is an error.
 */
static int
discover(McpClient *c)
{
	json_int_t	id = c->next_id++;
	json_t	   *req;
	json_t	   *resp = NULL;
	json_t	   *result;
	json_t	   *err;
	const char *v = NULL;
	int			rc;

	go_stateless(c, MCP_STATELESS_VERSION);
	c->initialized = 0;
	c->last_http_status = 0;
	req = McpBuildRequest(c, "server/discover", NULL, id);
	rc = send_authorized(c, req, id, "server/discover", &resp, NULL);
	json_decref(req);
	c->stateless = 0;
	c->era = 0;
	if (rc == MCP_ABORTED || rc == MCP_UNAUTHORIZED)
		return rc;
	if (rc != MCP_OK)
	{
		if (c->last_http_status == 0)
			return rc;			/* unreachable: no fallback would help */
		return initialize_version(c, MCP_PROTOCOL_VERSION);
	}
	result = json_object_get(resp, "result");
	err = json_object_get(resp, "error");
	if (json_is_object(result))
		v = best_version(json_object_get(result, "supportedVersions"));
	else if (json_is_integer(json_object_get(err, "code")) &&
			 json_integer_value(json_object_get(err, "code")) == -32022)
		v = best_version(json_object_get(json_object_get(err, "data"), "supported"));
	if (v && McpStatelessVersion(v))
	{
		go_stateless(c, v);
		if (c->server_info)
			json_decref(c->server_info);
		c->server_info = json_incref(json_object_get(result, "serverInfo"));
		json_decref(resp);
		return MCP_OK;
	}
	json_decref(resp);
	return initialize_version(c, v ? v : MCP_PROTOCOL_VERSION);
}

/*
 * Makes the client ready for a request: nothing when it is; otherwise the
 * protocol generation known from before, the configured version, or
 * discovery in auto mode.  MCP_OK, or an error code with the client error
 * set (also for an unsupported configured version).
 */
static int
ensure_ready(McpClient *c)
{
	const char *v = c->want_version;

	if (c->initialized)
		return MCP_OK;
	if (c->era == 2)
	{
		go_stateless(c, c->protocol_version);
		return MCP_OK;
	}
	if (c->era == 1)
		return initialize_version(c, c->protocol_version);
	if (v && !McpSupportedVersion(v))
	{
		McpSetError(c, "unsupported protocol version \"%.40s\" (supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, auto)", v);
		return MCP_ERROR;
	}
	if (v && McpStatelessVersion(v))
	{
		go_stateless(c, v);
		return MCP_OK;
	}
	if (v)
		return initialize_version(c, v);
	return discover(c);
}

/*
 * One request: initialize (or discover) first if needed; on a lost session,
 * initialize again and retry once; on -32022 retry once with a version the
 * server supports.  On MCP_OK *result is the "result" member; on
 * MCP_RPC_ERROR it is the "error" member.
 */
static int
request(McpClient *c, const char *method, json_t *params, json_t **result)
{
	int			attempt;
	int			lost = 0;

	*result = NULL;
	for (attempt = 0; attempt < 3; attempt++)
	{
		json_t	   *req;
		json_t	   *resp = NULL;
		json_t	   *err;
		json_int_t	id;
		int			rc;

		rc = ensure_ready(c);
		if (rc != MCP_OK)
			return rc;
		id = c->next_id++;
		req = McpBuildRequest(c, method, params, id);
		rc = send_authorized(c, req, id, method, &resp, NULL);
		json_decref(req);
		if (rc == MCP_SESSION_LOST)
		{
			/* the server forgot us (restart, expiry): a new session, once */
			c->initialized = 0;
			free(c->session_id);
			c->session_id = NULL;
			if (!lost++)
				continue;
			McpSetError(c, "%s: the server lost the session again right after a new initialization", method);
			return MCP_ERROR;
		}
		if (rc != MCP_OK)
			return rc;
		err = json_object_get(resp, "error");
		if (json_is_object(err) && json_is_integer(json_object_get(err, "code")) &&
			json_integer_value(json_object_get(err, "code")) == -32022 && !c->version_retried)
		{
			const char *v = best_version(json_object_get(json_object_get(err, "data"), "supported"));

			c->version_retried = 1;
			if (v)
			{
				json_decref(resp);
				if (McpStatelessVersion(v))
					go_stateless(c, v);
				else
				{
					c->era = 1;
					c->initialized = 0;
					c->stateless = 0;
					snprintf(c->protocol_version, sizeof(c->protocol_version), "%s", v);
				}
				continue;
			}
		}
		if (json_is_object(err))
		{
			McpRpcErrorText(c, method, err);
			*result = json_incref(err);
			json_decref(resp);
			return MCP_RPC_ERROR;
		}
		if (!json_is_object(json_object_get(resp, "result")))
		{
			McpSetError(c, "%s: the server's response has no result object", method);
			json_decref(resp);
			return MCP_ERROR;
		}
		*result = json_incref(json_object_get(resp, "result"));
		json_decref(resp);
		return MCP_OK;
	}
	McpSetError(c, "%s: no protocol version in common with the server", method);
	return MCP_ERROR;
}

/* Any JSON-RPC request under the transport rules (see mcp.h and request). */
int
McpRequest(McpClient *c, const char *method, json_t *params, json_t **result)
{
	return request(c, method, params, result);
}

/*
 * See mcp.h.  Follows nextCursor for at most MCP_MAX_PAGES pages (the same
 * cursor twice is an error); a JSON-RPC error answer is MCP_ERROR here.  On
 * MCP_OK the kept tool cache, rejected list, ttl and listing time are
 * replaced; on failure they are left as they were and *tools is NULL.
 */
int
McpListTools(McpClient *c, json_t **tools)
{
	json_t	   *all = json_array();
	json_t	   *cache = mcp_json_object();
	json_t	   *rejected = json_array();
	char	   *cursor = NULL;
	int			pages = 0;
	long		ttl = -1;

	*tools = NULL;
	for (;;)
	{
		json_t	   *params = cursor ? json_pack("{s:s}", "cursor", cursor) : mcp_json_object();
		json_t	   *result = NULL;
		json_t	   *page;
		json_t	   *next;
		json_t	   *jttl;
		int			rc;
		size_t		i;
		json_t	   *t;

		rc = request(c, "tools/list", params, &result);
		json_decref(params);
		if (rc != MCP_OK)
		{
			if (result)
				json_decref(result);
			json_decref(all);
			json_decref(cache);
			json_decref(rejected);
			free(cursor);
			return rc == MCP_RPC_ERROR ? MCP_ERROR : rc;
		}
		page = json_object_get(result, "tools");
		if (!json_is_array(page))
		{
			McpSetError(c, "tools/list: the server's result has no tools array");
			json_decref(result);
			json_decref(all);
			json_decref(cache);
			json_decref(rejected);
			free(cursor);
			return MCP_ERROR;
		}
		jttl = json_object_get(result, "ttlMs");
		if (json_is_integer(jttl) && json_integer_value(jttl) >= 0 &&
			(ttl < 0 || json_integer_value(jttl) < ttl))
			ttl = (long) (json_integer_value(jttl) > 86400000 ? 86400000 : json_integer_value(jttl));
		json_array_foreach(page, i, t)
		{
			const char *name;
			const char *problem;

			if (!json_is_object(t) || !json_is_string(json_object_get(t, "name")))
				continue;
			name = json_string_value(json_object_get(t, "name"));
			problem = McpXHeaderProblem(t);
			if (problem)
			{
				json_array_append_new(rejected, json_pack("{s:s, s:s}", "name", name, "reason", problem));
				continue;
			}
			json_array_append(all, t);
			json_object_set(cache, name, t);
		}
		next = json_object_get(result, "nextCursor");
		if (!json_is_string(next) || json_string_length(next) == 0)
		{
			json_decref(result);
			break;
		}
		if (cursor && strcmp(cursor, json_string_value(next)) == 0)
		{
			McpSetError(c, "tools/list: the server returned the same cursor twice");
			json_decref(result);
			json_decref(all);
			json_decref(cache);
			json_decref(rejected);
			free(cursor);
			return MCP_ERROR;
		}
		free(cursor);
		cursor = McpXstrdup(json_string_value(next));
		json_decref(result);
		if (++pages >= MCP_MAX_PAGES)
		{
			McpSetError(c, "tools/list: more than %d pages", MCP_MAX_PAGES);
			json_decref(all);
			json_decref(cache);
			json_decref(rejected);
			free(cursor);
			return MCP_ERROR;
		}
	}
	free(cursor);
	if (c->tools_cache)
		json_decref(c->tools_cache);
	c->tools_cache = cache;
	if (c->rejected)
		json_decref(c->rejected);
	c->rejected = rejected;
	c->tools_ttl_ms = ttl;
	c->tools_listed_at = McpNowMs();
	*tools = all;
	return MCP_OK;
}

/* The reason of a rejected tool, or NULL. */
static const char *
rejected_reason(McpClient *c, const char *name)
{
	size_t		i;
	json_t	   *r;

	json_array_foreach(c->rejected, i, r)
		if (strcmp(json_string_value(json_object_get(r, "name")), name) == 0)
		return json_string_value(json_object_get(r, "reason"));
	return NULL;
}

#define MCP_MAX_INPUT_ROUNDS 8

/*
 * See mcp.h.  For a stateless server, first lists the tools when the tool is
 * unknown or the list is stale (its Mcp-Param-* headers); a tool rejected by
 * the list is refused with MCP_ERROR.  input_required results are answered
 * through the elicitation callback for up to MCP_MAX_INPUT_ROUNDS rounds;
 * when it cannot answer (or the server asks for something else than
 * elicitation) the result is returned as MCP_INPUT_REQUIRED.
 */
int
McpCallToolWithInput(McpClient *c, const char *name, json_t *arguments,
						 json_t *input_responses, const char *request_state, json_t **result)
{
	json_t	   *responses = input_responses ? json_incref(input_responses) : NULL;
	char	   *state = request_state ? McpXstrdup(request_state) : NULL;
	const char *why;
	int			round;
	int			rc = MCP_ERROR;

	*result = NULL;
	/* 2026-07-28: the tool's definition gives its Mcp-Param-* headers */
	if (ensure_ready(c) == MCP_OK && c->stateless &&
		(c->tools_cache == NULL || json_object_get(c->tools_cache, name) == NULL ||
		 (c->tools_ttl_ms > 0 && McpNowMs() - c->tools_listed_at > c->tools_ttl_ms)) &&
		(c->rejected == NULL || rejected_reason(c, name) == NULL))
	{
		json_t	   *tools = NULL;

		if (McpListTools(c, &tools) == MCP_OK)
			json_decref(tools);
	}
	if (c->rejected && (why = rejected_reason(c, name)) != NULL)
	{
		McpSetError(c, "tool \"%.100s\" is refused: its definition is invalid (%s)", name, why);
		if (responses)
			json_decref(responses);
		free(state);
		return MCP_ERROR;
	}
	for (round = 0; round < MCP_MAX_INPUT_ROUNDS; round++)
	{
		json_t	   *params = json_pack("{s:s, s:o}", "name", name, "arguments",
									   (arguments && json_is_object(arguments)) ? json_incref(arguments) : mcp_json_object());
		json_t	   *requests;
		json_t	   *answers;
		const char *key;
		json_t	   *ir;
		const char *rt;
		const char *problem = NULL;

		if (responses)
			json_object_set(params, "inputResponses", responses);
		if (state)
			json_object_set_new(params, "requestState", json_string(state));
		rc = request(c, "tools/call", params, result);
		json_decref(params);
		if (responses)
			json_decref(responses);
		responses = NULL;
		free(state);
		state = NULL;
		if (rc != MCP_OK)
			return rc;
		rt = json_string_value(json_object_get(*result, "resultType"));
		if (rt == NULL || strcmp(rt, "input_required") != 0)
			return MCP_OK;
		requests = json_object_get(*result, "inputRequests");
		if (!json_is_object(requests) || c->elicit_cb == NULL)
		{
			McpSetError(c, "tools/call: the server asks for input during the call");
			return MCP_INPUT_REQUIRED;
		}
		answers = mcp_json_object();
		json_object_foreach(requests, key, ir)
		{
			const char *m = json_string_value(json_object_get(ir, "method"));
			json_t	   *ans;

			if (m == NULL || strcmp(m, "elicitation/create") != 0)
			{
				problem = "the server asks for something this client does not support (only elicitation is)";
				break;
			}
			ans = c->elicit_cb(c->elicit_arg, json_object_get(ir, "params"));
			if (ans == NULL)
			{
				problem = "the server asks for input during the call";
				break;
			}
			McpElicitationApplyDefaults(json_object_get(ir, "params"), ans);
			json_object_set_new(answers, key, ans);
		}
		if (problem)
		{
			json_decref(answers);
			McpSetError(c, "tools/call: %s", problem);
			return MCP_INPUT_REQUIRED;
		}
		responses = answers;
		if (json_is_string(json_object_get(*result, "requestState")))
			state = McpXstrdup(json_string_value(json_object_get(*result, "requestState")));
		json_decref(*result);
		*result = NULL;
	}
	if (responses)
		json_decref(responses);
	free(state);
	McpSetError(c, "tools/call: the server asked for input more than %d times", MCP_MAX_INPUT_ROUNDS);
	return MCP_ERROR;
}

/* tools/call without input responses (see McpCallToolWithInput). */
int
McpCallTool(McpClient *c, const char *name, json_t *arguments, json_t **result)
{
	return McpCallToolWithInput(c, name, arguments, NULL, NULL, result);
}

/*
 * See mcp.h.  The DELETE is bounded by MCP_CLOSE_TIMEOUT and sent even
 * when the caller is being cancelled (the abort callback is suspended); its
 * answer is ignored.  The bearer token is wiped.  NULL is accepted.
 */
void
McpClientClose(McpClient *c)
{
	if (c == NULL)
		return;
	if (c->session_id && c->curl)
	{
		struct curl_slist *h = NULL;
		McpAbortCallback saved = c->abort_cb;
		long		t = c->timeout_ms < MCP_CLOSE_TIMEOUT ? c->timeout_ms : MCP_CLOSE_TIMEOUT;

		/* the goodbye must go out even when the caller is being cancelled */
		c->abort_cb = NULL;
		McpSetupHandle(c, c->curl, McpNowMs() + t);
		h = McpBaseHeaders(c, h, 1);
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, "DELETE");
		curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
		(void) curl_easy_perform(c->curl);	/* 405 is allowed: ignored */
		curl_slist_free_all(h);
		c->abort_cb = saved;
	}
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->session_id);
	free(c->url);
	free(c->want_version);
	free(c->www_auth);
	McpClientSetBearer(c, NULL);
	if (c->tools_cache)
		json_decref(c->tools_cache);
	if (c->rejected)
		json_decref(c->rejected);
	if (c->headers)
		json_decref(c->headers);
	if (c->server_info)
		json_decref(c->server_info);
	free(c);
}

/*
 * See mcp.h.  Falls back to structuredContent as compact JSON when there is
 * no content; never NULL ("" when there is nothing; aborts when out of
 * memory).
 */
char *
McpResultText(json_t *result)
{
	StrBuf		b = {0};
	json_t	   *content = json_object_get(result, "content");
	size_t		i;
	json_t	   *part;

	if (json_is_array(content))
	{
		json_array_foreach(content, i, part)
		{
			const char *type = json_string_value(json_object_get(part, "type"));

			if (b.len > 0)
				McpSbAppend(&b, "\n", 1);
			if (type && strcmp(type, "text") == 0 && json_is_string(json_object_get(part, "text")))
			{
				json_t	   *t = json_object_get(part, "text");

				McpSbAppend(&b, json_string_value(t), json_string_length(t));
			}
			else
			{
				char	   *s = json_dumps(part, JSON_COMPACT);

				if (s)
				{
					McpSbAppend(&b, s, strlen(s));
					free(s);
				}
			}
		}
	}
	if (b.len == 0 && json_object_get(result, "structuredContent"))
	{
		char	   *s = json_dumps(json_object_get(result, "structuredContent"), JSON_COMPACT);

		if (s)
		{
			McpSbAppend(&b, s, strlen(s));
			free(s);
		}
	}
	if (b.data == NULL)
		return McpXstrdup("");
	return b.data;
}


/*
 * Gets the client ready (initialize or discover, synchronously) before
 * asynchronous calls; MCP_OK or an error code (see ensure_ready).
 */
int
McpClientReady(McpClient *c)
{
	return ensure_ready(c);
}

/*
 * Drops the session (after MCP_SESSION_GONE) without a DELETE, so that the
 * next McpClientReady initializes again.
 */
void
McpClientForgetSession(McpClient *c)
{
	c->initialized = 0;
	free(c->session_id);
	c->session_id = NULL;
}

/* Whether the client speaks the stateless (2026-07-28) protocol. */
int
McpClientStateless(McpClient *c)
{
	return c->stateless;
}

/* Whether the client is initialized (or stateless and ready). */
int
McpClientIsReady(McpClient *c)
{
	return c->initialized;
}
