/*
 * The scripted libcurl of fake_curl.h.  Only what the MCP client
 * (src/mcp/mcp_transport.c, mcp_protocol.c, mcp_async.c) and src/mcp/mcp_oauth.c call
 * is replaced; curl_slist_*, curl_url_* and curl_easy_strerror are libcurl's
 * own (the harness links -lcurl).
 */
#define _GNU_SOURCE				/* memmem */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_curl.h"

typedef struct FakeEasy
{
	curl_write_callback write_cb;
	void	   *write_data;
	curl_write_callback header_cb;
	void	   *header_data;
	char	   *errbuf;
	long		status;
	char		content_type[128];
	int			has_type;
} FakeEasy;

#define FAKE_MULTI_MAX 8

typedef struct FakeMulti
{
	FakeEasy   *h[FAKE_MULTI_MAX];
	int			done[FAKE_MULTI_MAX];
	CURLMsg		msgs[FAKE_MULTI_MAX];
	int			nmsgs;
	int			next_msg;
} FakeMulti;

static const uint8_t *script;
static size_t script_len;
static size_t script_pos;
static uint32_t rng;
static int	transfers;
static long long fake_now_ns = 1000000000LL;

void
fake_curl_script(const uint8_t *data, size_t len, unsigned seed)
{
	script = data;
	script_len = len;
	script_pos = 0;
	rng = 2463534242u ^ (seed * 2654435761u);
	transfers = 0;
}

int
fake_curl_transfers(void)
{
	return transfers;
}

int
fuzz_clock_gettime(clockid_t clk, struct timespec *ts)
{
	(void) clk;
	fake_now_ns += 1000000;
	ts->tv_sec = fake_now_ns / 1000000000LL;
	ts->tv_nsec = fake_now_ns % 1000000000LL;
	return 0;
}

int
fuzz_nanosleep(const struct timespec *req, struct timespec *rem)
{
	fake_now_ns += (long long) req->tv_sec * 1000000000LL + req->tv_nsec;
	if (rem)
		rem->tv_sec = rem->tv_nsec = 0;
	return 0;
}

static uint32_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* the next response of the script: [*start, *end) */
static int
next_response(const char **start, const char **end)
{
	const char *p = (const char *) script + script_pos;
	size_t		left = script_len - script_pos;
	const char *sep;

	if (script == NULL || script_pos >= script_len)
		return 0;
	sep = memmem(p, left, "\n%%\n", 4);
	*start = p;
	*end = sep ? sep : p + left;
	script_pos = sep ? (size_t) (sep - (const char *) script) + 4 : script_len;
	return 1;
}

