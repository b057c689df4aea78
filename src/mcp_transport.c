/*-------------------------------------------------------------------------
 *
 * mcp.c
 *		MCP client: Streamable HTTP JSON-RPC over libcurl and jansson.
 *
 * Free of PostgreSQL backend dependencies (see mcp.h): the extension and the
 * probe bin/pg_agents_mcp link this same file.
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "http_easy.h"
#include "mcp.h"

#define MCP_MAX_BODY		(16 * 1024 * 1024)	/* biggest response kept */
#define MCP_MAX_PAGES		1000	/* tools/list pages followed */
#define MCP_MAX_RESUMES		5	/* GET reconnections of one request */
#define MCP_DEFAULT_RETRY	1000	/* ms before a resume without retry: */
#define MCP_CLOSE_TIMEOUT	2000	/* ms given to the closing DELETE */

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

static int	curl_ready = 0;

/* ---------------------------------------------------------------------- */
/* small helpers														  */
/* ---------------------------------------------------------------------- */

/*
 * Appends n bytes of s to b, keeping it NUL-terminated; grows the buffer
 * (doubling from 256 bytes) and aborts when out of memory.
 */
static void
sb_append(StrBuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 256;

		while (b->len + n + 1 > cap)
			cap *= 2;
		b->data = realloc(b->data, cap);
		if (b->data == NULL)
			abort();
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* Empties b, keeping its memory for reuse. */
static void
sb_reset(StrBuf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

/* Releases b's memory and leaves it empty. */
static void
sb_free(StrBuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* strdup that aborts when out of memory; NULL is copied as "". */
static char *
xstrdup(const char *s)
{
	char	   *r = strdup(s ? s : "");

	if (r == NULL)
		abort();
	return r;
}

/*
 * Sets the client's error.  Any header value that the text happens to carry
 * (a server echoing our token back, say) is masked: errors end up in
 * agent.mcp_servers.last_error, run steps and logs.
 */
static void set_error(McpClient *c, const char *fmt,...) __attribute__((format(printf, 2, 3)));

/* Replaces every occurrence of secret (4 characters or more) in text. */
static void
mask_secret(char *text, const char *secret)
{
	size_t		vl = secret ? strlen(secret) : 0;
	char	   *p;

	if (vl < 4)
		return;
	while ((p = strstr(text, secret)) != NULL)
	{
		const char *mask = "[redacted]";
		size_t		ml = strlen(mask);

		if (ml <= vl)
		{
			memcpy(p, mask, ml);
			memmove(p + ml, p + vl, strlen(p + vl) + 1);
		}
		else
			memset(p, '*', vl);
	}
}

/* See the prototype above: the bearer token and header values are masked. */
static void
set_error(McpClient *c, const char *fmt,...)
{
	va_list		ap;
	const char *key;
	json_t	   *val;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	mask_secret(c->error, c->bearer);

	if (c->headers)
	{
		json_object_foreach(c->headers, key, val)
		{
			const char *v = json_string_value(val);
			size_t		vl = v ? strlen(v) : 0;
			char	   *p;

			if (vl < 4)
				continue;
			while ((p = strstr(c->error, v)) != NULL)
			{
				const char *mask = "[redacted]";
				size_t		ml = strlen(mask);
				size_t		rest = strlen(p + vl);

				if (ml <= vl)
				{
					memcpy(p, mask, ml);
					memmove(p + ml, p + vl, rest + 1);
				}
				else
				{
					memset(p, '*', vl);
				}
			}
		}
	}
}

/* Milliseconds on the monotonic clock (deadlines, not dates). */
static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps ms milliseconds (nothing when ms <= 0), resuming after signals. */
static void
sleep_ms(long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Whether s starts with prefix, ignoring ASCII case. */
static int
ascii_prefix_ci(const char *s, const char *prefix)
{
	return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether word occurs anywhere in s, ignoring ASCII case. */
static int
contains_ci(const char *s, const char *word)
{
	for (; *s; s++)
		if (ascii_prefix_ci(s, word))
			return 1;
	return 0;
}

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
mcp_url_problem(const char *url)
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
mcp_client_new(const char *url, json_t *headers, long timeout_ms)
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
	c->url = xstrdup(url);
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
mcp_client_set_abort(McpClient *c, McpAbortCallback cb, void *arg)
{
	c->abort_cb = cb;
	c->abort_arg = arg;
}

/* Sets the bound of later calls; a value <= 0 leaves it unchanged. */
void
mcp_client_set_timeout(McpClient *c, long timeout_ms)
{
	if (timeout_ms > 0)
		c->timeout_ms = timeout_ms;
}

/* The last error, in the client's own buffer (see mcp.h). */
const char *
mcp_client_error(McpClient *c)
{
	return c->error;
}

/* The negotiated protocol version, or NULL before initialization. */
const char *
mcp_client_protocol_version(McpClient *c)
{
	return c->initialized ? c->protocol_version : NULL;
}

/* The Mcp-Session-Id the server gave, or NULL (borrowed). */
const char *
mcp_client_session_id(McpClient *c)
{
	return c->session_id;
}

/* The server's serverInfo (borrowed), or NULL when none was sent. */
json_t *
mcp_client_server_info(McpClient *c)
{
	return c->server_info;
}

/* How many times the client (re-)initialized a session. */
int
mcp_client_initializations(McpClient *c)
{
	return c->initializations;
}

/*
 * Sets the client error from outside (e.g. an auth callback), masked like
 * every error (see set_error); truncated to 1 kB.
 */
void
mcp_client_set_error(McpClient *c, const char *fmt,...)
{
	va_list		ap;
	char		buf[1024];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	set_error(c, "%s", buf);
}

/* The server URL (borrowed). */
const char *
mcp_client_url(McpClient *c)
{
	return c->url;
}

/* The bound of every call, in milliseconds. */
long
mcp_client_timeout(McpClient *c)
{
	return c->timeout_ms;
}

/*
 * See mcp.h.  NULL, "" and "auto" mean discover; the version is only
 * checked against the supported list when the first request is made.
 */
void
mcp_client_set_protocol(McpClient *c, const char *version)
{
	free(c->want_version);
	c->want_version = (version && *version && strcmp(version, "auto") != 0) ? xstrdup(version) : NULL;
}

/*
 * Sets the elicitation callback (see mcp.h); a non-NULL cb also declares the
 * elicitation capability.
 */
void
mcp_client_set_elicitation(McpClient *c, McpElicitCallback cb, void *arg)
{
	c->elicit_cb = cb;
	c->elicit_arg = arg;
}

/*
 * Holds in-stream elicitations for people for up to hold_ms (see mcp.h);
 * negative values count as 0 (not declared).
 */
void
mcp_client_hold_elicitation(McpClient *c, long hold_ms)
{
	c->elicit_hold_ms = hold_ms > 0 ? hold_ms : 0;
}

/* Declares deferred elicitation to 2026-07-28 servers (see mcp.h). */
void
mcp_client_defer_elicitation(McpClient *c)
{
	c->elicit_deferred = 1;
}

/* Sets the callback called on 401/403 answers (see mcp.h). */
void
mcp_client_set_auth(McpClient *c, McpAuthCallback cb, void *arg)
{
	c->auth_cb = cb;
	c->auth_arg = arg;
}

/*
 * See mcp.h.  The previous token is wiped before being freed; NULL or ""
 * removes the Authorization header.
 */
void
mcp_client_set_bearer(McpClient *c, const char *token)
{
	if (c->bearer)
	{
		memset(c->bearer, 0, strlen(c->bearer));
		free(c->bearer);
	}
	c->bearer = (token && *token) ? xstrdup(token) : NULL;
}

/* ttlMs of the last tools/list, or -1 (see mcp.h). */
long
mcp_client_tools_ttl_ms(McpClient *c)
{
	return c->tools_ttl_ms;
}

/* Tools left out by the last tools/list (borrowed, or NULL before one). */
json_t *
mcp_client_rejected_tools(McpClient *c)
{
	return c->rejected;
}

/* ---------------------------------------------------------------------- */
/* libcurl plumbing														  */
/* ---------------------------------------------------------------------- */

/*
 * libcurl progress callback: returns 1 (abort the transfer) when the
 * client's abort callback asks to stop, 0 to go on.
 */
static int
progress_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow,
			curl_off_t ultotal, curl_off_t ulnow)
{
	McpClient  *c = (McpClient *) arg;

	if (c->abort_cb && c->abort_cb(c->abort_arg))
		return 1;
	return 0;
}

/*
 * The value of one response header line of n bytes whose name (with its
 * colon) is name_len bytes long: a malloc'd copy, blanks before and blanks
 * and line ends after trimmed.  NULL when out of memory.
 */
char *
mcp_header_value(const char *buf, size_t n, size_t name_len)
{
	const char *v = buf + name_len;
	size_t		vl = n - name_len;
	char	   *out;

	while (vl > 0 && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	out = malloc(vl + 1);
	if (out == NULL)
		return NULL;
	memcpy(out, v, vl);
	out[vl] = '\0';
	return out;
}

/*
 * libcurl header callback: keeps the Mcp-Session-Id and WWW-Authenticate
 * values of the response in the transfer (the last one of each wins).
 * Aborts when out of memory.
 */
static size_t
header_cb(char *buf, size_t size, size_t nitems, void *arg)
{
	Xfer	   *x = (Xfer *) arg;
	size_t		n = size * nitems;

	if (n > 15 && ascii_prefix_ci(buf, "mcp-session-id:"))
	{
		free(x->session_hdr);
		x->session_hdr = mcp_header_value(buf, n, 15);
		if (x->session_hdr == NULL)
			abort();
	}
	else if (n > 17 && ascii_prefix_ci(buf, "www-authenticate:"))
	{
		free(x->www_auth_hdr);
		x->www_auth_hdr = mcp_header_value(buf, n, 17);
		if (x->www_auth_hdr == NULL)
			abort();
	}
	return n;
}

/* Adds the common headers (user's, session, version) to a list. */
static struct curl_slist *
base_headers(McpClient *c, struct curl_slist *h, int with_version)
{
	const char *key;
	json_t	   *val;
	char		line[8192];

	json_object_foreach(c->headers, key, val)
	{
		const char *v = json_string_value(val);

		if (v == NULL)
			continue;
		/* headers the transport owns cannot be overridden */
		if ((c->bearer && strcasecmp(key, "authorization") == 0) ||
			strncasecmp(key, "mcp-", 4) == 0 ||
			strcasecmp(key, "last-event-id") == 0 ||
			strcasecmp(key, "mcp-session-id") == 0 ||
			strcasecmp(key, "mcp-protocol-version") == 0 ||
			strcasecmp(key, "content-type") == 0 ||
			strcasecmp(key, "accept") == 0 ||
			strcasecmp(key, "content-length") == 0 ||
			strcasecmp(key, "host") == 0)
			continue;
		if (strchr(key, '\r') || strchr(key, '\n') || strchr(v, '\r') || strchr(v, '\n'))
			continue;
		snprintf(line, sizeof(line), "%s: %s", key, v);
		h = curl_slist_append(h, line);
	}
	if (c->session_id)
	{
		snprintf(line, sizeof(line), "Mcp-Session-Id: %s", c->session_id);
		h = curl_slist_append(h, line);
	}
	if (c->bearer)
	{
		size_t		l = strlen(c->bearer) + 32;
		char	   *a = malloc(l);

		if (a == NULL)
			abort();
		snprintf(a, l, "Authorization: Bearer %s", c->bearer);
		h = curl_slist_append(h, a);
		memset(a, 0, l);
		free(a);
	}
	if ((with_version && c->initialized) || c->stateless)
	{
		snprintf(line, sizeof(line), "MCP-Protocol-Version: %s", c->protocol_version);
		h = curl_slist_append(h, line);
	}
	return h;
}


/* ---------------------------------------------------------------------- */
/* 2026-07-28 routing headers											  */
/* ---------------------------------------------------------------------- */

/*
 * See mcp.h.  Standard alphabet with '=' padding, or (urlsafe) the URL
 * alphabet without padding; malloc'd, aborts when out of memory.
 */
char *
mcp_base64(const void *data, size_t len, int urlsafe)
{
	static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *tab = urlsafe ? url : std;
	const unsigned char *in = data;
	char	   *out = malloc(len / 3 * 4 + 5);
	size_t		i,
				o = 0;

	if (out == NULL)
		abort();
	for (i = 0; i + 2 < len; i += 3)
	{
		out[o++] = tab[in[i] >> 2];
		out[o++] = tab[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
		out[o++] = tab[((in[i + 1] & 15) << 2) | (in[i + 2] >> 6)];
		out[o++] = tab[in[i + 2] & 63];
	}
	if (i < len)
	{
		out[o++] = tab[in[i] >> 2];
		if (i + 1 < len)
		{
			out[o++] = tab[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
			out[o++] = tab[(in[i + 1] & 15) << 2];
		}
		else
			out[o++] = tab[(in[i] & 3) << 4];
		if (!urlsafe)
		{
			while (o % 4)
				out[o++] = '=';
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * Appends "Name: value", the value sent as is when it is printable ASCII
 * without leading or trailing white space, else as =?base64?...?= (the
 * transport's value encoding).
 */
static struct curl_slist *
append_encoded_header(struct curl_slist *h, const char *name, const char *value)
{
	size_t		n = strlen(value);
	size_t		i;
	int			plain = 1;
	char	   *line;
	size_t		ll;

	for (i = 0; i < n; i++)
	{
		unsigned char ch = (unsigned char) value[i];

		if (ch < 0x20 || ch > 0x7e)
			plain = 0;
	}
	if (n > 0 && (value[0] == ' ' || value[n - 1] == ' '))
		plain = 0;
	if (plain && n == 0)
	{
		/* "Name;" is how libcurl sends a header with an empty value */
		ll = strlen(name) + 2;
		line = malloc(ll);
		if (line == NULL)
			abort();
		snprintf(line, ll, "%s;", name);
	}
	else if (plain)
	{
		ll = strlen(name) + n + 3;
		line = malloc(ll);
		if (line == NULL)
			abort();
		snprintf(line, ll, "%s: %s", name, value);
	}
	else
	{
		char	   *b = mcp_base64(value, n, 0);

		ll = strlen(name) + strlen(b) + 16;
		line = malloc(ll);
		if (line == NULL)
			abort();
		snprintf(line, ll, "%s: =?base64?%s?=", name, b);
		free(b);
	}
	h = curl_slist_append(h, line);
	free(line);
	return h;
}

/* A primitive argument as header text (malloc'd), NULL for null or a structure. */
static char *
param_text(json_t *v)
{
	char		buf[64];

	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	if (json_is_integer(v))
	{
		snprintf(buf, sizeof(buf), "%lld", (long long) json_integer_value(v));
		return xstrdup(buf);
	}
	if (json_is_real(v))
	{
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
		return xstrdup(buf);
	}
	if (json_is_true(v))
		return xstrdup("true");
	if (json_is_false(v))
		return xstrdup("false");
	return NULL;
}

/*
 * Mcp-Method, Mcp-Name and, for tools/call of a listed tool, Mcp-Param-*
 * for the parameters its inputSchema marks with x-mcp-header.
 */
static struct curl_slist *
routing_headers(McpClient *c, json_t *msg, struct curl_slist *h)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t	   *params = json_object_get(msg, "params");
	const char *name = NULL;

	if (method == NULL)
		return h;
	h = append_encoded_header(h, "Mcp-Method", method);
	if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
		name = json_string_value(json_object_get(params, "name"));
	else if (strcmp(method, "resources/read") == 0)
		name = json_string_value(json_object_get(params, "uri"));
	if (name)
		h = append_encoded_header(h, "Mcp-Name", name);
	if (name && strcmp(method, "tools/call") == 0 && c->tools_cache)
	{
		json_t	   *tool = json_object_get(c->tools_cache, name);
		json_t	   *props = json_object_get(json_object_get(tool, "inputSchema"), "properties");
		json_t	   *args = json_object_get(params, "arguments");
		const char *pname;
		json_t	   *pdef;

		json_object_foreach(props, pname, pdef)
		{
			const char *hname = json_string_value(json_object_get(pdef, "x-mcp-header"));
			char	   *text;
			char		full[200];

			if (hname == NULL)
				continue;
			text = param_text(json_object_get(args, pname));
			if (text == NULL)
				continue;		/* null or omitted: no header */
			snprintf(full, sizeof(full), "Mcp-Param-%s", hname);
			h = append_encoded_header(h, full, text);
			free(text);
		}
	}
	return h;
}

/*
 * Why a tool's x-mcp-header annotations are invalid, or NULL: each is a
 * non-empty token (RFC 9110 tchar), unique without regard to case, on a
 * primitive (string, number, integer, boolean) top-level property.
 */
static const char *
x_mcp_header_problem(json_t *tool)
{
	json_t	   *props = json_object_get(json_object_get(tool, "inputSchema"), "properties");
	const char *pname;
	json_t	   *pdef;
	json_t	   *seen;
	const char *problem = NULL;

	if (!json_is_object(props))
		return NULL;
	seen = mcp_json_object();
	json_object_foreach(props, pname, pdef)
	{
		json_t	   *hv = json_object_get(pdef, "x-mcp-header");
		const char *hn;
		const char *type;
		char		lower[200];
		size_t		i;

		if (hv == NULL)
			continue;
		hn = json_string_value(hv);
		if (hn == NULL || *hn == '\0')
		{
			problem = "an x-mcp-header is empty or not a string";
			break;
		}
		if (strlen(hn) >= sizeof(lower) - 16)
		{
			problem = "an x-mcp-header is too long";
			break;
		}
		for (i = 0; hn[i]; i++)
		{
			unsigned char ch = (unsigned char) hn[i];

			if (!(isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch)) || ch > 0x7e)
			{
				problem = "an x-mcp-header has a character not allowed in a header name";
				break;
			}
			lower[i] = tolower(ch);
		}
		if (problem)
			break;
		lower[i] = '\0';
		if (json_object_get(seen, lower))
		{
			problem = "two parameters have the same x-mcp-header";
			break;
		}
		json_object_set_new(seen, lower, json_true());
		type = json_string_value(json_object_get(pdef, "type"));
		if (type == NULL || !(strcmp(type, "string") == 0 || strcmp(type, "number") == 0 ||
							  strcmp(type, "integer") == 0 || strcmp(type, "boolean") == 0))
		{
			problem = "an x-mcp-header is on a parameter that is not a string, number, integer or boolean";
			break;
		}
	}
	json_decref(seen);
	return problem;
}

static void reply_to_server_request(McpClient *c, json_t *msg);
static json_t *server_reply(McpClient *c, json_t *msg);

/* One complete JSON-RPC message (or batch) received: look for ours. */
static void
handle_message(Xfer *x, json_t *msg)
{
	if (json_is_array(msg))
	{
		size_t		i;
		json_t	   *m;

		json_array_foreach(msg, i, m)
			handle_message(x, m);
		return;
	}
	if (!json_is_object(msg) || x->response)
		return;
	if (json_object_get(msg, "method"))
	{
		const char *method = json_string_value(json_object_get(msg, "method"));

		/* a server request gets an answer, a notification is skipped */
		if (json_object_get(msg, "id") && !json_is_null(json_object_get(msg, "id")))
		{
			if (x->outbox && x->c->elicit_hold_ms > 0 && !x->c->stateless &&
				method && strcmp(method, "elicitation/create") == 0)
			{
				/* answered once a person did (mcp_async_take_elicitation) */
				if (x->held == NULL)
					x->held = json_array();
				json_array_append(x->held, msg);
			}
			else if (x->outbox)
				json_array_append_new(x->outbox, server_reply(x->c, msg));
			else
				reply_to_server_request(x->c, msg);
		}
		else if (method && strcmp(method, "notifications/tools/list_changed") == 0)
			x->list_changed = 1;
		return;
	}
	if (json_object_get(msg, "result") || json_object_get(msg, "error"))
	{
		json_t	   *id = json_object_get(msg, "id");

		if (json_is_integer(id) && json_integer_value(id) == x->want_id)
			x->response = json_incref(msg);
		else if (json_is_string(id))
		{
			char		want[32];

			snprintf(want, sizeof(want), "%lld", (long long) x->want_id);
			if (strcmp(want, json_string_value(id)) == 0)
				x->response = json_incref(msg);
		}
	}
}

/* An SSE event is complete (blank line). */
static void
sse_dispatch(Xfer *x)
{
	if (x->data.len > 0 && (x->event[0] == '\0' || strcmp(x->event, "message") == 0))
	{
		json_error_t jerr;
		json_t	   *msg;

		/* the data buffer ends with a newline added per data line */
		if (x->data.data[x->data.len - 1] == '\n')
			x->data.data[--x->data.len] = '\0';
		msg = json_loadb(x->data.data, x->data.len, 0, &jerr);
		if (msg)
		{
			handle_message(x, msg);
			json_decref(msg);
		}
	}
	sb_reset(&x->data);
	x->event[0] = '\0';
}

/*
 * One line of an SSE stream, without its line end: an empty line dispatches
 * the event gathered so far; data, event, id and retry fields are kept;
 * comments (":...") and unknown fields are ignored.  An id containing a NUL
 * and a retry that is not all digits are ignored, as the SSE spec says.
 */
static void
sse_line(Xfer *x, const char *line, size_t n)
{
	const char *colon;
	size_t		fl;
	const char *v;
	size_t		vl;

	if (n == 0)
	{
		sse_dispatch(x);
		return;
	}
	if (line[0] == ':')
		return;
	colon = memchr(line, ':', n);
	if (colon)
	{
		fl = colon - line;
		v = colon + 1;
		vl = n - fl - 1;
		if (vl > 0 && *v == ' ')
			v++, vl--;
	}
	else
	{
		fl = n;
		v = "";
		vl = 0;
	}
	if (fl == 4 && memcmp(line, "data", 4) == 0)
	{
		/* an event is bounded like a body: data lines without an end count */
		if (x->data.len + vl + 1 > MCP_MAX_BODY)
		{
			x->too_big = 1;
			return;
		}
		sb_append(&x->data, v, vl);
		sb_append(&x->data, "\n", 1);
	}
	else if (fl == 5 && memcmp(line, "event", 5) == 0)
	{
		size_t		k = vl < sizeof(x->event) - 1 ? vl : sizeof(x->event) - 1;

		memcpy(x->event, v, k);
		x->event[k] = '\0';
	}
	else if (fl == 2 && memcmp(line, "id", 2) == 0)
	{
		if (memchr(v, '\0', vl) == NULL)
		{
			free(x->last_event_id);
			x->last_event_id = malloc(vl + 1);
			if (x->last_event_id == NULL)
				abort();
			memcpy(x->last_event_id, v, vl);
			x->last_event_id[vl] = '\0';
		}
	}
	else if (fl == 5 && memcmp(line, "retry", 5) == 0)
	{
		long		r = 0;
		size_t		i;

		for (i = 0; i < vl; i++)
		{
			if (!isdigit((unsigned char) v[i]))
				return;
			if (r < 100000000)
				r = r * 10 + (v[i] - '0');
		}
		if (vl > 0)
			x->retry_ms = r;
	}
}

/*
 * Splits n bytes of an SSE stream into lines (CR, LF or CRLF) for sse_line.
 * Stops once the response has arrived; sets too_big when a line, or the
 * data of one event, exceeds MCP_MAX_BODY.
 */
static void
sse_feed(Xfer *x, const char *p, size_t n)
{
	size_t		i;

	for (i = 0; i < n && x->response == NULL; i++)
	{
		char		ch = p[i];

		if (x->skip_lf)
		{
			x->skip_lf = 0;
			if (ch == '\n')
				continue;
		}
		if (ch == '\r' || ch == '\n')
		{
			sse_line(x, x->line.data ? x->line.data : "", x->line.len);
			sb_reset(&x->line);
			if (x->too_big)
				return;
			if (ch == '\r')
				x->skip_lf = 1;
		}
		else
		{
			sb_append(&x->line, &ch, 1);
			if (x->line.len > MCP_MAX_BODY)
			{
				x->too_big = 1;
				return;
			}
		}
	}
}

/*
 * libcurl write callback: on the first chunk the Content-Type decides
 * between an SSE stream (fed to sse_feed) and a plain JSON body (gathered).
 * Returns 0, which ends the transfer, once the response arrived in a
 * stream or the answer exceeds MCP_MAX_BODY (too_big set).
 */
static size_t
write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	Xfer	   *x = (Xfer *) arg;
	size_t		n = size * nmemb;

	if (!x->have_type)
	{
		char	   *ct = NULL;

		curl_easy_getinfo(x->handle ? x->handle : x->c->curl, CURLINFO_CONTENT_TYPE, &ct);
		x->is_sse = (ct != NULL && ascii_prefix_ci(ct, "text/event-stream"));
		x->have_type = 1;
	}
	if (x->is_sse)
	{
		sse_feed(x, ptr, n);
		if (x->too_big)
			return 0;
		if (x->response)
			return 0;			/* got it: stop reading this stream */
		return n;
	}
	if (x->body.len + n > MCP_MAX_BODY)
	{
		x->too_big = 1;
		return 0;
	}
	sb_append(&x->body, ptr, n);
	return n;
}

/*
 * Common easy-handle options of one transfer.  Returns the remaining time, or
 * a value <= 0 when the deadline passed.
 */
static long
setup_handle(McpClient *c, CURL *h, long deadline)
{
	long		left = deadline - now_ms();

	curl_easy_reset(h);
	http_easy_defaults(h, c->url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left > 1 ? left : 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, left > 1 ? left : 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, MCP_CLIENT_NAME "/" MCP_CLIENT_VERSION);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_error);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress_cb);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
	c->curl_error[0] = '\0';
	return left;
}

/* Describes a failed curl transfer into the client error. */
static int
curl_failure(McpClient *c, CURLcode rc, const char *what)
{
	if (rc == CURLE_ABORTED_BY_CALLBACK)
	{
		set_error(c, "%s interrupted", what);
		return MCP_ABORTED;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT)
		set_error(c, "%s timed out after %ld ms", what, c->timeout_ms);
	else
		set_error(c, "%s failed: %s", what,
				  c->curl_error[0] ? c->curl_error : curl_easy_strerror(rc));
	/* curl's buffer ends with a newline at times */
	{
		size_t		l = strlen(c->error);

		while (l > 0 && (c->error[l - 1] == '\n' || c->error[l - 1] == '\r'))
			c->error[--l] = '\0';
	}
	return MCP_ERROR;
}

/* The "message" of a JSON-RPC error body, if the body is one. */
static const char *
body_rpc_message(Xfer *x, json_t **hold)
{
	json_t	   *j;
	json_t	   *e;

	*hold = NULL;
	if (x->body.len == 0)
		return NULL;
	j = json_loadb(x->body.data, x->body.len, 0, NULL);
	if (j == NULL)
		return NULL;
	*hold = j;
	e = json_object_get(j, "error");
	if (json_is_object(e) && json_is_string(json_object_get(e, "message")))
		return json_string_value(json_object_get(e, "message"));
	return NULL;
}

#define MCP_SESSION_LOST	(-10)

/* Releases everything a transfer holds and zeroes it for reuse. */
static void
xfer_free(Xfer *x)
{
	sb_free(&x->body);
	sb_free(&x->line);
	sb_free(&x->data);
	free(x->last_event_id);
	free(x->session_hdr);
	free(x->www_auth_hdr);
	if (x->response)
		json_decref(x->response);
	if (x->outbox)
		json_decref(x->outbox);
	if (x->held)
		json_decref(x->held);
	memset(x, 0, sizeof(*x));
}

/*
 * The POST under way on c->curl.  A 2025-11-25 server sends the requests
 * that are not tied to our request (elicitation among them) on the
 * standalone GET stream: when the client can answer elicitation, that
 * stream is listened to for as long as the POST lasts (a 405 or any error
 * of the GET is ignored).
 */
static CURLcode
perform_post(McpClient *c, long deadline)
{
	CURLM	   *m;
	CURL	   *g;
	Xfer		gx;
	struct curl_slist *gh;
	CURLcode	result = CURLE_OK;
	int			post_done = 0;
	int			get_active = 1;

	if (c->elicit_cb == NULL || c->stateless || c->session_id == NULL || !c->initialized)
		return curl_easy_perform(c->curl);
	m = curl_multi_init();
	g = curl_easy_init();
	if (m == NULL || g == NULL)
	{
		if (g)
			curl_easy_cleanup(g);
		if (m)
			curl_multi_cleanup(m);
		return curl_easy_perform(c->curl);
	}
	memset(&gx, 0, sizeof(gx));
	gx.c = c;
	gx.want_id = -2;			/* no response is awaited there */
	gx.retry_ms = -1;
	gx.handle = g;
	setup_handle(c, g, deadline);
	gh = curl_slist_append(NULL, "Accept: text/event-stream");
	gh = base_headers(c, gh, 1);
	curl_easy_setopt(g, CURLOPT_HTTPHEADER, gh);
	curl_easy_setopt(g, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(g, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(g, CURLOPT_WRITEDATA, &gx);
	curl_easy_setopt(g, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(g, CURLOPT_HEADERDATA, &gx);
	/* the GET's error buffer must not be the POST's; its own connection */
	curl_easy_setopt(g, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(g, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(g, CURLOPT_FORBID_REUSE, 1L);
	curl_multi_add_handle(m, g);
	/* the stream is open (its headers came) before the request goes out */
	{
		long		until = now_ms() + 2000;

		while (get_active && now_ms() < until)
		{
			int			running = 0;
			int			left = 0;
			long		code = 0;
			CURLMsg    *msg;

			curl_multi_perform(m, &running);
			while ((msg = curl_multi_info_read(m, &left)) != NULL)
				if (msg->msg == CURLMSG_DONE && msg->easy_handle == g)
				{
					curl_multi_remove_handle(m, g);
					get_active = 0;
				}
			curl_easy_getinfo(g, CURLINFO_RESPONSE_CODE, &code);
			if (code != 0)
				break;
			if (c->abort_cb && c->abort_cb(c->abort_arg))
				break;
			curl_multi_poll(m, NULL, 0, 20, NULL);
		}
	}
	curl_multi_add_handle(m, c->curl);
	while (!post_done)
	{
		int			running = 0;
		int			left = 0;
		CURLMsg    *msg;

		if (curl_multi_perform(m, &running) != CURLM_OK)
		{
			result = CURLE_RECV_ERROR;
			break;
		}
		while ((msg = curl_multi_info_read(m, &left)) != NULL)
		{
			if (msg->msg != CURLMSG_DONE)
				continue;
			if (msg->easy_handle == c->curl)
			{
				result = msg->data.result;
				post_done = 1;
			}
			else if (msg->easy_handle == g && get_active)
			{
				curl_multi_remove_handle(m, g);
				get_active = 0;
			}
		}
		if (!post_done)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	curl_multi_remove_handle(m, c->curl);
	if (get_active)
		curl_multi_remove_handle(m, g);
	curl_easy_cleanup(g);
	curl_slist_free_all(gh);
	curl_multi_cleanup(m);
	xfer_free(&gx);
	return result;
}

/* Points the handle's body and header callbacks at x. */
static void
set_xfer_callbacks(McpClient *c, Xfer *x)
{
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, x);
}

/*
 * rpc_send's first step: encodes msg and POSTs it with the session, version
 * and routing headers, the answer read into x.  Returns MCP_OK when the POST
 * ran (*rc and *status then say how), else an error already set.
 */
static int
rpc_post(McpClient *c, Xfer *x, json_t *msg, const char *what, int is_init,
		 long deadline, CURLcode *rc, long *status)
{
	char	   *payload;
	struct curl_slist *h = NULL;

	payload = json_dumps(msg, JSON_COMPACT);
	if (payload == NULL)
	{
		set_error(c, "%s: could not encode the request", what);
		return MCP_ERROR;
	}
	if (setup_handle(c, c->curl, deadline) <= 0)
	{
		free(payload);
		set_error(c, "%s timed out after %ld ms", what, c->timeout_ms);
		return MCP_ERROR;
	}
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: application/json, text/event-stream");
	h = base_headers(c, h, !is_init);
	if (c->stateless)
		h = routing_headers(c, msg, h);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, payload);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long) strlen(payload));
	set_xfer_callbacks(c, x);

	*rc = perform_post(c, deadline);
	curl_slist_free_all(h);
	free(payload);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	c->last_http_status = *status;
	return MCP_OK;
}

/*
 * rpc_send's second step: judges the POST's transport result and HTTP
 * status.  Returns 1 with *result set when the exchange ends here (a failure,
 * a lost session, refused credentials, or an unsupported-version JSON-RPC
 * error handed to the caller in *response); 0 when the body is to be read.
 */
static int
rpc_check_status(McpClient *c, Xfer *x, CURLcode rc, long status, const char *what,
				 int is_init, json_t **response, int *result)
{
	*result = MCP_ERROR;
	if (x->too_big)
	{
		set_error(c, "%s: the response is larger than %d bytes", what, MCP_MAX_BODY);
		return 1;
	}
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->response))
	{
		*result = curl_failure(c, rc, what);
		return 1;
	}
	if (status == 404 && c->session_id && !is_init)
	{
		*result = MCP_SESSION_LOST;
		return 1;
	}
	if (status == 401 ||
		(status == 403 && x->www_auth_hdr && contains_ci(x->www_auth_hdr, "insufficient_scope")))
	{
		json_t	   *hold;
		const char *m = body_rpc_message(x, &hold);

		c->auth_status = status;
		free(c->www_auth);
		c->www_auth = x->www_auth_hdr;
		x->www_auth_hdr = NULL;
		set_error(c, "%s: the server refused the credentials (HTTP %ld)%s%s", what, status,
				  m ? ": " : "", m ? m : "");
		if (hold)
			json_decref(hold);
		*result = MCP_UNAUTHORIZED;
		return 1;
	}
	if (status < 200 || status >= 300)
	{
		json_t	   *hold;
		const char *m = body_rpc_message(x, &hold);
		json_t	   *err = hold ? json_object_get(hold, "error") : NULL;

		/* 2026-07-28: an unsupported version is a JSON-RPC error for the caller */
		if (json_is_integer(json_object_get(err, "code")) &&
			json_integer_value(json_object_get(err, "code")) == -32022 && response)
		{
			*response = hold;
			*result = MCP_OK;
			return 1;
		}

		/*
		 * The TypeScript SDK's example servers (server-everything among them)
		 * answer 400 "No valid session ID" instead of 404 once they forgot a
		 * session: treated as a lost session as well.
		 */
		if (status == 400 && c->session_id && !is_init && m && contains_ci(m, "session"))
			*result = MCP_SESSION_LOST;
		else if (status == 401 || status == 403)
			set_error(c, "%s: the server refused the credentials (HTTP %ld)%s%s", what, status,
					  m ? ": " : "", m ? m : "");
		else
			set_error(c, "%s: the server answered HTTP %ld%s%s", what, status,
					  m ? ": " : "", m ? m : "");
		if (hold)
			json_decref(hold);
		return 1;
	}
	return 0;
}

/*
 * rpc_send's plain-JSON step: a body that is not an SSE stream is one
 * JSON-RPC message, handled like a stream's event.  Returns 0 on failure
 * (error set).
 */
static int
rpc_read_json_body(McpClient *c, Xfer *x, long status, const char *what)
{
	json_error_t jerr;
	json_t	   *j;

	if (x->body.len == 0)
	{
		set_error(c, "%s: the server sent an empty answer (HTTP %ld)", what, status);
		return 0;
	}
	j = json_loadb(x->body.data, x->body.len, 0, &jerr);
	if (j == NULL)
	{
		set_error(c, "%s: the server did not answer JSON-RPC (invalid JSON at line %d: %s)",
				  what, jerr.line, jerr.text);
		return 0;
	}
	handle_message(x, j);
	json_decref(j);
	return 1;
}

/*
 * Waits the stream's retry delay before a resumption, watching the abort
 * callback.  Returns MCP_OK, or an error (set) when the deadline would pass
 * or the caller aborted.
 */
static int
rpc_resume_wait(McpClient *c, Xfer *x, const char *what, long deadline)
{
	long		wait = x->retry_ms >= 0 ? x->retry_ms : MCP_DEFAULT_RETRY;
	long		t0;

	if (now_ms() + wait >= deadline)
	{
		set_error(c, "%s timed out after %ld ms", what, c->timeout_ms);
		return MCP_ERROR;
	}
	t0 = now_ms();
	while (now_ms() - t0 < wait)
	{
		if (c->abort_cb && c->abort_cb(c->abort_arg))
		{
			set_error(c, "%s interrupted", what);
			return MCP_ABORTED;
		}
		sleep_ms(wait - (now_ms() - t0) < 20 ? wait - (now_ms() - t0) : 20);
	}
	return MCP_OK;
}

/*
 * rpc_send's resumption step: while an SSE stream closed before our
 * response, waits and re-opens it with GET + Last-Event-ID (at most
 * MCP_MAX_RESUMES times).  Returns MCP_OK when the loop ended without a
 * failure (x->response may still be NULL), else the failure (set).
 */
static int
rpc_resume(McpClient *c, Xfer *x, const char *what, long deadline)
{
	int			resumes = 0;

	while (x->response == NULL && x->is_sse && x->last_event_id && resumes < MCP_MAX_RESUMES)
	{
		char		line[1024];
		struct curl_slist *h;
		CURLcode	rc;
		long		status = 0;
		int			r = rpc_resume_wait(c, x, what, deadline);

		if (r != MCP_OK)
			return r;
		resumes++;
		setup_handle(c, c->curl, deadline);
		h = curl_slist_append(NULL, "Accept: text/event-stream");
		h = base_headers(c, h, 1);
		snprintf(line, sizeof(line), "Last-Event-ID: %s", x->last_event_id);
		h = curl_slist_append(h, line);
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
		set_xfer_callbacks(c, x);
		x->have_type = 0;
		x->skip_lf = 0;
		sb_reset(&x->line);
		sb_reset(&x->data);
		x->event[0] = '\0';
		rc = curl_easy_perform(c->curl);
		curl_slist_free_all(h);
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
		if (x->response)
			break;
		if (rc != CURLE_OK)
			return curl_failure(c, rc, what);
		if (status < 200 || status >= 300)
		{
			set_error(c, "%s: the stream closed before the response and resuming it failed (HTTP %ld)",
					  what, status);
			return MCP_ERROR;
		}
		if (!x->is_sse)
			break;
	}
	return MCP_OK;
}

/*
 * Sends one JSON-RPC message and, for a request, waits for its response,
 * resuming a closed SSE stream with GET + Last-Event-ID.  On MCP_OK,
 * *response is the response object (for a request).  Returns
 * MCP_SESSION_LOST when the server no longer knows our session.
 */
static int
rpc_send(McpClient *c, json_t *msg, json_int_t id, const char *what,
		 json_t **response, char **session_out)
{
	Xfer		x;
	CURLcode	rc = CURLE_OK;
	long		status = 0;
	long		deadline = now_ms() + c->timeout_ms;
	int			result = MCP_ERROR;
	int			is_init = (session_out != NULL);

	if (response)
		*response = NULL;
	if (c->curl == NULL)
	{
		set_error(c, "could not initialize libcurl");
		return MCP_ERROR;
	}
	memset(&x, 0, sizeof(x));
	x.c = c;
	x.want_id = id;
	x.retry_ms = -1;

	if (rpc_post(c, &x, msg, what, is_init, deadline, &rc, &status) != MCP_OK)
		return MCP_ERROR;
	if (rpc_check_status(c, &x, rc, status, what, is_init, response, &result))
		goto done;
	result = MCP_ERROR;
	if (session_out && x.session_hdr)
	{
		*session_out = x.session_hdr;
		x.session_hdr = NULL;
	}
	if (id < 0)
	{
		/* a notification: 202 Accepted (any 2xx and body are tolerated) */
		result = MCP_OK;
		goto done;
	}
	if (!x.is_sse && !rpc_read_json_body(c, &x, status, what))
		goto done;
	result = rpc_resume(c, &x, what, deadline);
	if (result != MCP_OK)
		goto done;
	result = MCP_ERROR;
	if (x.response == NULL)
	{
		set_error(c, "%s: the server sent no JSON-RPC response with id %lld",
				  what, (long long) id);
		goto done;
	}
	if (response)
	{
		*response = x.response;
		x.response = NULL;
	}
	result = MCP_OK;
done:
	xfer_free(&x);
	return result;
}

/*
 * The answer to a request the server made in the middle of a stream: ping
 * gets an empty result, elicitation/create the callback's answer (declined
 * without one), anything else "method not found".
 */
static json_t *
server_reply(McpClient *c, json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));

	if (method && strcmp(method, "ping") == 0)
		return json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"), "result");
	if (method && strcmp(method, "elicitation/create") == 0 && c->elicit_cb)
	{
		json_t	   *params = json_object_get(msg, "params");
		json_t	   *answer = c->elicit_cb(c->elicit_arg, params);

		if (answer == NULL)
			answer = json_pack("{s:s}", "action", "decline");
		mcp_elicitation_apply_defaults(params, answer);
		return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"),
						 "result", answer);
	}
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"),
					 "error", "code", -32601, "message", "Method not found");
}

/* Answers a request the server made in the middle of a stream. */
static void
reply_to_server_request(McpClient *c, json_t *msg)
{
	CURL	   *h = curl_easy_init();
	json_t	   *reply;
	char	   *payload;
	struct curl_slist *hl = NULL;
	Xfer		sink;

	if (h == NULL)
		return;
	reply = server_reply(c, msg);
	payload = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
	json_decref(reply);
	if (payload == NULL)
	{
		curl_easy_cleanup(h);
		return;
	}
	memset(&sink, 0, sizeof(sink));
	sink.c = c;
	sink.want_id = -1;
	setup_handle(c, h, now_ms() + (c->timeout_ms < 5000 ? c->timeout_ms : 5000));
	hl = curl_slist_append(hl, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	hl = base_headers(c, hl, 1);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long) strlen(payload));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, NULL);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
	/* the body of the answer (202 in principle) is of no interest */
	curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
	{
		FILE	   *devnull = fopen("/dev/null", "w");

		if (devnull)
			curl_easy_setopt(h, CURLOPT_WRITEDATA, devnull);
		(void) curl_easy_perform(h);
		if (devnull)
			fclose(devnull);
	}
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	free(payload);
	xfer_free(&sink);
}

