/*-------------------------------------------------------------------------
 *
 * ratelimit.c
 *		The worker's proactive rate limits per LLM provider (docs/worker.md,
 *		"Providers"), and the shared state behind agent.provider_status.
 *
 * One worker process sends every LLM request, so the limiter's buckets
 * live in that process (no lock on the hot path): per provider a count of
 * requests in flight (max_concurrent), a token bucket of requests
 * (requests_per_minute, refilled continuously at rpm/60 a second, holding
 * at most half a second's worth so that a burst of queued runs is spread
 * out) and a bucket of tokens (tokens_per_minute, holding up to ten
 * seconds' worth; a request reserves an estimate of its input, the reply's
 * usage settles the difference).  The response headers of the providers
 * (x-ratelimit-remaining-* / -reset-* of OpenAI, anthropic-ratelimit-* of
 * Anthropic) tighten the buckets: a provider that says none are left is
 * not called again before the reset it announces, nor after a 429 before
 * its Retry-After.  A run that finds no headroom stays in its slot
 * (ready) and the worker sleeps until the bucket refills or a request ends:
 * no busy loop, no 429 storm.
 *
 * Shared memory holds what the worker publishes of each bucket (for
 * agent.provider_status, any backend); the configuration generation that
 * tells the worker to reload providers is config_gen.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "ratelimit.h"

PG_FUNCTION_INFO_V1(pg_agents_provider_headroom);

typedef struct RateStatus
{
	bool		used;
	char		name[64];
	int			in_flight;
	int			max_concurrent;
	int			rpm;
	int			tpm;
	double		req_available;	/* -1: no limit */
	double		tok_available;	/* -1: no limit */
	TimestampTz limited_until;
	uint64		requests;
	uint64		waits;
	uint64		rate_limited;	/* 429 replies */
	char		last_error[256];
	TimestampTz last_error_at;
} RateStatus;

typedef struct RateShared
{
	slock_t		mutex;
	RateStatus	st[RATELIMIT_MAX];
} RateShared;

static RateShared *rate_shared = NULL;
static shmem_request_hook_type prev_request_hook = NULL;
static shmem_startup_hook_type prev_startup_hook = NULL;

/* ---- shared memory ---- */

/* shmem_request_hook: asks for the shared provider state's space. */
static void
RateShmemRequest(void)
{
	if (prev_request_hook)
		prev_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(RateShared)));
}

/*
 * shmem_startup_hook: attaches to the shared provider state, zeroing it when
 * this process creates it.
 */
