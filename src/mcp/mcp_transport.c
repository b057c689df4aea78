/*-------------------------------------------------------------------------
 *
 * mcp_transport.c
 *		MCP client, transport: libcurl plumbing, the 2026-07-28 routing
 *		headers, the SSE parser, JSON-RPC over POST with resumption by GET,
 *		and the answers to server requests met in a stream.
 *
 * Free of PostgreSQL backend dependencies (see mcp.h): the extension and the
 * probe bin/pg_agents_mcp link this same file.  The bottom of the client's
 * files (mcp_int.h).
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
#include "mcp_int.h"

/* ---------------------------------------------------------------------- */
/* small helpers														  */
/* ---------------------------------------------------------------------- */

/*
 * Appends n bytes of s to b, keeping it NUL-terminated; grows the buffer
 * (doubling from 256 bytes) and aborts when out of memory.
 */
void
McpSbAppend(StrBuf *b, const char *s, size_t n)
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
void
McpSbReset(StrBuf *b)
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
char *
McpXstrdup(const char *s)
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
void
McpSetError(McpClient *c, const char *fmt,...)
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

/* The monotonic clock of the client's deadlines, in milliseconds. */
long
McpNowMs(void)
{
	return now_ms();
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
int
McpContainsCi(const char *s, const char *word)
{
	for (; *s; s++)
		if (ascii_prefix_ci(s, word))
			return 1;
	return 0;
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
McpHeaderValue(const char *buf, size_t n, size_t name_len)
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
size_t
McpHeaderCb(char *buf, size_t size, size_t nitems, void *arg)
{
	Xfer	   *x = (Xfer *) arg;
	size_t		n = size * nitems;

	if (n > 15 && ascii_prefix_ci(buf, "mcp-session-id:"))
	{
		free(x->session_hdr);
		x->session_hdr = McpHeaderValue(buf, n, 15);
		if (x->session_hdr == NULL)
			abort();
	}
	else if (n > 17 && ascii_prefix_ci(buf, "www-authenticate:"))
	{
		free(x->www_auth_hdr);
		x->www_auth_hdr = McpHeaderValue(buf, n, 17);
		if (x->www_auth_hdr == NULL)
			abort();
	}
	return n;
}

/* Adds the common headers (user's, session, version) to a list. */
struct curl_slist *
McpBaseHeaders(McpClient *c, struct curl_slist *h, int with_version)
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
McpBase64(const void *data, size_t len, int urlsafe)
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
		char	   *b = McpBase64(value, n, 0);

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
		return McpXstrdup(json_string_value(v));
	if (json_is_integer(v))
	{
		snprintf(buf, sizeof(buf), "%lld", (long long) json_integer_value(v));
		return McpXstrdup(buf);
	}
	if (json_is_real(v))
	{
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
		return McpXstrdup(buf);
	}
	if (json_is_true(v))
		return McpXstrdup("true");
	if (json_is_false(v))
		return McpXstrdup("false");
	return NULL;
}

/*
 * Mcp-Method, Mcp-Name and, for tools/call of a listed tool, Mcp-Param-*
 * for the parameters its inputSchema marks with x-mcp-header.
 */
struct curl_slist *
McpRoutingHeaders(McpClient *c, json_t *msg, struct curl_slist *h)
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
const char *
McpXHeaderProblem(json_t *tool)
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
void
McpHandleMessage(Xfer *x, json_t *msg)
{
	if (json_is_array(msg))
	{
		size_t		i;
		json_t	   *m;

		json_array_foreach(msg, i, m)
			McpHandleMessage(x, m);
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
				/* answered once a person did (McpAsyncTakeElicitation) */
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
			McpHandleMessage(x, msg);
			json_decref(msg);
		}
	}
	McpSbReset(&x->data);
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
		McpSbAppend(&x->data, v, vl);
		McpSbAppend(&x->data, "\n", 1);
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
			McpSbReset(&x->line);
			if (x->too_big)
				return;
			if (ch == '\r')
				x->skip_lf = 1;
		}
		else
		{
			McpSbAppend(&x->line, &ch, 1);
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
size_t
McpWriteCb(char *ptr, size_t size, size_t nmemb, void *arg)
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
	McpSbAppend(&x->body, ptr, n);
	return n;
}

/*
 * Common easy-handle options of one transfer.  Returns the remaining time, or
 * a value <= 0 when the deadline passed.
 */
long
McpSetupHandle(McpClient *c, CURL *h, long deadline)
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
int
McpCurlFailure(McpClient *c, CURLcode rc, const char *what)
{
	if (rc == CURLE_ABORTED_BY_CALLBACK)
	{
		McpSetError(c, "%s interrupted", what);
		return MCP_ABORTED;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT)
		McpSetError(c, "%s timed out after %ld ms", what, c->timeout_ms);
	else
		McpSetError(c, "%s failed: %s", what,
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
const char *
McpBodyRpcMessage(Xfer *x, json_t **hold)
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

/* Releases everything a transfer holds and zeroes it for reuse. */
void
McpXferFree(Xfer *x)
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
	McpSetupHandle(c, g, deadline);
	gh = curl_slist_append(NULL, "Accept: text/event-stream");
	gh = McpBaseHeaders(c, gh, 1);
	curl_easy_setopt(g, CURLOPT_HTTPHEADER, gh);
	curl_easy_setopt(g, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(g, CURLOPT_WRITEFUNCTION, McpWriteCb);
	curl_easy_setopt(g, CURLOPT_WRITEDATA, &gx);
	curl_easy_setopt(g, CURLOPT_HEADERFUNCTION, McpHeaderCb);
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
	McpXferFree(&gx);
	return result;
}

/* Points the handle's body and header callbacks at x. */
static void
set_xfer_callbacks(McpClient *c, Xfer *x)
{
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, McpWriteCb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, McpHeaderCb);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, x);
}

