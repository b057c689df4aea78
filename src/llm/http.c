/*-------------------------------------------------------------------------
 *
 * http.c
 *		The worker's HTTP client: libcurl's multi interface, whose sockets
 *		are waited on in one WaitEventSet together with the process latch
 *		and postmaster death, so that a wake-up from a backend, a signal or
 *		a response all end the wait at once.  Every wait is bounded.
 *
 * libcurl allocates with malloc: request bodies, header lists and response
 * buffers are malloc'd and released by HttpFree; curl callbacks never
 * palloc or ereport.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include <sys/select.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "http.h"
#include "util/compat.h"
#include "util/guc.h"


static CURLM *multi = NULL;
static int	in_flight = 0;
static int	streaming = 0;		/* transfers in flight that asked for a stream */
static TimestampTz last_perform = 0;

/*
 * While every transfer in flight is a stream, the worker lets its events
 * pile up for STREAM_COALESCE_MS between two reads instead of waking for
 * each (a provider sends an event per token or so): the latch still ends
 * the wait at once, and a request without streaming in flight turns this
 * off.  (10 ms: every read costs a poll and a recv per transfer; the text
 * goes out at most every 100 ms anyway, and a final answer waits up to
 * 10 ms for the next ones, run_calls.c.)
 */
#define STREAM_COALESCE_MS	10

/*
 * on_proc_exit callback: cleans up the multi handle and libcurl's global
 * state.
 */
static void
HttpOnExit(int code, Datum arg)
{
	if (multi)
		curl_multi_cleanup(multi);
	multi = NULL;
	curl_global_cleanup();
}

/*
 * Initializes libcurl and the worker's multi handle, once per process (later
 * calls do nothing), with their cleanup at exit.  ereports ERROR when libcurl
 * cannot be set up.
 */