static void
RateShmemStartup(void)
{
	bool		found;

	if (prev_startup_hook)
		prev_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	rate_shared = ShmemInitStruct("pg_agents providers", sizeof(RateShared), &found);
	if (!found)
	{
		memset(rate_shared, 0, sizeof(RateShared));
		SpinLockInit(&rate_shared->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* from _PG_init */
void
RateInitShmem(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_request_hook = shmem_request_hook;
	shmem_request_hook = RateShmemRequest;
	prev_startup_hook = shmem_startup_hook;
	shmem_startup_hook = RateShmemStartup;
}

/* ---- the worker's buckets ---- */

typedef struct RateBucket
{
	bool		used;
	int64		provider_id;	/* 0: the default provider (the GUCs) */
	char		name[64];
	int			max_concurrent; /* 0: none */
	int			rpm;
	int			tpm;
	int			in_flight;
	double		req_level;
	double		tok_level;
	TimestampTz refilled_at;
	TimestampTz limited_until;	/* announced by the provider: nothing before */
	uint64		requests;
	uint64		waits;
	uint64		rate_limited;
	char		last_error[256];
	TimestampTz last_error_at;
} RateBucket;

static RateBucket buckets[RATELIMIT_MAX];

/* Burst size of the request bucket: half a second of rpm, at least 1. */
static double
ReqCapacity(RateBucket *b)
{
	return Max(1.0, b->rpm / 120.0);
}

/* Burst size of the token bucket: ten seconds of tpm, at least 1. */
static double
TokCapacity(RateBucket *b)
{
	return Max(1.0, b->tpm / 6.0);
}

/*
 * Adds to the request and token buckets of b what their rates give for the
 * time since the last refill, capped at their capacities.
 */
static void
Refill(RateBucket *b, TimestampTz now)
{
	double		secs = (double) (now - b->refilled_at) / 1000000.0;

	if (secs <= 0)
		return;
	if (b->rpm > 0)
		b->req_level = Min(ReqCapacity(b), b->req_level + secs * b->rpm / 60.0);
	if (b->tpm > 0)
		b->tok_level = Min(TokCapacity(b), b->tok_level + secs * b->tpm / 60.0);
	b->refilled_at = now;
}

/*
 * Copies bucket h (limits, levels, counters, last error) to shared memory,
 * where agent._provider_headroom() reads it.  A level is -1 when that limit is
 * off.  No-op without shared memory.
 */
static void
Publish(int h)
{
	RateBucket *b = &buckets[h];
	RateStatus *st;

	if (rate_shared == NULL)
		return;
	st = &rate_shared->st[h];
	SpinLockAcquire(&rate_shared->mutex);
	st->used = b->used;
	memcpy(st->name, b->name, sizeof(st->name));
	st->in_flight = b->in_flight;
	st->max_concurrent = b->max_concurrent;
	st->rpm = b->rpm;
	st->tpm = b->tpm;
	st->req_available = b->rpm > 0 ? b->req_level : -1;
	st->tok_available = b->tpm > 0 ? b->tok_level : -1;
	st->limited_until = b->limited_until;
	st->requests = b->requests;
	st->waits = b->waits;
	st->rate_limited = b->rate_limited;
	memcpy(st->last_error, b->last_error, sizeof(st->last_error));
	st->last_error_at = b->last_error_at;
	SpinLockRelease(&rate_shared->mutex);
}

/*
 * The bucket of a provider (created, or its limits updated), -1 when the
 * table of buckets is full (then the provider is not limited).
 */
int
RateLimitFor(int64 provider_id, const char *name, int max_concurrent, int rpm, int tpm)
{
	int			h = -1;

	for (int i = 0; i < RATELIMIT_MAX; i++)
	{
		if (buckets[i].used && buckets[i].provider_id == provider_id)
		{
			h = i;
			break;
		}
		if (!buckets[i].used && h < 0)
			h = i;
	}
	if (h < 0)
		return -1;
	if (!buckets[h].used || buckets[h].provider_id != provider_id)
	{
		memset(&buckets[h], 0, sizeof(RateBucket));
		buckets[h].used = true;
		buckets[h].provider_id = provider_id;
		buckets[h].refilled_at = GetCurrentTimestamp();
		buckets[h].req_level = Max(1.0, rpm / 120.0);
		buckets[h].tok_level = Max(1.0, tpm / 6.0);
	}
	strlcpy(buckets[h].name, name ? name : "", sizeof(buckets[h].name));
	buckets[h].max_concurrent = Max(max_concurrent, 0);
	buckets[h].rpm = Max(rpm, 0);
	buckets[h].tpm = Max(tpm, 0);
	Refill(&buckets[h], GetCurrentTimestamp());
	Publish(h);
	return h;
}

/* buckets of providers that no longer exist are dropped (keep: provider ids alive) */
void
RateLimitForget(int64 *alive, int n)
{
	for (int i = 0; i < RATELIMIT_MAX; i++)
	{
		bool		keep = false;

		if (!buckets[i].used || buckets[i].provider_id == 0 || buckets[i].in_flight > 0)
			continue;
		for (int j = 0; j < n; j++)
			if (alive[j] == buckets[i].provider_id)
				keep = true;
		if (!keep)
		{
			memset(&buckets[i], 0, sizeof(RateBucket));
			Publish(i);
		}
	}
}

/*
 * Whether a request of about est_tokens may start now.  When it may, its
 * share is taken (RateLimitDone gives back the concurrency).  Otherwise
 * *wait_ms is how long until the buckets allow it, or -1 when it waits for
 * a request in flight to end (the concurrency cap).
 */
bool
RateLimitAdmit(int h, int64 est_tokens, long *wait_ms)
{
	RateBucket *b;
	TimestampTz now;
	double		wait = 0;

	*wait_ms = 0;
	if (h < 0 || h >= RATELIMIT_MAX || !buckets[h].used)
		return true;
	b = &buckets[h];
	now = GetCurrentTimestamp();
	if (b->limited_until > now)
	{
		*wait_ms = (long) ((b->limited_until - now) / 1000) + 1;
		return false;
	}
	if (b->max_concurrent > 0 && b->in_flight >= b->max_concurrent)
	{
		*wait_ms = -1;
		return false;
	}
	Refill(b, now);
	if (b->rpm > 0 && b->req_level < 1.0)
		wait = Max(wait, (1.0 - b->req_level) * 60000.0 / b->rpm);
	/* a request larger than the bucket goes when the bucket is full */
	if (b->tpm > 0 && b->tok_level < Min((double) est_tokens, TokCapacity(b)))
		wait = Max(wait, (Min((double) est_tokens, TokCapacity(b)) - b->tok_level) * 60000.0 / b->tpm);
	if (wait > 0)
	{
		*wait_ms = (long) ceil(wait);
		return false;
	}
	if (b->rpm > 0)
		b->req_level -= 1.0;
	if (b->tpm > 0)
		b->tok_level -= (double) est_tokens;
	b->in_flight++;
	b->requests++;
	Publish(h);
	return true;
}

/* a request started to wait for headroom (counted once per wait) */
void
RateLimitCountWait(int h)
{
	if (h < 0 || h >= RATELIMIT_MAX || !buckets[h].used)
		return;
	buckets[h].waits++;
	Publish(h);
}

/* duration like "1s", "6m0s", "20ms", "1h2m3.5s" in ms; -1 when not one */
static long
ParseDuration(const char *s)
{
	double		total = 0;
	bool		any = false;

	while (*s)
	{
		char	   *end;
		double		v = strtod(s, &end);

		if (end == s)
			return -1;
		s = end;
		if (strncmp(s, "ms", 2) == 0)
			total += v, s += 2;
		else if (*s == 'h')
			total += v * 3600000.0, s++;
		else if (*s == 'm')
			total += v * 60000.0, s++;
		else if (*s == 's')
			total += v * 1000.0, s++;
		else if (*s == '\0')
			total += v * 1000.0;	/* bare seconds */
		else
			return -1;
		any = true;
	}
	return any ? (long) total : -1;
}

/* a reset header in ms from now: a duration (OpenAI) or an RFC 3339 time (Anthropic) */
static long
ResetMs(const char *v)
{
	long		d;
	int			y, mo, day, hh, mi;
	double		ss;

	if (v == NULL || v[0] == '\0')
		return -1;
	d = ParseDuration(v);
	if (d >= 0)
		return d;
	if (sscanf(v, "%d-%d-%dT%d:%d:%lf", &y, &mo, &day, &hh, &mi, &ss) == 6)
	{
		struct pg_tm tm;
		TimestampTz t;
		fsec_t		fsec = (fsec_t) ((ss - floor(ss)) * 1000000.0);

		memset(&tm, 0, sizeof(tm));
		tm.tm_year = y;
		tm.tm_mon = mo;
		tm.tm_mday = day;
		tm.tm_hour = hh;
		tm.tm_min = mi;
		tm.tm_sec = (int) floor(ss);
		if (tm2timestamp(&tm, fsec, NULL, &t) == 0)	/* UTC ("Z") */
		{
			TimestampTz now = GetCurrentTimestamp();

			return t > now ? (long) ((t - now) / 1000) : 0;
		}
	}
	return -1;
}

/* Records msg (truncated) as the bucket's last error, stamped now. */
static void
NoteError(RateBucket *b, const char *msg)
{
	strlcpy(b->last_error, msg, sizeof(b->last_error));
	b->last_error_at = GetCurrentTimestamp();
}

/*
 * A request ended: its concurrency share comes back, the token bucket
 * settles the estimate against the usage (used < 0: unknown), and what the
 * provider said of its limits (headers, a 429) tightens the buckets.
 * error: the failure as recorded (no secret in it), NULL on success.
 */
void
RateLimitDone(int h, int64 est_tokens, int64 used, long status, long retry_after_ms,
			  const RateHeaders *hd, const char *error)
{
	RateBucket *b;
	TimestampTz now;
	long		block = -1;

	if (h < 0 || h >= RATELIMIT_MAX || !buckets[h].used)
		return;
	b = &buckets[h];
	now = GetCurrentTimestamp();
	if (b->in_flight > 0)
		b->in_flight--;
	Refill(b, now);
	if (b->tpm > 0 && used >= 0)
		b->tok_level -= (double) (used - est_tokens);
	if (hd)
	{
		if (hd->remaining_requests == 0)
			block = Max(block, ResetMs(hd->reset_requests));
		else if (hd->remaining_requests > 0 && b->rpm > 0 && hd->remaining_requests < b->req_level)
			b->req_level = (double) hd->remaining_requests;
		if (hd->remaining_tokens == 0)
			block = Max(block, ResetMs(hd->reset_tokens));
		else if (hd->remaining_tokens > 0 && b->tpm > 0 && hd->remaining_tokens < b->tok_level)
			b->tok_level = (double) hd->remaining_tokens;
	}
	if (status == 429)
	{
		b->rate_limited++;
		/* without any hint: a second, so that the other runs do not all retry at once */
		block = Max(block, retry_after_ms >= 0 ? retry_after_ms : 1000);
	}
	if (block > 0)
	{
		TimestampTz until = TimestampTzPlusMilliseconds(now, Min(block, 600000));

		if (until > b->limited_until)
			b->limited_until = until;
	}
	if (error)
		NoteError(b, error);
	Publish(h);
}

/* ---- agent._provider_headroom() ---- */

/*
 * agent._provider_headroom() RETURNS TABLE(name, in_flight, max_concurrent,
 * requests_available, tokens_available, limited_until, requests, waits,
 * rate_limited, last_error, last_error_at): what the worker last published
 * of each provider it called ('' is the default provider of the GUCs).
 */
Datum
pg_agents_provider_headroom(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (rate_shared == NULL)
		return (Datum) 0;
	for (int i = 0; i < RATELIMIT_MAX; i++)
	{
		RateStatus	c;
		Datum		values[11];
		bool		nulls[11];

		SpinLockAcquire(&rate_shared->mutex);
		memcpy(&c, &rate_shared->st[i], sizeof(RateStatus));
		SpinLockRelease(&rate_shared->mutex);
		if (!c.used)
			continue;
		c.name[sizeof(c.name) - 1] = '\0';
		c.last_error[sizeof(c.last_error) - 1] = '\0';
		memset(nulls, 0, sizeof(nulls));
		values[0] = CStringGetTextDatum(c.name);
		values[1] = Int32GetDatum(c.in_flight);
		values[2] = Int32GetDatum(c.max_concurrent);
		nulls[2] = c.max_concurrent <= 0;
		values[3] = Float8GetDatum(floor(c.req_available));
		nulls[3] = c.rpm <= 0;
		values[4] = Float8GetDatum(floor(c.tok_available));
		nulls[4] = c.tpm <= 0;
		values[5] = TimestampTzGetDatum(c.limited_until);
		nulls[5] = c.limited_until == 0;
		values[6] = Int64GetDatum((int64) c.requests);
		values[7] = Int64GetDatum((int64) c.waits);
		values[8] = Int64GetDatum((int64) c.rate_limited);
		values[9] = CStringGetTextDatum(c.last_error);
		nulls[9] = c.last_error[0] == '\0';
		values[10] = TimestampTzGetDatum(c.last_error_at);
		nulls[10] = c.last_error_at == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---- response headers (from http.c's header callback) ---- */

/*
 * Whether the header line (n bytes) is header name (ASCII case ignored);
 * if so *val and *vlen give its value, without the surrounding blanks and
 * the line end.
 */
static bool
HeaderIs(const char *line, size_t n, const char *name, const char **val, size_t *vlen)
{
	size_t		l = strlen(name);

	if (n <= l + 1 || pg_strncasecmp(line, name, l) != 0 || line[l] != ':')
		return false;
	*val = line + l + 1;
	*vlen = n - l - 1;
	while (*vlen > 0 && (**val == ' ' || **val == '\t'))
		(*val)++, (*vlen)--;
	while (*vlen > 0 && ((*val)[*vlen - 1] == '\r' || (*val)[*vlen - 1] == '\n' || (*val)[*vlen - 1] == ' '))
		(*vlen)--;
	return true;
}

/*
 * A header value (len bytes at v) as a non-negative integer, -1 when it is
 * empty, too long or not a plain number.
 */
static long
HeaderLong(const char *v, size_t len)
{
	char		buf[32];
	char	   *end;
	long		x;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, v, len);
	buf[len] = '\0';
	x = strtol(buf, &end, 10);
	return (end != buf && *end == '\0' && x >= 0) ? x : -1;
}

/* Copies the len bytes at v into dst (size bytes), truncated and terminated. */
static void
HeaderCopy(char *dst, size_t size, const char *v, size_t len)
{
	len = Min(len, size - 1);
	memcpy(dst, v, len);
	dst[len] = '\0';
}

/* Resets rh to "no header seen": the remaining counts are -1 (not said). */
void
RateHeadersInit(RateHeaders *rh)
{
	memset(rh, 0, sizeof(*rh));
	rh->remaining_requests = -1;
	rh->remaining_tokens = -1;
}

/* one header line of a reply: the rate-limit headers of both providers */
void
RateHeaderParse(RateHeaders *rh, const char *line, size_t n)
{
	const char *v;
	size_t		vl;

	if (n < 12 || (line[0] != 'x' && line[0] != 'X' && line[0] != 'a' && line[0] != 'A'))
		return;
	if (HeaderIs(line, n, "x-ratelimit-remaining-requests", &v, &vl) ||
		HeaderIs(line, n, "anthropic-ratelimit-requests-remaining", &v, &vl))
		rh->remaining_requests = HeaderLong(v, vl);
	else if (HeaderIs(line, n, "x-ratelimit-remaining-tokens", &v, &vl) ||
			 HeaderIs(line, n, "anthropic-ratelimit-tokens-remaining", &v, &vl))
		rh->remaining_tokens = HeaderLong(v, vl);
	else if (HeaderIs(line, n, "x-ratelimit-reset-requests", &v, &vl) ||
			 HeaderIs(line, n, "anthropic-ratelimit-requests-reset", &v, &vl))
		HeaderCopy(rh->reset_requests, sizeof(rh->reset_requests), v, vl);
	else if (HeaderIs(line, n, "x-ratelimit-reset-tokens", &v, &vl) ||
			 HeaderIs(line, n, "anthropic-ratelimit-tokens-reset", &v, &vl))
		HeaderCopy(rh->reset_tokens, sizeof(rh->reset_tokens), v, vl);
}
