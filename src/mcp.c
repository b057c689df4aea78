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
	McpAbortCallback abort_cb;
	void	   *abort_arg;
	char		error[1024];
	char		curl_error[CURL_ERROR_SIZE];
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
} Xfer;

static int	curl_ready = 0;

/* ---------------------------------------------------------------------- */
/* small helpers														  */
/* ---------------------------------------------------------------------- */

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

static void
sb_reset(StrBuf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static void
sb_free(StrBuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

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

static void
set_error(McpClient *c, const char *fmt,...)
{
	va_list		ap;
	const char *key;
	json_t	   *val;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);

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

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

static int
ascii_prefix_ci(const char *s, const char *prefix)
{
	return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

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
	c->curl = curl_easy_init();
	return c;
}

void
mcp_client_set_abort(McpClient *c, McpAbortCallback cb, void *arg)
{
	c->abort_cb = cb;
	c->abort_arg = arg;
}

void
mcp_client_set_timeout(McpClient *c, long timeout_ms)
{
	if (timeout_ms > 0)
		c->timeout_ms = timeout_ms;
}

const char *
mcp_client_error(McpClient *c)
{
	return c->error;
}

const char *
mcp_client_protocol_version(McpClient *c)
{
	return c->initialized ? c->protocol_version : NULL;
}

const char *
mcp_client_session_id(McpClient *c)
{
	return c->session_id;
}

json_t *
mcp_client_server_info(McpClient *c)
{
	return c->server_info;
}

int
mcp_client_initializations(McpClient *c)
{
	return c->initializations;
}

/* ---------------------------------------------------------------------- */
/* libcurl plumbing														  */
/* ---------------------------------------------------------------------- */

static int
progress_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow,
			curl_off_t ultotal, curl_off_t ulnow)
{
	McpClient  *c = (McpClient *) arg;

	if (c->abort_cb && c->abort_cb(c->abort_arg))
		return 1;
	return 0;
}

static size_t
header_cb(char *buf, size_t size, size_t nitems, void *arg)
{
	Xfer	   *x = (Xfer *) arg;
	size_t		n = size * nitems;

	if (n > 15 && ascii_prefix_ci(buf, "mcp-session-id:"))
	{
		const char *v = buf + 15;
		size_t		vl = n - 15;

		while (vl > 0 && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		free(x->session_hdr);
		x->session_hdr = malloc(vl + 1);
		if (x->session_hdr == NULL)
			abort();
		memcpy(x->session_hdr, v, vl);
		x->session_hdr[vl] = '\0';
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
		if (strcasecmp(key, "mcp-session-id") == 0 ||
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
	if (with_version && c->initialized)
	{
		snprintf(line, sizeof(line), "MCP-Protocol-Version: %s", c->protocol_version);
		h = curl_slist_append(h, line);
	}
	return h;
}

static void reply_to_server_request(McpClient *c, json_t *msg);

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
		/* a server request gets an answer, a notification is skipped */
		if (json_object_get(msg, "id") && !json_is_null(json_object_get(msg, "id")))
			reply_to_server_request(x->c, msg);
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

static size_t
write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	Xfer	   *x = (Xfer *) arg;
	size_t		n = size * nmemb;

	if (!x->have_type)
	{
		char	   *ct = NULL;

		curl_easy_getinfo(x->c->curl, CURLINFO_CONTENT_TYPE, &ct);
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
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
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

static void
xfer_free(Xfer *x)
{
	sb_free(&x->body);
	sb_free(&x->line);
	sb_free(&x->data);
	free(x->last_event_id);
	free(x->session_hdr);
	if (x->response)
		json_decref(x->response);
	memset(x, 0, sizeof(*x));
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
	char	   *payload;
	struct curl_slist *h = NULL;
	CURLcode	rc;
	long		status = 0;
	long		deadline = now_ms() + c->timeout_ms;
	int			resumes = 0;
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
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, payload);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long) strlen(payload));
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &x);

	rc = curl_easy_perform(c->curl);
	curl_slist_free_all(h);
	h = NULL;
	free(payload);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);

	if (x.too_big)
	{
		set_error(c, "%s: the response is larger than %d bytes", what, MCP_MAX_BODY);
		goto done;
	}
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x.response))
	{
		result = curl_failure(c, rc, what);
		goto done;
	}
	if (status == 404 && c->session_id && !is_init)
	{
		result = MCP_SESSION_LOST;
		goto done;
	}
	if (status < 200 || status >= 300)
	{
		json_t	   *hold;
		const char *m = body_rpc_message(&x, &hold);

		/*
		 * The TypeScript SDK's example servers (server-everything among them)
		 * answer 400 "No valid session ID" instead of 404 once they forgot a
		 * session: treated as a lost session as well.
		 */
		if (status == 400 && c->session_id && !is_init && m && contains_ci(m, "session"))
			result = MCP_SESSION_LOST;
		else if (status == 401 || status == 403)
			set_error(c, "%s: the server refused the credentials (HTTP %ld)%s%s", what, status,
					  m ? ": " : "", m ? m : "");
		else
			set_error(c, "%s: the server answered HTTP %ld%s%s", what, status,
					  m ? ": " : "", m ? m : "");
		if (hold)
			json_decref(hold);
		goto done;
	}
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
	if (!x.is_sse)
	{
		json_error_t jerr;
		json_t	   *j;

		if (x.body.len == 0)
		{
			set_error(c, "%s: the server sent an empty answer (HTTP %ld)", what, status);
			goto done;
		}
		j = json_loadb(x.body.data, x.body.len, 0, &jerr);
		if (j == NULL)
		{
			set_error(c, "%s: the server did not answer JSON-RPC (invalid JSON at line %d: %s)",
					  what, jerr.line, jerr.text);
			goto done;
		}
		handle_message(&x, j);
		json_decref(j);
	}

	/* an SSE stream closed before our response: resume it */
	while (x.response == NULL && x.is_sse && x.last_event_id && resumes < MCP_MAX_RESUMES)
	{
		long		wait = x.retry_ms >= 0 ? x.retry_ms : MCP_DEFAULT_RETRY;
		long		t0;
		char		line[1024];

		if (now_ms() + wait >= deadline)
		{
			set_error(c, "%s timed out after %ld ms", what, c->timeout_ms);
			goto done;
		}
		t0 = now_ms();
		while (now_ms() - t0 < wait)
		{
			if (c->abort_cb && c->abort_cb(c->abort_arg))
			{
				set_error(c, "%s interrupted", what);
				result = MCP_ABORTED;
				goto done;
			}
			sleep_ms(wait - (now_ms() - t0) < 20 ? wait - (now_ms() - t0) : 20);
		}
		resumes++;
		setup_handle(c, c->curl, deadline);
		h = curl_slist_append(NULL, "Accept: text/event-stream");
		h = base_headers(c, h, 1);
		snprintf(line, sizeof(line), "Last-Event-ID: %s", x.last_event_id);
		h = curl_slist_append(h, line);
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_cb);
		curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &x);
		curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, header_cb);
		curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &x);
		x.have_type = 0;
		x.skip_lf = 0;
		sb_reset(&x.line);
		sb_reset(&x.data);
		x.event[0] = '\0';
		rc = curl_easy_perform(c->curl);
		curl_slist_free_all(h);
		h = NULL;
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
		if (x.response)
			break;
		if (rc != CURLE_OK)
		{
			result = curl_failure(c, rc, what);
			goto done;
		}
		if (status < 200 || status >= 300)
		{
			set_error(c, "%s: the stream closed before the response and resuming it failed (HTTP %ld)",
					  what, status);
			goto done;
		}
		if (!x.is_sse)
			break;
	}
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

