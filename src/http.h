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

#include "ratelimit.h"

struct LlmStream;

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
	RateHeaders rl;				/* rate-limit headers of the reply (ratelimit.c) */
	CURLcode	result;
	bool		done;
	char		errbuf[CURL_ERROR_SIZE];
	void	   *owner;
	int			kind;			/* HTTP_LLM, or MCP transfers (mcp_tools.c) */
	bool		external;		/* easy handle owned by someone else (HttpAttach) */
	struct LlmStream *stream;	/* a streamed reply: parsed as it arrives (borrowed) */
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
extern void HttpSetStream(HttpRequest *req, struct LlmStream *st);

#endif							/* PG_AGENTS_HTTP_H */