CURLcode
fake_curl_run(CURL *handle)
{
	FakeEasy   *h = handle;
	const char *p;
	const char *end;
	const char *body;
	const char *line;
	long		status = 0;

	transfers++;
	h->status = 0;
	h->has_type = 0;
	if (!next_response(&p, &end))
	{
		if (getenv("FAKE_CURL_TRACE"))
			fprintf(stderr, "fake_curl: transfer %d: no more responses\n", transfers);
		if (h->errbuf)
			snprintf(h->errbuf, CURL_ERROR_SIZE, "the script has no more responses");
		return CURLE_COULDNT_CONNECT;
	}
	if (getenv("FAKE_CURL_TRACE"))
	{
		fprintf(stderr, "fake_curl: transfer %d: ", transfers);
		for (const char *q = p; q < end && q < p + 120; q++)
			fputc(*q == '\n' ? '|' : *q, stderr);
		fputc('\n', stderr);
	}
	/* the status line */
	while (p < end && *p >= '0' && *p <= '9' && status < 1000)
		status = status * 10 + (*p++ - '0');
	if (status == 0)
	{
		if (h->errbuf)
			snprintf(h->errbuf, CURL_ERROR_SIZE, "scripted connection failure");
		return CURLE_COULDNT_CONNECT;
	}
	h->status = status;
	line = memchr(p, '\n', end - p);
	line = line ? line + 1 : end;
	if (h->header_cb)
	{
		char		st[32];
		int			n = snprintf(st, sizeof(st), "HTTP/1.1 %ld\r\n", status);

		if (h->header_cb(st, 1, n, h->header_data) != (size_t) n)
			return CURLE_WRITE_ERROR;
	}
	/* header lines up to an empty one */
	body = end;
	while (line < end)
	{
		const char *nl = memchr(line, '\n', end - line);
		size_t		n = (nl ? nl : end) - line;
		char		buf[8192];

		if (n == 0 || (n == 1 && line[0] == '\r'))
		{
			body = nl ? nl + 1 : end;
			break;
		}
		if (n > sizeof(buf) - 3)
			n = sizeof(buf) - 3;
		memcpy(buf, line, n);
		if (buf[n - 1] == '\r')
			n--;
		if (n > 13 && strncasecmp(buf, "content-type:", 13) == 0)
		{
			const char *v = buf + 13;
			size_t		vl = n - 13;

			while (vl > 0 && *v == ' ')
				v++, vl--;
			if (vl >= sizeof(h->content_type))
				vl = sizeof(h->content_type) - 1;
			memcpy(h->content_type, v, vl);
			h->content_type[vl] = '\0';
			h->has_type = 1;
		}
		buf[n++] = '\r';
		buf[n++] = '\n';
		if (h->header_cb && h->header_cb(buf, 1, n, h->header_data) != n)
			return CURLE_WRITE_ERROR;
		line = nl ? nl + 1 : end;
	}
	if (h->header_cb && h->header_cb("\r\n", 1, 2, h->header_data) != 2)
		return CURLE_WRITE_ERROR;
	/* the body, in chunks */
	while (body < end)
	{
		size_t		n = 1 + next_rand() % 97;

		if ((rng & 0x300) == 0)
			n = 1;
		if (n > (size_t) (end - body))
			n = end - body;
		if (h->write_cb)
		{
			char	   *copy = malloc(n);	/* curl's buffer is writable */
			size_t		got;

			memcpy(copy, body, n);
			got = h->write_cb(copy, 1, n, h->write_data);
			free(copy);
			if (got != n)
				return CURLE_WRITE_ERROR;
		}
		body += n;
	}
	return CURLE_OK;
}

CURL *
curl_easy_init(void)
{
	return calloc(1, sizeof(FakeEasy));
}

void
curl_easy_cleanup(CURL *h)
{
	free(h);
}

void
curl_easy_reset(CURL *handle)
{
	memset(handle, 0, sizeof(FakeEasy));
}

CURLcode
curl_global_init(long flags)
{
	(void) flags;
	return CURLE_OK;
}

CURLcode
curl_easy_setopt(CURL *handle, CURLoption option,...)
{
	FakeEasy   *h = handle;
	va_list		ap;

	va_start(ap, option);
	switch (option)
	{
		case CURLOPT_WRITEFUNCTION:
			h->write_cb = va_arg(ap, curl_write_callback);
			break;
		case CURLOPT_WRITEDATA:
			h->write_data = va_arg(ap, void *);
			break;
		case CURLOPT_HEADERFUNCTION:
			h->header_cb = va_arg(ap, curl_write_callback);
			break;
		case CURLOPT_HEADERDATA:
			h->header_data = va_arg(ap, void *);
			break;
		case CURLOPT_ERRORBUFFER:
			h->errbuf = va_arg(ap, char *);
			break;
		default:
			break;
	}
	va_end(ap);
	return CURLE_OK;
}