/* ---------------------------------------------------------------------- */
/* the protocol															  */
/* ---------------------------------------------------------------------- */

/* Whether v is a protocol version this client speaks. */
static int
supported_version(const char *v)
{
	return v && (strcmp(v, MCP_STATELESS_VERSION) == 0 ||
				 strcmp(v, "2025-11-25") == 0 ||
				 strcmp(v, "2025-06-18") == 0 ||
				 strcmp(v, "2025-03-26") == 0);
}

/* Whether v is the stateless (2026-07-28) protocol version. */
static int
stateless_version(const char *v)
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
static void
rpc_error_text(McpClient *c, const char *what, json_t *err)
{
	json_t	   *code = json_object_get(err, "code");
	const char *m = json_string_value(json_object_get(err, "message"));

	set_error(c, "%s: the server answered JSON-RPC error %lld: %s", what,
			  (long long) (json_is_integer(code) ? json_integer_value(code) : 0),
			  m ? m : "(no message)");
}

/* Capabilities we declare: elicitation when someone can answer; never sampling or roots. */
static json_t *
client_capabilities(McpClient *c)
{
	json_t	   *caps = mcp_json_object();

	if (c->elicit_cb || (c->elicit_deferred && c->stateless) ||
		(c->elicit_hold_ms > 0 && !c->stateless))
		json_object_set_new(caps, "elicitation", mcp_json_object());
	return caps;
}

