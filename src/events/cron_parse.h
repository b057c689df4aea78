/*-------------------------------------------------------------------------
 *
 * cron_parse.h
 *		Pure cron parsing, description and next-match search.
 *
 * Nothing here depends on the PostgreSQL backend: src/events/cron.c wraps it for
 * SQL, and test/fuzz/cron_fuzz.c links it alone under libFuzzer.  Times are
 * seconds since the Unix epoch (int64); a time zone is given as two
 * callbacks (the UTC offset in effect at an instant, and the next offset
 * transition after an instant), so that the backend plugs in the
 * PostgreSQL tz database and the fuzzer plugs in synthetic zones.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CRON_PARSE_H
#define CRON_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest expression accepted, in bytes. */
#define CRON_MAX_EXPR_LEN	200
/* Room for any error message (the part after "invalid cron expression"). */
#define CRON_ERR_LEN		256
/* Room for any description. */
#define CRON_DESC_LEN		2048
/* Default search horizon of cron_next: five years (leap days included). */
#define CRON_HORIZON_SECS	((int64_t) (5 * 366 + 1) * 86400)

enum
{
	CRON_MINUTE = 0,
	CRON_HOUR,
	CRON_DOM,
	CRON_MONTH,
	CRON_DOW,
	CRON_NFIELDS
};

typedef struct CronSpec
{
	uint64_t	bits[CRON_NFIELDS];	/* minute 0-59, hour 0-23, day 1-31,
									 * month 1-12, weekday 0-6 (Sunday 0) */
	bool		star[CRON_NFIELDS];	/* field starts with '*' (Vixie cron) */
} CronSpec;

typedef struct CronZone
{
	/* UTC offset in seconds (east positive) in effect at instant t */
	long		(*offset_at) (void *arg, int64_t t);

	/*
	 * First offset transition strictly after t: returns true and sets
	 * *boundary and the offset in effect from then on; false when none.
	 */
	bool		(*next_transition) (void *arg, int64_t t, int64_t *boundary,
									long *after_offset);
	void	   *arg;
} CronZone;

/*
 * Parses a NUL-terminated expression.  On failure returns false and writes
 * into err (CRON_ERR_LEN bytes) why, naming the field, e.g.
 * minute field "61" is out of range 0-59.
 */
extern bool CronParse(const char *expr, CronSpec *spec, char *err);

/* Whether a local (civil) date and time matches the spec. */
extern bool CronMatchesCivil(const CronSpec *spec, int year, int month,
							   int day, int hour, int minute);

/*
 * The first firing instant strictly after 'after' and at most 'horizon'
 * seconds later; false when there is none.  DST rules: see docs/cron.md.
 */
extern bool CronNextInstant(const CronSpec *spec, const CronZone *zone,
							  int64_t after, int64_t horizon, int64_t *result);

/* Plain English description into buf (CRON_DESC_LEN bytes). */
extern void CronDescribeSpec(const CronSpec *spec, char *buf);

/* Days since 1970-01-01 to the proleptic Gregorian date. */
extern void CronCivilFromDays(int64_t days, int64_t *y, int *m, int *d);

#endif							/* CRON_PARSE_H */