/*
 * McpRpcSend's first step: encodes msg and POSTs it with the session, version
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
		McpSetError(c, "%s: could not encode the request", what);
		return MCP_ERROR;
	}
	if (McpSetupHandle(c, c->curl, deadline) <= 0)
	{
		free(payload);
		McpSetError(c, "%s timed out after %ld ms", what, c->timeout_ms);
		return MCP_ERROR;
	}
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: application/json, text/event-stream");
	h = McpBaseHeaders(c, h, !is_init);
	if (c->stateless)
		h = McpRoutingHeaders(c, msg, h);
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
 * McpRpcSend's second step: judges the POST's transport result and HTTP
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
		McpSetError(c, "%s: the response is larger than %d bytes", what, MCP_MAX_BODY);
		return 1;
	}
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->response))
	{
		*result = McpCurlFailure(c, rc, what);
		return 1;
	}
	if (status == 404 && c->session_id && !is_init)
	{
		*result = MCP_SESSION_LOST;
		return 1;
	}
	if (status == 401 ||
		(status == 403 && x->www_auth_hdr && McpContainsCi(x->www_auth_hdr, "insufficient_scope")))
	{
		json_t	   *hold;
		const char *m = McpBodyRpcMessage(x, &hold);

		c->auth_status = status;
		free(c->www_auth);
		c->www_auth = x->www_auth_hdr;
		x->www_auth_hdr = NULL;
		McpSetError(c, "%s: the server refused the credentials (HTTP %ld)%s%s", what, status,
				  m ? ": " : "", m ? m : "");
		if (hold)
			json_decref(hold);
		*result = MCP_UNAUTHORIZED;
		return 1;
	}
	if (status < 200 || status >= 300)
	{
		json_t	   *hold;
		const char *m = McpBodyRpcMessage(x, &hold);
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
		if (status == 400 && c->session_id && !is_init && m && McpContainsCi(m, "session"))
			*result = MCP_SESSION_LOST;
		else if (status == 401 || status == 403)
			McpSetError(c, "%s: the server refused the credentials (HTTP %ld)%s%s", what, status,
					  m ? ": " : "", m ? m : "");
		else
			McpSetError(c, "%s: the server answered HTTP %ld%s%s", what, status,
					  m ? ": " : "", m ? m : "");
		if (hold)
			json_decref(hold);
		return 1;
	}
	return 0;
}

/*
 * McpRpcSend's plain-JSON step: a body that is not an SSE stream is one
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
		McpSetError(c, "%s: the server sent an empty answer (HTTP %ld)", what, status);
		return 0;
	}
	j = json_loadb(x->body.data, x->body.len, 0, &jerr);
	if (j == NULL)
	{
		McpSetError(c, "%s: the server did not answer JSON-RPC (invalid JSON at line %d: %s)",
				  what, jerr.line, jerr.text);
		return 0;
	}
	McpHandleMessage(x, j);
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
		McpSetError(c, "%s timed out after %ld ms", what, c->timeout_ms);
		return MCP_ERROR;
	}
	t0 = now_ms();
	while (now_ms() - t0 < wait)
	{
		if (c->abort_cb && c->abort_cb(c->abort_arg))
		{
			McpSetError(c, "%s interrupted", what);
			return MCP_ABORTED;
		}
		sleep_ms(wait - (now_ms() - t0) < 20 ? wait - (now_ms() - t0) : 20);
	}
	return MCP_OK;
}

/*
 * McpRpcSend's resumption step: while an SSE stream closed before our
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
		McpSetupHandle(c, c->curl, deadline);
		h = curl_slist_append(NULL, "Accept: text/event-stream");
		h = McpBaseHeaders(c, h, 1);
		snprintf(line, sizeof(line), "Last-Event-ID: %s", x->last_event_id);
		h = curl_slist_append(h, line);
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
		set_xfer_callbacks(c, x);
		x->have_type = 0;
		x->skip_lf = 0;
		McpSbReset(&x->line);
		McpSbReset(&x->data);
		x->event[0] = '\0';
		rc = curl_easy_perform(c->curl);
		curl_slist_free_all(h);
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
		if (x->response)
			break;
		if (rc != CURLE_OK)
			return McpCurlFailure(c, rc, what);
		if (status < 200 || status >= 300)
		{
			McpSetError(c, "%s: the stream closed before the response and resuming it failed (HTTP %ld)",
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
int
McpRpcSend(McpClient *c, json_t *msg, json_int_t id, const char *what,
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
		McpSetError(c, "could not initialize libcurl");
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
		McpSetError(c, "%s: the server sent no JSON-RPC response with id %lld",
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
	McpXferFree(&x);
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
		McpElicitationApplyDefaults(params, answer);
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
	McpSetupHandle(c, h, now_ms() + (c->timeout_ms < 5000 ? c->timeout_ms : 5000));
	hl = curl_slist_append(hl, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	hl = McpBaseHeaders(c, hl, 1);
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
	McpXferFree(&sink);
}

/*
 * See mcp.h.  Only an "accept" answer is changed: each property of the
 * requested schema that has a default and is absent from content gets it
 * (content is created when missing).
 */
void
McpElicitationApplyDefaults(json_t *params, json_t *answer)
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