/*
 * rpc_send, and on 401 (or 403 insufficient_scope) the authorization
 * callback, then again, at most MCP_MAX_AUTH_RETRIES times.
 */
static int
send_authorized(McpClient *c, json_t *msg, json_int_t id, const char *what,
				json_t **response, char **session_out)
{
	int			tries = 0;

	for (;;)
	{
		int			rc = rpc_send(c, msg, id, what, response, session_out);
		char	   *wa;
		int			r;

		if (rc != MCP_UNAUTHORIZED)
			return rc;
		if (c->auth_cb == NULL)
			return rc;
		if (tries++ >= MCP_MAX_AUTH_RETRIES)
		{
			set_error(c, "%s: the server still refuses the credentials after %d authorizations",
					  what, MCP_MAX_AUTH_RETRIES);
			return rc;
		}
		wa = c->www_auth ? xstrdup(c->www_auth) : NULL;
		r = c->auth_cb(c->auth_arg, c, c->auth_status, wa);
		free(wa);
		if (r != 0)
			return MCP_UNAUTHORIZED;
	}
}

/* A request message; in stateless mode params carry _meta. */
static json_t *
build_request(McpClient *c, const char *method, json_t *params, json_int_t id)
{
	json_t	   *p = json_is_object(params) ? json_copy(params) : mcp_json_object();

	if (c->stateless)
	{
		json_t	   *meta = json_object_get(p, "_meta");

		meta = json_is_object(meta) ? json_copy(meta) : mcp_json_object();
		json_object_set_new(meta, "io.modelcontextprotocol/protocolVersion", json_string(c->protocol_version));
		json_object_set_new(meta, "io.modelcontextprotocol/clientInfo",
							json_pack("{s:s, s:s}", "name", MCP_CLIENT_NAME, "version", MCP_CLIENT_VERSION));
		json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities", client_capabilities(c));
		json_object_set_new(p, "_meta", meta);
	}
	return json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params", p);
}

