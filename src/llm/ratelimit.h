/*-------------------------------------------------------------------------
 *
 * ratelimit.h
 *		Provider rate limits (ratelimit.c, docs/worker.md): the shared buckets
 *		per provider and what a reply says of the provider's limits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_RATELIMIT_H
#define PG_AGENTS_RATELIMIT_H

#include <stddef.h>

#define RATELIMIT_MAX 64

extern void RateInitShmem(void);

/* what a reply says of the provider's limits */
typedef struct RateHeaders
{
	long		remaining_requests; /* -1: absent */
	long		remaining_tokens;
	char		reset_requests[40]; /* "1s", "6m0s" or an RFC 3339 time */
	char		reset_tokens[40];
} RateHeaders;

extern void RateHeadersInit(RateHeaders *rh);
extern void RateHeaderParse(RateHeaders *rh, const char *line, size_t n);

/* the worker's buckets per provider */
extern int	RateLimitFor(int64 provider_id, const char *name, int max_concurrent, int rpm, int tpm);
extern void RateLimitForget(int64 *alive, int n);
extern bool RateLimitAdmit(int h, int64 est_tokens, long *wait_ms);
extern void RateLimitCountWait(int h);
extern void RateLimitDone(int h, int64 est_tokens, int64 used, long status, long retry_after_ms,
						  const RateHeaders *hd, const char *error);

#endif							/* PG_AGENTS_RATELIMIT_H */
