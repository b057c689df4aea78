/*-------------------------------------------------------------------------
 *
 * http.h
 *		HTTP of the worker (http.c): libcurl multi, waited on together with
 *		the latch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_HTTP_H
#define PG_AGENTS_HTTP_H

#include <curl/curl.h>

/*
 * What the owner of a request hears of its reply as it arrives (the
 * transport knows nothing of what it carries): every header line, and the
 * body of a streamed 200 reply (text/event-stream), fed instead of being
 * buffered; a body hook that returns false aborts the transfer.
 */
typedef void (*HttpHeaderHook) (void *arg, const char *line, size_t n);
typedef bool (*HttpStreamHook) (void *arg, const char *data, size_t n);

typedef struct HttpRequest
{
	CURL	   *easy;
	struct curl_slist *headers;
	char	   *body;			/* malloc'd request body */
	char	   *resp;			/* malloc'd response body */
	size_t		resp_len;
	size_t		resp_cap;
	bool		resp_too_big;	/* stopped reading at max_bytes */
	size_t		max_bytes;		/* pg_agents.max_reply_bytes */
	long		status;			/* HTTP status, 0 when none */
	long		retry_after_ms; /* Retry-After header, -1 when absent */
	CURLcode	result;
	bool		done;
	char		errbuf[CURL_ERROR_SIZE];
	void	   *owner;
	int			kind;			/* HTTP_LLM, or MCP transfers (mcp_tools.c) */
	bool		external;		/* easy handle owned by someone else (HttpAttach) */
	HttpHeaderHook on_header;	/* HttpSetHeaderHook, NULL: none */
	void	   *header_arg;
	HttpStreamHook on_stream;	/* HttpSetStream: a streamed reply's body, NULL: none */
	void	   *stream_arg;
	int			stream_mode;	/* 0 undecided, 1 parsed as a stream, 2 buffered (an error) */
	char		request_id[128];	/* x-request-id / request-id response header */
} HttpRequest;

#define HTTP_LLM		0
#define HTTP_MCP		1		/* an MCP tools/call of a slot */
#define HTTP_MCP_REPLY	2		/* an answer to a server's request: freed when done */

extern void HttpInit(void);
extern HttpRequest *HttpStart(const char *url, struct curl_slist *headers,
							  char *body, long timeout_ms, void *owner);
extern bool HttpWait(long timeout_ms);	/* true when the latch was set */
extern HttpRequest *HttpAttach(CURL *easy, int kind, void *owner);
extern HttpRequest *HttpNextDone(void);
extern void HttpFree(HttpRequest *req);
extern int	HttpInFlight(void);
extern void HttpPerform(void);	/* non-blocking progress */
extern void HttpSetHeaderHook(HttpRequest *req, HttpHeaderHook fn, void *arg);
extern void HttpSetStream(HttpRequest *req, HttpStreamHook fn, void *arg);

#endif							/* PG_AGENTS_HTTP_H */