/* forgets the client's session before a new initialize (counted) */
static void
session_forget(McpClient *c)
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

	session_forget(c);			/* a fresh session */

	req = json_pack("{s:s, s:I, s:s, s:{s:s, s:o, s:{s:s, s:s}}}",
					"jsonrpc", "2.0", "id", id, "method", "initialize",
					"params", "protocolVersion", want,
					"capabilities", client_capabilities(c),
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
		rpc_error_text(c, "initialize", json_object_get(resp, "error"));
		json_decref(resp);
		free(session);
		return MCP_ERROR;
	}
	result = json_object_get(resp, "result");
	version = json_string_value(json_object_get(result, "protocolVersion"));
	if (!json_is_object(result) || version == NULL)
	{
		set_error(c, "initialize: the server's answer has no protocolVersion");
		json_decref(resp);
		free(session);
		return MCP_ERROR;
	}
	if (!supported_version(version) || stateless_version(version))
	{
		set_error(c, "initialize: unsupported protocol version \"%.40s\" (supported: 2026-07-28 without initialize, 2025-11-25, 2025-06-18, 2025-03-26)",
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
		set_error(c, "notifications/initialized: the server no longer knows the session it has just created");
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
mcp_initialize(McpClient *c)
{
	const char *v = c->want_version;

	if (v == NULL || stateless_version(v))
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
	req = build_request(c, "server/discover", NULL, id);
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
	if (v && stateless_version(v))
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
	if (v && !supported_version(v))
	{
		set_error(c, "unsupported protocol version \"%.40s\" (supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, auto)", v);
		return MCP_ERROR;
	}
	if (v && stateless_version(v))
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
		req = build_request(c, method, params, id);
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
			set_error(c, "%s: the server lost the session again right after a new initialization", method);
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
				if (stateless_version(v))
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
			rpc_error_text(c, method, err);
			*result = json_incref(err);
			json_decref(resp);
			return MCP_RPC_ERROR;
		}
		if (!json_is_object(json_object_get(resp, "result")))
		{
			set_error(c, "%s: the server's response has no result object", method);
			json_decref(resp);
			return MCP_ERROR;
		}
		*result = json_incref(json_object_get(resp, "result"));
		json_decref(resp);
		return MCP_OK;
	}
	set_error(c, "%s: no protocol version in common with the server", method);
	return MCP_ERROR;
}