/* Answers a request the server made in the middle of a stream. */
static void
reply_to_server_request(McpClient *c, json_t *msg)
{
	CURL	   *h = curl_easy_init();
	json_t	   *reply;
	char	   *payload;
	struct curl_slist *hl = NULL;
	const char *method = json_string_value(json_object_get(msg, "method"));
	Xfer		sink;

	if (h == NULL)
		return;
	if (method && strcmp(method, "ping") == 0)
		reply = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"), "result");
	else
		reply = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"),
						  "error", "code", -32601, "message", "Method not found");
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

static int
supported_version(const char *v)
{
	return v && (strcmp(v, "2025-11-25") == 0 ||
				 strcmp(v, "2025-06-18") == 0 ||
				 strcmp(v, "2025-03-26") == 0);
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

int
mcp_initialize(McpClient *c)
{
	json_t	   *req;
	json_t	   *resp = NULL;
	json_t	   *result;
	json_t	   *note;
	char	   *session = NULL;
	const char *version;
	int			rc;
	json_int_t	id = c->next_id++;

	/* a fresh session: forget the old one */
	free(c->session_id);
	c->session_id = NULL;
	c->initialized = 0;
	if (c->server_info)
	{
		json_decref(c->server_info);
		c->server_info = NULL;
	}
	c->initializations++;

	req = json_pack("{s:s, s:I, s:s, s:{s:s, s:{}, s:{s:s, s:s}}}",
					"jsonrpc", "2.0", "id", id, "method", "initialize",
					"params", "protocolVersion", MCP_PROTOCOL_VERSION,
					"capabilities",
					"clientInfo", "name", MCP_CLIENT_NAME, "version", MCP_CLIENT_VERSION);
	rc = rpc_send(c, req, id, "initialize", &resp, &session);
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
	if (!supported_version(version))
	{
		set_error(c, "initialize: unsupported protocol version \"%.40s\" (supported: 2025-11-25, 2025-06-18, 2025-03-26)",
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

	note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
	rc = rpc_send(c, note, -1, "notifications/initialized", NULL, NULL);
	json_decref(note);
	if (rc != MCP_OK)
	{
		c->initialized = 0;
		return rc;
	}
	return MCP_OK;
}

/*
 * One request: initialize first if needed; on a lost session, initialize
 * again and retry once.  On MCP_OK *result is the "result" member; on
 * MCP_RPC_ERROR it is the "error" member.
 */
static int
request(McpClient *c, const char *method, json_t *params, json_t **result)
{
	int			attempt;

	*result = NULL;
	for (attempt = 0; attempt < 2; attempt++)
	{
		json_t	   *req;
		json_t	   *resp = NULL;
		json_int_t	id;
		int			rc;

		if (!c->initialized)
		{
			rc = mcp_initialize(c);
			if (rc != MCP_OK)
				return rc;
		}
		id = c->next_id++;
		req = json_pack("{s:s, s:I, s:s, s:O}", "jsonrpc", "2.0", "id", id,
						"method", method, "params", params);
		rc = rpc_send(c, req, id, method, &resp, NULL);
		json_decref(req);
		if (rc == MCP_SESSION_LOST)
		{
			/* the server forgot us (restart, expiry): a new session, once */
			c->initialized = 0;
			free(c->session_id);
			c->session_id = NULL;
			if (attempt == 0)
				continue;
			set_error(c, "%s: the server lost the session again right after a new initialization", method);
			return MCP_ERROR;
		}
		if (rc != MCP_OK)
			return rc;
		if (json_is_object(json_object_get(resp, "error")))
		{
			rpc_error_text(c, method, json_object_get(resp, "error"));
			*result = json_incref(json_object_get(resp, "error"));
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
	return MCP_ERROR;
}

int
mcp_list_tools(McpClient *c, json_t **tools)
{
	json_t	   *all = json_array();
	char	   *cursor = NULL;
	int			pages = 0;

	*tools = NULL;
	for (;;)
	{
		json_t	   *params = cursor ? json_pack("{s:s}", "cursor", cursor) : mcp_json_object();
		json_t	   *result = NULL;
		json_t	   *page;
		json_t	   *next;
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
			free(cursor);
			return rc == MCP_RPC_ERROR ? MCP_ERROR : rc;
		}
		page = json_object_get(result, "tools");
		if (!json_is_array(page))
		{
			set_error(c, "tools/list: the server's result has no tools array");
			json_decref(result);
			json_decref(all);
			free(cursor);
			return MCP_ERROR;
		}
		json_array_foreach(page, i, t)
		{
			if (json_is_object(t) && json_is_string(json_object_get(t, "name")))
				json_array_append(all, t);
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
			free(cursor);
			return MCP_ERROR;
		}
	}
	free(cursor);
	*tools = all;
	return MCP_OK;
}

int
mcp_call_tool(McpClient *c, const char *name, json_t *arguments, json_t **result)
{
	json_t	   *params;
	int			rc;

	if (arguments && json_is_object(arguments))
		params = json_pack("{s:s, s:O}", "name", name, "arguments", arguments);
	else
		params = json_pack("{s:s, s:o}", "name", name, "arguments", mcp_json_object());
	rc = request(c, "tools/call", params, result);
	json_decref(params);
	return rc;
}

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
	if (c->headers)
		json_decref(c->headers);
	if (c->server_info)
		json_decref(c->server_info);
	free(c);
}

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
