/*-------------------------------------------------------------------------
 *
 * cron.c
 *		SQL entry points of the cron schedules: agent.cron_valid,
 *		agent.cron_describe and agent.cron_next.
 *
 * The parsing, description and search live in cron_parse.c, which has no
 * backend dependency; this file adds PostgreSQL error reports and the tz
 * database (pg_tzset, pg_localtime, pg_next_dst_boundary).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "cron_parse.h"

PG_FUNCTION_INFO_V1(pg_agents_cron_valid);
PG_FUNCTION_INFO_V1(pg_agents_cron_describe);
PG_FUNCTION_INFO_V1(pg_agents_cron_next);

/* Seconds between the Unix epoch and the PostgreSQL epoch (2000-01-01). */
#define PG_EPOCH_UNIX_SECS ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

/* Parses expr or raises 22023 naming the bad field. */
static void
ParseOrError(const char *expr, CronSpec *spec)
{
	char		err[CRON_ERR_LEN];

	if (!CronParse(expr, spec, err))
	{
		if (strlen(expr) > CRON_MAX_EXPR_LEN)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid cron expression: %s", err),
					 errhint("A cron expression has five fields: minute hour day-of-month month day-of-week.")));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression \"%s\": %s", expr, err),
				 errhint("A cron expression has five fields: minute hour day-of-month month day-of-week.")));
	}
}

/*
 * Zone callback of the cron evaluator: the UTC offset (seconds east) of zone
 * arg at Unix time t, 0 when pg_localtime cannot convert it.
 */
static long
PgZoneOffset(void *arg, int64_t t)
{
	pg_time_t	pt = (pg_time_t) t;
	struct pg_tm *tm = pg_localtime(&pt, (const pg_tz *) arg);

	return tm ? tm->tm_gmtoff : 0;
}

/*
 * Zone callback of the cron evaluator: the next DST or offset transition of
 * zone arg after Unix time t, as *boundary and the offset in force after it
 * (*after_offset).  false when the zone has no later transition.
 */
static bool
PgZoneNextTransition(void *arg, int64_t t, int64_t *boundary, long *after_offset)
{
	pg_time_t	pt = (pg_time_t) t;
	pg_time_t	b;
	long		before_off,
				after_off;
	int			before_dst,
				after_dst;

	if (pg_next_dst_boundary(&pt, &before_off, &before_dst, &b,
							 &after_off, &after_dst, (const pg_tz *) arg) != 1)
		return false;
	*boundary = (int64_t) b;
	*after_offset = after_off;
	return true;
}

/* The zone named tzname, or 22023 when the tz database does not know it. */
static pg_tz *
LookupZone(const char *tzname)
{
	pg_tz	   *tz = NULL;

	if (strlen(tzname) <= TZ_STRLEN_MAX)
		tz = pg_tzset(tzname);
	if (tz == NULL || !pg_tz_acceptable(tz))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", tzname),
				 errhint("Use a name from pg_timezone_names, such as \"UTC\" or \"Europe/Paris\".")));
	return tz;
}

/*
 * agent.cron_valid(text) returns boolean: whether the expression parses.
 * Never raises for bad input.
 */
Datum
pg_agents_cron_valid(PG_FUNCTION_ARGS)
{
	char	   *expr = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CronSpec	spec;
	char		err[CRON_ERR_LEN];

	PG_RETURN_BOOL(CronParse(expr, &spec, err));
}

/* agent.cron_describe(text) returns text: the schedule in plain English. */
Datum
pg_agents_cron_describe(PG_FUNCTION_ARGS)
{
	char	   *expr = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CronSpec	spec;
	char		buf[CRON_DESC_LEN];

	ParseOrError(expr, &spec);
	CronDescribeSpec(&spec, buf);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}

/*
 * agent.cron_next(expr text, after timestamptz, tz text) returns
 * timestamptz: the first firing strictly after `after`, or NULL when none
 * within five years.
 */
Datum
pg_agents_cron_next(PG_FUNCTION_ARGS)
{
	char	   *expr = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TimestampTz after = PG_GETARG_TIMESTAMPTZ(1);
	char	   *tzname = text_to_cstring(PG_GETARG_TEXT_PP(2));
	CronSpec	spec;
	CronZone	zone;
	int64		after_secs;
	int64_t		next;
	TimestampTz result;

	ParseOrError(expr, &spec);
	zone.offset_at = PgZoneOffset;
	zone.next_transition = PgZoneNextTransition;
	zone.arg = LookupZone(tzname);

	if (TIMESTAMP_NOT_FINITE(after))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot compute the next run after an infinite timestamp")));

	/* whole seconds, rounded down: "strictly after" then means > after_secs */
	after_secs = after / USECS_PER_SEC;
	if (after % USECS_PER_SEC < 0)
		after_secs--;
	after_secs += PG_EPOCH_UNIX_SECS;

	if (!CronNextInstant(&spec, &zone, after_secs, CRON_HORIZON_SECS, &next))
		PG_RETURN_NULL();
	/* past the end of the timestamptz range: no next run */
	if (next - PG_EPOCH_UNIX_SECS >= END_TIMESTAMP / USECS_PER_SEC)
		PG_RETURN_NULL();
	result = (TimestampTz) (next - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC;
	if (!IS_VALID_TIMESTAMP(result))
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(result);
}