/* Any JSON-RPC request under the transport rules (see mcp.h and request). */
int
mcp_request(McpClient *c, const char *method, json_t *params, json_t **result)
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
mcp_list_tools(McpClient *c, json_t **tools)
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
			set_error(c, "tools/list: the server's result has no tools array");
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
			problem = x_mcp_header_problem(t);
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
			set_error(c, "tools/list: the server returned the same cursor twice");
			json_decref(result);
			json_decref(all);
			json_decref(cache);
			json_decref(rejected);
			free(cursor);
			return MCP_ERROR;
		}
		free(cursor);
		cursor = xstrdup(json_string_value(next));
		json_decref(result);
		if (++pages >= MCP_MAX_PAGES)
		{
			set_error(c, "tools/list: more than %d pages", MCP_MAX_PAGES);
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
	c->tools_listed_at = now_ms();
	*tools = all;
	return MCP_OK;
}

/*
 * See mcp.h.  Only an "accept" answer is changed: each property of the
 * requested schema that has a default and is absent from content gets it
 * (content is created when missing).
 */
void
mcp_elicitation_apply_defaults(json_t *params, json_t *answer)
{
	json_t	   *props = json_object_get(json_object_get(params, "requestedSchema"), "properties");
	json_t	   *content;
	const char *k;
	json_t	   *def;
	const char *action = json_string_value(json_object_get(answer, "action"));

	if (action == NULL || strcmp(action, "accept") != 0 || !json_is_object(props))
		return;
	content = json_object_get(answer, "content");
	if (!json_is_object(content))
	{
		content = mcp_json_object();
		json_object_set_new(answer, "content", content);
	}
	json_object_foreach(props, k, def)
	{
		json_t	   *d = json_object_get(def, "default");

		if (d && json_object_get(content, k) == NULL)
			json_object_set(content, k, d);
	}
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
mcp_call_tool_with_input(McpClient *c, const char *name, json_t *arguments,
						 json_t *input_responses, const char *request_state, json_t **result)
{
	json_t	   *responses = input_responses ? json_incref(input_responses) : NULL;
	char	   *state = request_state ? xstrdup(request_state) : NULL;
	const char *why;
	int			round;
	int			rc = MCP_ERROR;

	*result = NULL;
	/* 2026-07-28: the tool's definition gives its Mcp-Param-* headers */
	if (ensure_ready(c) == MCP_OK && c->stateless &&
		(c->tools_cache == NULL || json_object_get(c->tools_cache, name) == NULL ||
		 (c->tools_ttl_ms > 0 && now_ms() - c->tools_listed_at > c->tools_ttl_ms)) &&
		(c->rejected == NULL || rejected_reason(c, name) == NULL))
	{
		json_t	   *tools = NULL;

		if (mcp_list_tools(c, &tools) == MCP_OK)
			json_decref(tools);
	}
	if (c->rejected && (why = rejected_reason(c, name)) != NULL)
	{
		set_error(c, "tool \"%.100s\" is refused: its definition is invalid (%s)", name, why);
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
			set_error(c, "tools/call: the server asks for input during the call");
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
			mcp_elicitation_apply_defaults(json_object_get(ir, "params"), ans);
			json_object_set_new(answers, key, ans);
		}
		if (problem)
		{
			json_decref(answers);
			set_error(c, "tools/call: %s", problem);
			return MCP_INPUT_REQUIRED;
		}
		responses = answers;
		if (json_is_string(json_object_get(*result, "requestState")))
			state = xstrdup(json_string_value(json_object_get(*result, "requestState")));
		json_decref(*result);
		*result = NULL;
	}
	if (responses)
		json_decref(responses);
	free(state);
	set_error(c, "tools/call: the server asked for input more than %d times", MCP_MAX_INPUT_ROUNDS);
	return MCP_ERROR;
}