CURLcode
curl_easy_getinfo(CURL *handle, CURLINFO info,...)
{
	FakeEasy   *h = handle;
	va_list		ap;

	va_start(ap, info);
	if (info == CURLINFO_RESPONSE_CODE)
		*va_arg(ap, long *) = h->status;
	else if (info == CURLINFO_CONTENT_TYPE)
		*va_arg(ap, char **) = h->has_type ? h->content_type : NULL;
	else if ((info & CURLINFO_TYPEMASK) == CURLINFO_LONG)
		*va_arg(ap, long *) = 0;
	else if ((info & CURLINFO_TYPEMASK) == CURLINFO_STRING)
		*va_arg(ap, char **) = NULL;
	va_end(ap);
	return CURLE_OK;
}

CURLcode
curl_easy_perform(CURL *h)
{
	return fake_curl_run(h);
}

char *
curl_easy_escape(CURL *h, const char *s, int len)
{
	size_t		n = len > 0 ? (size_t) len : strlen(s);
	char	   *out = malloc(3 * n + 1);
	size_t		o = 0;

	(void) h;
	for (size_t i = 0; i < n; i++)
	{
		unsigned char c = s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~')
			out[o++] = c;
		else
			o += sprintf(out + o, "%%%02X", c);
	}
	out[o] = '\0';
	return out;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *
curl_easy_unescape(CURL *h, const char *s, int len, int *outlen)
{
	size_t		n = len > 0 ? (size_t) len : strlen(s);
	char	   *out = malloc(n + 1);
	size_t		o = 0;

	(void) h;
	for (size_t i = 0; i < n; i++)
	{
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0)
		{
			out[o++] = (char) (hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		}
		else
			out[o++] = s[i];
	}
	out[o] = '\0';
	if (outlen)
		*outlen = (int) o;
	return out;
}

void
curl_free(void *p)
{
	free(p);
}

/* multi: every added handle's transfer runs at the next curl_multi_perform */
CURLM *
curl_multi_init(void)
{
	return calloc(1, sizeof(FakeMulti));
}

CURLMcode
curl_multi_cleanup(CURLM *m)
{
	free(m);
	return CURLM_OK;
}

CURLMcode
curl_multi_add_handle(CURLM *multi, CURL *h)
{
	FakeMulti  *m = multi;

	for (int i = 0; i < FAKE_MULTI_MAX; i++)
		if (m->h[i] == NULL)
		{
			m->h[i] = h;
			m->done[i] = 0;
			return CURLM_OK;
		}
	return CURLM_OUT_OF_MEMORY;
}

CURLMcode
curl_multi_remove_handle(CURLM *multi, CURL *h)
{
	FakeMulti  *m = multi;

	for (int i = 0; i < FAKE_MULTI_MAX; i++)
		if (m->h[i] == h)
			m->h[i] = NULL;
	return CURLM_OK;
}

CURLMcode
curl_multi_perform(CURLM *multi, int *running)
{
	FakeMulti  *m = multi;

	for (int i = 0; i < FAKE_MULTI_MAX; i++)
		if (m->h[i] && !m->done[i])
		{
			CURLcode	rc = fake_curl_run(m->h[i]);

			m->done[i] = 1;
			if (m->nmsgs < FAKE_MULTI_MAX)
			{
				m->msgs[m->nmsgs].msg = CURLMSG_DONE;
				m->msgs[m->nmsgs].easy_handle = m->h[i];
				m->msgs[m->nmsgs].data.result = rc;
				m->nmsgs++;
			}
		}
	*running = 0;
	return CURLM_OK;
}

CURLMsg *
curl_multi_info_read(CURLM *multi, int *left)
{
	FakeMulti  *m = multi;

	if (m->next_msg >= m->nmsgs)
	{
		m->next_msg = m->nmsgs = 0;
		*left = 0;
		return NULL;
	}
	*left = m->nmsgs - m->next_msg - 1;
	return &m->msgs[m->next_msg++];
}

CURLMcode
curl_multi_poll(CURLM *m, struct curl_waitfd extra[], unsigned int n, int timeout_ms, int *numfds)
{
	(void) m, (void) extra, (void) n;
	fake_now_ns += (long long) timeout_ms * 1000000LL;
	if (numfds)
		*numfds = 0;
	return CURLM_OK;
}