void
HttpInit(void)
{
	if (multi)
		return;
	if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not initialize libcurl")));
	multi = curl_multi_init();
	if (multi == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not create a libcurl multi handle")));
	on_proc_exit(HttpOnExit, (Datum) 0);
}

/*
 * libcurl write callback of a request.  A 200 text/event-stream reply of a
 * streamed request is fed to its stream hook as it arrives and only counted;
 * any other reply is buffered (malloc'd) in req->resp.  Returns less than it
 * was given, which aborts the transfer, past req->max_bytes (resp_too_big
 * set), when out of memory or when the stream refuses the data.
 */
static size_t
WriteCallback(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	HttpRequest *req = (HttpRequest *) userdata;
	size_t		n = size * nmemb;

	/*
	 * A streamed reply (HTTP 200) is parsed as it arrives, never buffered
	 * whole; an error reply of a streamed request is buffered as usual.
	 */
	if (req->on_stream && req->stream_mode == 0)
	{
		long		code = 0;
		char	   *ctype = NULL;

		/* a server that ignored "stream": its JSON body is read as usual */
		curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(req->easy, CURLINFO_CONTENT_TYPE, &ctype);
		req->stream_mode = code == 200 && ctype && strstr(ctype, "text/event-stream") ? 1 : 2;
	}
	if (req->stream_mode == 1)
	{
		if (req->resp_len + n > req->max_bytes)
		{
			req->resp_too_big = true;
			return 0;
		}
		req->resp_len += n;		/* counted, not kept */
		return req->on_stream(req->stream_arg, ptr, n) ? n : 0;
	}

	/*
	 * pg_agents.max_reply_bytes (read when the request started): past it the
	 * transfer is aborted at once, so that a huge reply is never buffered.
	 */
	if (req->resp_len + n > req->max_bytes)
	{
		req->resp_too_big = true;
		return 0;				/* short: aborts the transfer (CURLE_WRITE_ERROR) */
	}
	if (req->resp_len + n + 1 > req->resp_cap)
	{
		size_t		cap = req->resp_cap ? req->resp_cap : 8192;
		char	   *p;

		while (cap < req->resp_len + n + 1)
			cap *= 2;
		p = realloc(req->resp, cap);
		if (p == NULL)
			return 0;
		req->resp = p;
		req->resp_cap = cap;
	}
	memcpy(req->resp + req->resp_len, ptr, n);
	req->resp_len += n;
	req->resp[req->resp_len] = '\0';
	return n;
}

/*
 * libcurl header callback of a request: keeps the request id (x-request-id or
 * request-id), passes the other lines to the request's header hook (the
 * runs module's: the provider's rate-limit headers), aborts the
 * transfer (resp_too_big set) when Content-Length announces more than
 * req->max_bytes, and turns Retry-After (seconds or an HTTP date) into
 * req->retry_after_ms.
 */
static size_t
HeaderCallback(char *buffer, size_t size, size_t nitems, void *userdata)
{
	HttpRequest *req = (HttpRequest *) userdata;
	size_t		n = size * nitems;
	static const char name[] = "retry-after:";
	static const char clen[] = "content-length:";
	static const char rid1[] = "x-request-id:";
	static const char rid2[] = "request-id:";

	/* the provider's request id, kept in the step of a failed call */
	if ((n > sizeof(rid1) - 1 && pg_strncasecmp(buffer, rid1, sizeof(rid1) - 1) == 0) ||
		(n > sizeof(rid2) - 1 && pg_strncasecmp(buffer, rid2, sizeof(rid2) - 1) == 0))
	{
		const char *v = (const char *) memchr(buffer, ':', n) + 1;
		size_t		len = n - (v - buffer);

		while (len > 0 && (*v == ' ' || *v == '\t'))
			v++, len--;
		while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
			len--;
		len = Min(len, sizeof(req->request_id) - 1);
		memcpy(req->request_id, v, len);
		req->request_id[len] = '\0';
		return n;
	}

	if (req->on_header)
		req->on_header(req->header_arg, buffer, n);

	/* a reply announced larger than the cap is not read at all */
	if (n > sizeof(clen) - 1 && pg_strncasecmp(buffer, clen, sizeof(clen) - 1) == 0)
	{
		char		val[32];
		size_t		len = Min(n - (sizeof(clen) - 1), sizeof(val) - 1);
		unsigned long long announced;

		memcpy(val, buffer + sizeof(clen) - 1, len);
		val[len] = '\0';
		announced = strtoull(val, NULL, 10);
		if (announced > (unsigned long long) req->max_bytes)
		{
			req->resp_too_big = true;
			return 0;			/* aborts the transfer */
		}
	}

	if (n > sizeof(name) - 1 && pg_strncasecmp(buffer, name, sizeof(name) - 1) == 0)
	{
		char		val[128];
		size_t		len = n - (sizeof(name) - 1);
		char	   *s;
		char	   *end;
		double		secs;

		if (len >= sizeof(val))
			len = sizeof(val) - 1;
		memcpy(val, buffer + sizeof(name) - 1, len);
		val[len] = '\0';
		s = val;
		while (*s == ' ' || *s == '\t')
			s++;
		end = s + strlen(s);
		while (end > s && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
			*--end = '\0';
		secs = strtod(s, &end);
		if (end != s && *end == '\0' && secs >= 0)
			req->retry_after_ms = (long) (secs * 1000.0);
		else
		{
			time_t		t = curl_getdate(s, NULL);

			if (t > 0)
			{
				time_t		now = time(NULL);

				req->retry_after_ms = t > now ? (long) (t - now) * 1000 : 0;
			}
		}
	}
	return n;
}

/*
 * Starts one POST.  Takes ownership of headers and body (both malloc'd).
 */
HttpRequest *
HttpStart(const char *url, struct curl_slist *headers, char *body,
		  long timeout_ms, void *owner)
{
	HttpRequest *req;
	CURL	   *easy;
	CURLMcode	mc;

	req = MemoryContextAllocZero(TopMemoryContext, sizeof(HttpRequest));
	req->headers = headers;
	req->body = body;
	req->retry_after_ms = -1;
	req->owner = owner;
	req->max_bytes = (size_t) pg_agents_max_reply_bytes;

	easy = curl_easy_init();
	if (easy == NULL)
	{
		HttpFree(req);
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not create a libcurl handle")));
	}
	req->easy = easy;
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_POST, 1L);
	curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long) strlen(body));
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, WriteCallback);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, req);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, HeaderCallback);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, req);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, req->errbuf);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, req);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "pg_agents");
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");

	mc = curl_multi_add_handle(multi, easy);
	if (mc != CURLM_OK)
	{
		const char *msg = curl_multi_strerror(mc);

		HttpFree(req);
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not start an HTTP request: %s", msg)));
	}
	in_flight++;
	return req;
}

/*
 * Adds a transfer prepared by someone else (an MCP call, src/mcp/mcp_transport.c) to the
 * multi handle: its callbacks are its own, and HttpFree leaves its easy
 * handle to its owner.
 */
HttpRequest *
HttpAttach(CURL *easy, int kind, void *owner)
{
	HttpRequest *req;
	CURLMcode	mc;

	req = MemoryContextAllocZero(TopMemoryContext, sizeof(HttpRequest));
	req->easy = easy;
	req->external = true;
	req->kind = kind;
	req->owner = owner;
	req->retry_after_ms = -1;
	curl_easy_setopt(easy, CURLOPT_PRIVATE, req);
	mc = curl_multi_add_handle(multi, easy);
	if (mc != CURLM_OK)
	{
		const char *msg = curl_multi_strerror(mc);

		pfree(req);
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not start an HTTP request: %s", msg)));
	}
	in_flight++;
	return req;
}

/*
 * Waits up to timeout_ms for the latch, postmaster death (exits) or any
 * activity on the transfers in flight, then lets libcurl progress.
 * Returns true when the latch was set (it is reset here).
 */