/* tools/call without input responses (see mcp_call_tool_with_input). */
int
mcp_call_tool(McpClient *c, const char *name, json_t *arguments, json_t **result)
{
	return mcp_call_tool_with_input(c, name, arguments, NULL, NULL, result);
}

/*
 * See mcp.h.  The DELETE is bounded by MCP_CLOSE_TIMEOUT and sent even
 * when the caller is being cancelled (the abort callback is suspended); its
 * answer is ignored.  The bearer token is wiped.  NULL is accepted.
 */
void
mcp_client_close(McpClient *c)
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
		setup_handle(c, c->curl, now_ms() + t);
		h = base_headers(c, h, 1);
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
	mcp_client_set_bearer(c, NULL);
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
mcp_result_text(json_t *result)
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
				sb_append(&b, "\n", 1);
			if (type && strcmp(type, "text") == 0 && json_is_string(json_object_get(part, "text")))
			{
				json_t	   *t = json_object_get(part, "text");

				sb_append(&b, json_string_value(t), json_string_length(t));
			}
			else
			{
				char	   *s = json_dumps(part, JSON_COMPACT);

				if (s)
				{
					sb_append(&b, s, strlen(s));
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
			sb_append(&b, s, strlen(s));
			free(s);
		}
	}
	if (b.data == NULL)
		return xstrdup("");
	return b.data;
}


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
	long		soft_deadline;	/* now_ms() bound without the people's wait */
	int			resumes;
	long		delay_ms;
	char		curl_error[CURL_ERROR_SIZE];
};

