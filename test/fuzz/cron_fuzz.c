/*
 * libFuzzer harness for the cron parser, describer and next-match search
 * (src/events/cron_parse.c, which has no PostgreSQL dependency).
 *
 * Input: 16 configuration bytes, then the expression.  The configuration
 * picks `after` (years 1900-2300), a time zone (UTC, a fixed offset, or a
 * synthetic zone that alternates two offsets every P seconds) and a horizon.
 *
 * Checks, beyond "no crash, no hang, no sanitizer report":
 *   - a refused expression has an error message, an accepted one a description;
 *   - the next firing is strictly after `after`, within the horizon, and its
 *     local time matches the expression (or it is the end of a DST gap that
 *     skipped a matching local time, for a fixed-time job);
 *   - over a three-day horizon the result equals a brute-force scan of every
 *     minute (zones with whole-minute offsets).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *          src/events/cron_parse.c test/fuzz/cron_fuzz.c   (test/fuzz/cron.sh does it)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/cron_parse.h"

typedef struct FuzzZone
{
	int			kind;			/* 0 UTC, 1 fixed, 2 alternating */
	long		o1,
				o2;
	int64_t		t0,
				period;
} FuzzZone;

/* Integer division rounding towards minus infinity. */
static int64_t
fdiv(int64_t a, int64_t b)
{
	int64_t		q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/*
 * CronZone offset_at callback: the UTC offset of zone arg (a FuzzZone) at
 * t; an alternating zone has o1 in even periods from t0, o2 in odd ones.
 */
static long
fz_offset(void *arg, int64_t t)
{
	FuzzZone   *z = arg;

	if (z->kind == 0)
		return 0;
	if (z->kind == 1)
		return z->o1;
	return (fdiv(t - z->t0, z->period) & 1) ? z->o2 : z->o1;
}

/*
 * CronZone next_transition callback: the first period boundary after t
 * and the offset that starts there; false for UTC and fixed zones, which
 * have no transitions.
 */
static bool
fz_next(void *arg, int64_t t, int64_t *boundary, long *after_offset)
{
	FuzzZone   *z = arg;
	int64_t		k;

	if (z->kind != 2)
		return false;
	k = fdiv(t - z->t0, z->period) + 1;
	*boundary = z->t0 + k * z->period;
	*after_offset = (k & 1) ? z->o2 : z->o1;
	return true;
}

/* The local date and time of instant t in zone z, to the second. */
static void
local_of(FuzzZone *z, int64_t t, int64_t *y, int *mo, int *d, int *h, int *mi, int *sec)
{
	int64_t		cs = t + fz_offset(z, t);
	int64_t		days = fdiv(cs, 86400);
	int			sod = (int) (cs - days * 86400);

	CronCivilFromDays(days, y, mo, d);
	*h = sod / 3600;
	*mi = (sod % 3600) / 60;
	*sec = sod % 60;
}

/* Whether instant t is on a local minute that the spec matches. */
static bool
matches_at(const CronSpec *spec, FuzzZone *z, int64_t t)
{
	int64_t		y;
	int			mo,
				d,
				h,
				mi,
				s;

	local_of(z, t, &y, &mo, &d, &h, &mi, &s);
	return s == 0 && CronMatchesCivil(spec, (int) y, mo, d, h, mi);
}

/* Whether some civil minute in [from, to) (civil seconds) matches. */
static bool
civil_range_matches(const CronSpec *spec, int64_t from, int64_t to)
{
	int64_t		c = fdiv(from + 59, 60) * 60;

	for (; c < to; c += 60)
	{
		int64_t		days = fdiv(c, 86400),
					y;
		int			sod = (int) (c - days * 86400),
					mo,
					d;

		CronCivilFromDays(days, &y, &mo, &d);
		if (CronMatchesCivil(spec, (int) y, mo, d, sod / 3600, (sod % 3600) / 60))
			return true;
	}
	return false;
}

/* Brute force over every minute (whole-minute offsets only). */
static bool
brute_next(const CronSpec *spec, FuzzZone *z, int64_t after, int64_t horizon, int64_t *out)
{
	bool		wild = spec->star[CRON_MINUTE] || spec->star[CRON_HOUR];
	int64_t		t;

	for (t = fdiv(after, 60) * 60 + 60; t <= after + horizon; t += 60)
	{
		long		o = fz_offset(z, t);

		/* a gap ends at t: a fixed-time job due inside it fires now */
		if (!wild && z->kind == 2)
		{
			long		ob = fz_offset(z, t - 1);

			if (fz_offset(z, t) != ob && o > ob &&
				civil_range_matches(spec, t + ob, t + o))
			{
				*out = t;
				return true;
			}
		}
		if (!matches_at(spec, z, t))
			continue;
		if (!wild && z->kind == 2)
		{
			/* a repeated local time fires at its first occurrence only */
			int64_t		c = t + o;
			int64_t		y1 = c - z->o1,
						y2 = c - z->o2;

			if ((y1 < t && fz_offset(z, y1) == z->o1) ||
				(y2 < t && fz_offset(z, y2) == z->o2))
				continue;
		}
		*out = t;
		return true;
	}
	return false;
}

/* Big-endian unsigned value of n configuration bytes starting at cfg[i]. */
static uint64_t
rd(const uint8_t *cfg, int i, int n)
{
	uint64_t	v = 0;
	int			k;

	for (k = 0; k < n; k++)
		v = (v << 8) | cfg[i + k];
	return v;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * libFuzzer entry point: parses the input as described in the header and
 * checks the invariants listed there, calling abort() on any violation.
 * Always returns 0.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t		cfg[16] = {0};
	char		expr[CRON_MAX_EXPR_LEN + 64];
	char		err[CRON_ERR_LEN];
	char		desc[CRON_DESC_LEN];
	CronSpec	spec;
	CronZone	zone;
	FuzzZone	fz;
	size_t		n;
	int64_t		after,
				horizon,
				next,
				bnext;
	bool		found,
				bfound,
				wild;

	memcpy(cfg, data, size < 16 ? size : 16);
	n = size > 16 ? size - 16 : 0;
	if (n > sizeof(expr) - 1)
		n = sizeof(expr) - 1;
	if (n)
		memcpy(expr, data + 16, n);
	expr[n] = '\0';

	if (!CronParse(expr, &spec, err))
	{
		if (err[0] == '\0' || strlen(err) >= CRON_ERR_LEN)
			abort();
		return 0;
	}
	CronDescribeSpec(&spec, desc);
	if (desc[0] == '\0' || strlen(desc) >= CRON_DESC_LEN)
		abort();

	/* configuration */
	after = -2208988800LL + (int64_t) (rd(cfg, 0, 5) % (400LL * 366 * 86400));
	if (cfg[5] & 1)
		after -= after % 60;	/* often exactly on a minute */
	fz.kind = cfg[6] % 3;
	fz.o1 = (long) (rd(cfg, 7, 2) % (28 * 60)) * 60 - 14 * 3600;	/* whole minutes */
	fz.o2 = fz.o1 + (long) (cfg[9] % 13) * 15 * 60 - 90 * 60;	/* +-90 min, 15 min steps */
	if (fz.kind == 1 && (cfg[10] & 1))
		fz.o1 += cfg[10] % 60;	/* odd-second offsets, like LMT */
	/* transitions on whole minutes, as in every real zone */
	fz.period = 6 * 3600 + (int64_t) (rd(cfg, 11, 3) % (400 * 1440)) * 60;
	fz.t0 = fdiv(after, 60) * 60 - (int64_t) (rd(cfg, 14, 2) % 1440) * 60 * 7;
	zone.offset_at = fz_offset;
	zone.next_transition = fz_next;
	zone.arg = &fz;
	wild = spec.star[CRON_MINUTE] || spec.star[CRON_HOUR];

	/* the full search: invariants */
	horizon = (cfg[5] & 2) ? CRON_HORIZON_SECS : 400 * 86400;
	found = CronNextInstant(&spec, &zone, after, horizon, &next);
	if (found)
	{
		if (next <= after || next > after + horizon)
			abort();
		if (!matches_at(&spec, &fz, next))
		{
			long		ob = fz_offset(&fz, next - 1),
						o = fz_offset(&fz, next);

			/* only a fixed-time job, at the end of a gap that skipped a match */
			if (wild || fz.kind != 2 || o <= ob ||
				!civil_range_matches(&spec, next + ob, next + o))
				abort();
		}
	}

	/* three days: equal to the brute-force scan */
	if (fz.kind == 1 && fz.o1 % 60 != 0)
		return 0;
	horizon = 3 * 86400;
	found = CronNextInstant(&spec, &zone, after, horizon, &next);
	bfound = brute_next(&spec, &fz, after, horizon, &bnext);
	if (found != bfound || (found && next != bnext))
	{
		fprintf(stderr, "mismatch for \"%s\" after %lld zone %d (%ld/%ld, t0 %lld, period %lld): "
				"search %d %lld, brute force %d %lld\n",
				expr, (long long) after, fz.kind, fz.o1, fz.o2, (long long) fz.t0,
				(long long) fz.period, found, (long long) next, bfound, (long long) bnext);
		abort();
	}
	return 0;
}