bool
HttpWait(long timeout_ms)
{
	WaitEventSet *set;
	WaitEvent	events[64];
	fd_set		rd,
				wr,
				ex;
	int			maxfd = -1;
	int			nfds = 0;
	int			fd;
	int			n;
	int			running;
	long		curl_to = -1;
	bool		latch = false;

	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_ZERO(&ex);
	if (in_flight > 0 && streaming == in_flight && timeout_ms > 0)
	{
		long		since = (long) ((GetCurrentTimestamp() - last_perform) / 1000);

		if (since < STREAM_COALESCE_MS)
		{
			/* the latch only, for the rest of the interval */
			int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
									   Min(timeout_ms, STREAM_COALESCE_MS - since), PG_WAIT_EXTENSION);

			if (rc & WL_LATCH_SET)
			{
				ResetLatch(MyLatch);
				latch = true;
			}
			CHECK_FOR_INTERRUPTS();
			last_perform = GetCurrentTimestamp();
			curl_multi_perform(multi, &running);
			return latch;
		}
	}
	if (in_flight > 0)
	{
		curl_multi_fdset(multi, &rd, &wr, &ex, &maxfd);
		curl_multi_timeout(multi, &curl_to);
		if (curl_to >= 0 && curl_to < timeout_ms)
			timeout_ms = curl_to;
		/* resolving names has no socket yet: look again soon */
		if (maxfd < 0 && (curl_to < 0 || curl_to > 10))
			timeout_ms = Min(timeout_ms, 10);
	}
	for (fd = 0; fd <= maxfd; fd++)
		if (FD_ISSET(fd, &rd) || FD_ISSET(fd, &wr))
			nfds++;

	set = CreateWaitEventSet(PGA_WAIT_EVENT_SET_OWNER, nfds + 2);
	AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (fd = 0; fd <= maxfd; fd++)
	{
		uint32		ev = 0;

		if (FD_ISSET(fd, &rd))
			ev |= WL_SOCKET_READABLE;
		if (FD_ISSET(fd, &wr))
			ev |= WL_SOCKET_WRITEABLE;
		if (ev)
			AddWaitEventToSet(set, ev, fd, NULL, NULL);
	}
	n = WaitEventSetWait(set, timeout_ms < 0 ? 0 : timeout_ms, events, lengthof(events),
						 PG_WAIT_EXTENSION);
	for (int i = 0; i < n; i++)
		if (events[i].events & WL_LATCH_SET)
			latch = true;
	FreeWaitEventSet(set);

	if (latch)
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();

	if (in_flight > 0)
	{
		last_perform = GetCurrentTimestamp();
		curl_multi_perform(multi, &running);
	}
	return latch;
}

/*
 * The next finished transfer, or NULL.  Its result and status are filled.
 */
HttpRequest *
HttpNextDone(void)
{
	CURLMsg    *msg;
	int			left;

	while ((msg = curl_multi_info_read(multi, &left)) != NULL)
	{
		HttpRequest *req = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &req);
		req->result = msg->data.result;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &req->status);
		req->done = true;
		curl_multi_remove_handle(multi, msg->easy_handle);
		in_flight--;
		if (req->on_stream)
			streaming--;
		return req;
	}
	return NULL;
}

/*
 * Frees a request: removes it from the multi handle if still in flight,
 * cleans up its easy handle unless it was attached (HttpAttach), and frees
 * its headers, body and response.  NULL is accepted.
 */
void
HttpFree(HttpRequest *req)
{
	if (req == NULL)
		return;
	if (req->easy)
	{
		if (!req->done)
		{
			curl_multi_remove_handle(multi, req->easy);
			in_flight--;
			if (req->on_stream)
				streaming--;
		}
		if (!req->external)
			curl_easy_cleanup(req->easy);
	}
	if (req->headers)
		curl_slist_free_all(req->headers);
	free(req->body);
	free(req->resp);
	pfree(req);
}

/*
 * A request in flight hears its reply's header lines (HeaderCallback; set
 * before the transfer progresses, HttpPerform or HttpWait).
 */
void
HttpSetHeaderHook(HttpRequest *req, HttpHeaderHook fn, void *arg)
{
	req->on_header = fn;
	req->header_arg = arg;
}

/* a request in flight asks for a stream, fed to fn(arg) as it arrives */
void
HttpSetStream(HttpRequest *req, HttpStreamHook fn, void *arg)
{
	if (fn == NULL || req->on_stream)
		return;
	req->on_stream = fn;
	req->stream_arg = arg;
	if (!req->done)
		streaming++;
}

/* sends what is pending and reads what has arrived, without waiting */
void
HttpPerform(void)
{
	int			running;

	if (in_flight > 0)
		curl_multi_perform(multi, &running);
}

/* The number of transfers in the multi handle (LLM and MCP ones alike). */
int
HttpInFlight(void)
{
	return in_flight;
}