/*
 * Gets the client ready (initialize or discover, synchronously) before
 * asynchronous calls; MCP_OK or an error code (see ensure_ready).
 */
int
mcp_client_ready(McpClient *c)
{
	return ensure_ready(c);
}

/*
 * Drops the session (after MCP_SESSION_GONE) without a DELETE, so that the
 * next mcp_client_ready initializes again.
 */
void
mcp_client_forget_session(McpClient *c)
{
	c->initialized = 0;
	free(c->session_id);
	c->session_id = NULL;
}

/* Whether the client speaks the stateless (2026-07-28) protocol. */
int
mcp_client_stateless(McpClient *c)
{
	return c->stateless;
}

/* Whether the client is initialized (or stateless and ready). */
int
mcp_client_is_ready(McpClient *c)
{
	return c->initialized;
}

/* common options of the async handle, our own error buffer */
static void
async_setup(McpAsync *a)
{
	setup_handle(a->c, a->easy, a->deadline);
	curl_easy_setopt(a->easy, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(a->easy, CURLOPT_ERRORBUFFER, a->curl_error);
	curl_easy_setopt(a->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(a->easy, CURLOPT_WRITEDATA, &a->x);
	curl_easy_setopt(a->easy, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(a->easy, CURLOPT_HEADERDATA, &a->x);
	a->curl_error[0] = '\0';
	a->x.have_type = 0;
	a->x.skip_lf = 0;
	sb_reset(&a->x.line);
	sb_reset(&a->x.data);
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
		set_error(c, "could not initialize libcurl");
		return NULL;
	}
	a->deadline = now_ms() + c->timeout_ms;
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
	a->hl = base_headers(c, a->hl, !is_init);
	if (c->stateless)
		a->hl = routing_headers(c, msg, a->hl);
	curl_easy_setopt(a->easy, CURLOPT_HTTPHEADER, a->hl);
	curl_easy_setopt(a->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(a->easy, CURLOPT_POSTFIELDS, a->payload);
	curl_easy_setopt(a->easy, CURLOPT_POSTFIELDSIZE, (long) strlen(a->payload));
}

/*
 * Whether the client needs a session initialized and knows which version to
 * ask for (negotiated before, or configured as a stateful version), so that
 * mcp_async_initialize can do it.
 */
int
mcp_client_wants_session(McpClient *c)
{
	if (c->initialized || c->stateless)
		return 0;
	if (c->era == 1 && c->protocol_version[0])
		return 1;
	return c->want_version != NULL && supported_version(c->want_version) &&
		!stateless_version(c->want_version);
}

/*
 * See mcp.h.  Prepares the POST of initialize on a fresh session (the old
 * one is forgotten); NULL when the client needs no session or its version
 * is not known (auto mode), or no handle could be made.
 */
McpAsync *
mcp_async_initialize(McpClient *c)
{
	McpAsync   *a;
	json_t	   *req;
	const char *want = (c->era == 1 && c->protocol_version[0]) ? c->protocol_version : c->want_version;
	char		version[32];

	if (!mcp_client_wants_session(c))
		return NULL;
	snprintf(version, sizeof(version), "%s", want);
	a = async_new(c, ASYNC_INIT);
	if (a == NULL)
		return NULL;
	session_forget(c);			/* a fresh session */
	a->id = c->next_id++;
	a->x.want_id = a->id;
	req = json_pack("{s:s, s:I, s:s, s:{s:s, s:o, s:{s:s, s:s}}}",
					"jsonrpc", "2.0", "id", a->id, "method", "initialize",
					"params", "protocolVersion", version,
					"capabilities", client_capabilities(c),
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
mcp_async_call(McpClient *c, const char *name, json_t *arguments, json_t *tool_def,
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
	 * (mcp_async_soft_deadline).
	 */
	a->soft_deadline = a->deadline;
	if (c->elicit_hold_ms > 0 && !c->stateless)
		a->deadline += c->elicit_hold_ms;
	a->id = c->next_id++;
	a->x.want_id = a->id;
	msg = build_request(c, "tools/call", params, a->id);
	json_decref(params);
	async_post(a, msg, 0);
	json_decref(msg);
	return a;
}

/* The easy handle of the request, for the caller's multi handle. */
CURL *
mcp_async_handle(McpAsync *a)
{
	return a->easy;
}

/*
 * After MCP_AGAIN, how long to wait before adding the handle again; -1
 * otherwise.
 */
long
mcp_async_delay_ms(McpAsync *a)
{
	return a->delay_ms;
}

/* Whether notifications/tools/list_changed came in the stream. */
int
mcp_async_list_changed(McpAsync *a)
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
	a->hl = base_headers(a->c, a->hl, 1);
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
		rpc_error_text(c, "initialize", json_object_get(resp, "error"));
		return MCP_ERROR;
	}
	if (!json_is_object(res) || version == NULL)
	{
		set_error(c, "initialize: the server's answer has no protocolVersion");
		return MCP_ERROR;
	}
	if (!supported_version(version) || stateless_version(version))
	{
		set_error(c, "initialize: unsupported protocol version \"%.40s\" (supported: 2026-07-28 without initialize, 2025-11-25, 2025-06-18, 2025-03-26)",
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
	sb_reset(&a->x.body);
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
mcp_async_done(McpAsync *a, int curl_code, json_t **result)
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
		set_error(c, "%s: the response is larger than %d bytes", what, MCP_MAX_BODY);
		return MCP_ERROR;
	}
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->response))
	{
		memcpy(c->curl_error, a->curl_error, sizeof(c->curl_error));
		return curl_failure(c, rc, what);
	}
	if (a->kind == ASYNC_NOTE)
	{
		/* 202 Accepted (any 2xx and body are tolerated) */
		if (status >= 200 && status < 300)
			return MCP_OK;
		c->initialized = 0;
		set_error(c, "%s: the server answered HTTP %ld", what, status);
		return status == 401 || status == 403 ? MCP_UNAUTHORIZED : MCP_ERROR;
	}
	if (a->resumes == 0)
	{
		if (status == 404 && c->session_id && a->kind == ASYNC_CALL)
			return MCP_SESSION_GONE;
		if (status < 200 || status >= 300)
		{
			json_t	   *hold;
			const char *m = body_rpc_message(x, &hold);

			if (status == 400 && c->session_id && a->kind == ASYNC_CALL && m && contains_ci(m, "session"))
			{
				if (hold)
					json_decref(hold);
				return MCP_SESSION_GONE;
			}
			if (status == 401 || status == 403)
				set_error(c, "%s: the server refused the credentials (HTTP %ld)%s%s", what, status,
						  m ? ": " : "", m ? m : "");
			else
				set_error(c, "%s: the server answered HTTP %ld%s%s", what, status,
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
				set_error(c, "%s: the server sent an empty answer (HTTP %ld)", what, status);
				return MCP_ERROR;
			}
			j = json_loadb(x->body.data, x->body.len, 0, &jerr);
			if (j == NULL)
			{
				set_error(c, "%s: the server did not answer JSON-RPC (invalid JSON at line %d: %s)",
						  what, jerr.line, jerr.text);
				return MCP_ERROR;
			}
			handle_message(x, j);
			json_decref(j);
		}
	}
	else if (x->response == NULL && (status < 200 || status >= 300))
	{
		set_error(c, "%s: the stream closed before the response and resuming it failed (HTTP %ld)",
				  what, status);
		return MCP_ERROR;
	}
	if (x->response == NULL && x->is_sse && x->last_event_id && a->resumes < MCP_MAX_RESUMES)
	{
		long		wait = x->retry_ms >= 0 ? x->retry_ms : MCP_DEFAULT_RETRY;

		if (now_ms() + wait >= a->deadline)
		{
			set_error(c, "%s timed out after %ld ms", what, c->timeout_ms);
			return MCP_ERROR;
		}
		async_resume(a);
		a->delay_ms = wait;
		return MCP_AGAIN;
	}
	if (x->response == NULL)
	{
		set_error(c, "%s: the server sent no JSON-RPC response with id %lld", what, (long long) a->id);
		return MCP_ERROR;
	}
	err = json_object_get(x->response, "error");
	if (a->kind == ASYNC_INIT)
		return async_initialized(a);
	if (json_is_object(err))
	{
		rpc_error_text(c, what, err);
		*result = json_incref(err);
		return MCP_RPC_ERROR;
	}
	if (!json_is_object(json_object_get(x->response, "result")))
	{
		set_error(c, "%s: the server's response has no result object", what);
		return MCP_ERROR;
	}
	*result = json_incref(json_object_get(x->response, "result"));
	rt = json_string_value(json_object_get(*result, "resultType"));
	if (rt && strcmp(rt, "input_required") == 0)
	{
		set_error(c, "tools/call: the server asks for input during the call");
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
mcp_async_next_reply(McpAsync *a, struct curl_slist **headers, char **body)
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
	*headers = base_headers(a->c, *headers, 1);
	return 1;
}

/*
 * See mcp.h.  Takes the oldest held elicitation/create request off the
 * queue; NULL when none is held.
 */
json_t *
mcp_async_take_elicitation(McpAsync *a)
{
	json_t	   *m;

	if (a->x.held == NULL || json_array_size(a->x.held) == 0)
		return NULL;
	m = json_incref(json_array_get(a->x.held, 0));
	json_array_remove(a->x.held, 0);
	return m;
}

/*
 * Queues the answer to a held elicitation request for mcp_async_next_reply:
 * a copy of answer (or "cancel" when it is not an object) with the
 * requested schema's defaults applied.
 */
void
mcp_async_answer_elicitation(McpAsync *a, json_t *request, json_t *answer)
{
	json_t	   *params = json_object_get(request, "params");
	json_t	   *res = json_deep_copy(answer);

	if (!json_is_object(res))
	{
		if (res)
			json_decref(res);
		res = json_pack("{s:s}", "action", "cancel");
	}
	mcp_elicitation_apply_defaults(params, res);
	if (a->x.outbox == NULL)
		a->x.outbox = json_array();
	json_array_append_new(a->x.outbox, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0",
												 "id", json_object_get(request, "id"), "result", res));
}

/* The call's deadline outside a person's wait (mcp_now_ms clock). */
long
mcp_async_soft_deadline(McpAsync *a)
{
	return a->soft_deadline;
}

/* Moves the soft deadline ms later (the time a person took to answer). */
void
mcp_async_extend(McpAsync *a, long ms)
{
	a->soft_deadline += ms;
}

/* The monotonic clock of the client's deadlines, in milliseconds. */
long
mcp_now_ms(void)
{
	return now_ms();
}

/*
 * Frees the request, its handle and transfer state; NULL is accepted.  The
 * caller removes the handle from its multi handle first.
 */
void
mcp_async_free(McpAsync *a)
{
	if (a == NULL)
		return;
	if (a->easy)
		curl_easy_cleanup(a->easy);
	if (a->hl)
		curl_slist_free_all(a->hl);
	free(a->payload);
	xfer_free(&a->x);
	free(a);
}
