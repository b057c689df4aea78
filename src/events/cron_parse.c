/*-------------------------------------------------------------------------
 *
 * cron_parse.c
 *		Pure cron parsing, description and next-match search.
 *
 * Standard five-field cron (minute hour day-of-month month day-of-week)
 * with lists, ranges, steps, month and weekday names, 0 or 7 for Sunday,
 * the @hourly/@daily/@weekly/@monthly/@yearly macros, and Vixie cron's
 * day rule: when both day fields are restricted a day matching either one
 * matches; when either field starts with '*' both must match.
 *
 * No PostgreSQL backend dependency (see cron_parse.h): the fuzzer links this
 * file alone.
 *
 *-------------------------------------------------------------------------
 */
#include "cron_parse.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const field_name[CRON_NFIELDS] =
{"minute", "hour", "day-of-month", "month", "day-of-week"};
static const int field_lo[CRON_NFIELDS] = {0, 0, 1, 1, 0};
static const int field_hi[CRON_NFIELDS] = {59, 23, 31, 12, 7};

static const char *const month_abbr[12] =
{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const dow_abbr[7] =
{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};
static const char *const month_full[12] =
{"January", "February", "March", "April", "May", "June", "July", "August",
"September", "October", "November", "December"};
static const char *const dow_full[7] =
{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

static const struct
{
	const char *name;
	const char *expansion;
}			cron_macros[] =
{
	{"@yearly", "0 0 1 1 *"},
	{"@annually", "0 0 1 1 *"},
	{"@monthly", "0 0 1 * *"},
	{"@weekly", "0 0 * * 0"},
	{"@daily", "0 0 * * *"},
	{"@midnight", "0 0 * * *"},
	{"@hourly", "0 * * * *"},
};

/* ---------------------------------------------------------------------
 * Parsing
 * --------------------------------------------------------------------- */

#if defined(__GNUC__)
#define CRON_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CRON_PRINTF(a, b)
#endif

static void set_err(char *err, const char *fmt,...) CRON_PRINTF(2, 3);

/* Writes the printf-style message into err (CRON_ERR_LEN bytes, truncated). */
static void
set_err(char *err, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, CRON_ERR_LEN, fmt, ap);
	va_end(ap);
}

/* Length of a piece of text as quoted in messages (long pieces are cut). */
#define QLEN(n) ((int) ((n) > 40 ? 40 : (n)))

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * Parses one value (number or name) of field f from s[0..n).  *was_name
 * tells whether it was written as a name.
 */
static bool
parse_value(int f, const char *s, size_t n, const char *elem, size_t elen,
			int *out, bool *was_name, char *err)
{
	size_t		i;

	*was_name = false;
	if (n == 0)
	{
		set_err(err, "%s field \"%.*s\" is missing a value", field_name[f],
				QLEN(elen), elem);
		return false;
	}
	if (isdigit((unsigned char) s[0]))
	{
		long		v = 0;

		for (i = 0; i < n; i++)
		{
			if (!isdigit((unsigned char) s[i]))
				break;
			if (v < 100000)
				v = v * 10 + (s[i] - '0');
		}
		if (i == n)
		{
			if (v < field_lo[f] || v > field_hi[f])
			{
				set_err(err, "%s field \"%.*s\" is out of range %d-%d", field_name[f],
						QLEN(n), s, field_lo[f], field_hi[f]);
				return false;
			}
			*out = (int) v;
			return true;
		}
	}
	else if (n == 3 && (f == CRON_MONTH || f == CRON_DOW))
	{
		const char *const *names = (f == CRON_MONTH) ? month_abbr : dow_abbr;
		int			count = (f == CRON_MONTH) ? 12 : 7;
		int			k;

		for (k = 0; k < count; k++)
		{
			if (toupper((unsigned char) s[0]) == names[k][0] &&
				toupper((unsigned char) s[1]) == names[k][1] &&
				toupper((unsigned char) s[2]) == names[k][2])
			{
				*out = (f == CRON_MONTH) ? k + 1 : k;
				*was_name = true;
				return true;
			}
		}
	}
	if (f == CRON_MONTH)
		set_err(err, "%s field \"%.*s\" is not a number or a month name (JAN-DEC)",
				field_name[f], QLEN(n), s);
	else if (f == CRON_DOW)
		set_err(err, "%s field \"%.*s\" is not a number or a day name (SUN-SAT)",
				field_name[f], QLEN(n), s);
	else
		set_err(err, "%s field \"%.*s\" is not a number", field_name[f], QLEN(n), s);
	return false;
}

/* Parses one list element ("*", "5", "1-10", "*\/15", "1-10/2", "MON-FRI"). */
static bool
parse_element(int f, const char *e, size_t n, uint64_t *bits, char *err)
{
	const char *slash = memchr(e, '/', n);
	size_t		blen = slash ? (size_t) (slash - e) : n;
	int			lo,
				hi,
				step = 1,
				v;
	bool		name_lo,
				name_hi;

	if (slash)
	{
		const char *s = slash + 1;
		size_t		slen = n - blen - 1;
		long		st = 0;
		size_t		i;
		int			maxstep = field_hi[f];

		if (slen == 0)
		{
			set_err(err, "%s field \"%.*s\" is missing a step after \"/\"",
					field_name[f], QLEN(n), e);
			return false;
		}
		for (i = 0; i < slen; i++)
		{
			if (!isdigit((unsigned char) s[i]))
			{
				set_err(err, "%s field \"%.*s\" has a step that is not a number",
						field_name[f], QLEN(n), e);
				return false;
			}
			if (st < 100000)
				st = st * 10 + (s[i] - '0');
		}
		if (st < 1 || st > maxstep)
		{
			set_err(err, "%s field \"%.*s\" has a step out of range 1-%d",
					field_name[f], QLEN(n), e, maxstep);
			return false;
		}
		step = (int) st;
	}

	if (blen == 1 && e[0] == '*')
	{
		lo = field_lo[f];
		hi = (f == CRON_DOW) ? 6 : field_hi[f];
	}
	else
	{
		const char *dash = (blen > 1) ? memchr(e + 1, '-', blen - 1) : NULL;

		if (dash)
		{
			size_t		llen = (size_t) (dash - e);

			if (!parse_value(f, e, llen, e, n, &lo, &name_lo, err) ||
				!parse_value(f, dash + 1, blen - llen - 1, e, n, &hi, &name_hi, err))
				return false;
			/* FRI-SUN: a Sunday written as a name closes the week */
			if (f == CRON_DOW && hi == 0 && lo > 0 && name_hi)
				hi = 7;
			if (lo > hi)
			{
				set_err(err, "%s field \"%.*s\" has a range whose start is after its end",
						field_name[f], QLEN(n), e);
				return false;
			}
		}
		else
		{
			if (!parse_value(f, e, blen, e, n, &lo, &name_lo, err))
				return false;
			/* "5/15" means 5 through the end of the field, every 15 */
			hi = slash ? field_hi[f] : lo;
			if (slash && f == CRON_DOW)
				hi = 6;
			if (hi < lo)
				hi = lo;
		}
	}

	for (v = lo; v <= hi; v += step)
		*bits |= (uint64_t) 1 << ((f == CRON_DOW && v == 7) ? 0 : v);
	return true;
}

/*
 * Parses field f (s[0..n), a comma-separated list of elements) into
 * spec->bits[f], and notes in spec->star[f] whether it starts with "*" (which
 * decides how the two day fields combine, see day_matches).  false with the
 * message in err on an empty list element or a bad element.
 */
static bool
parse_field(int f, const char *s, size_t n, CronSpec *spec, char *err)
{
	size_t		start = 0;

	spec->bits[f] = 0;
	spec->star[f] = (s[0] == '*');
	while (start <= n)
	{
		const char *comma = memchr(s + start, ',', n - start);
		size_t		end = comma ? (size_t) (comma - s) : n;

		if (end == start)
		{
			set_err(err, "%s field \"%.*s\" has an empty list element",
					field_name[f], QLEN(n), s);
			return false;
		}
		if (!parse_element(f, s + start, end - start, &spec->bits[f], err))
			return false;
		start = end + 1;
	}
	return true;
}

/*
 * Parses a NUL-terminated cron expression into spec: five fields separated by
 * white space, or one macro (@daily and the like, case-insensitive, standing
 * alone) parsed as its expansion.  On failure returns false with the reason
 * in err (CRON_ERR_LEN bytes), naming the field; spec is then zeroed or
 * partly filled.  Expressions longer than CRON_MAX_EXPR_LEN are refused.
 */
bool
CronParse(const char *expr, CronSpec *spec, char *err)
{
	size_t		len = strlen(expr);
	const char *p = expr;
	const char *fs[CRON_NFIELDS];
	size_t		fl[CRON_NFIELDS];
	int			nfields = 0;
	int			f;

	memset(spec, 0, sizeof(*spec));
	err[0] = '\0';
	if (len > CRON_MAX_EXPR_LEN)
	{
		set_err(err, "longer than %d characters", CRON_MAX_EXPR_LEN);
		return false;
	}
	while (*p && is_space(*p))
		p++;
	if (*p == '@')
	{
		const char *w = p;
		size_t		wl = 0;
		size_t		k;

		while (w[wl] && !is_space(w[wl]))
			wl++;
		for (k = wl; w[k]; k++)
		{
			if (!is_space(w[k]))
			{
				set_err(err, "a macro such as \"%.*s\" stands alone", QLEN(wl), w);
				return false;
			}
		}
		for (k = 0; k < sizeof(cron_macros) / sizeof(cron_macros[0]); k++)
		{
			if (strlen(cron_macros[k].name) == wl &&
				strncasecmp(cron_macros[k].name, w, wl) == 0)
				return CronParse(cron_macros[k].expansion, spec, err);
		}
		set_err(err, "unknown macro \"%.*s\" (use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)",
				QLEN(wl), w);
		return false;
	}
	while (*p)
	{
		const char *q = p;

		while (*q && !is_space(*q))
			q++;
		if (nfields < CRON_NFIELDS)
		{
			fs[nfields] = p;
			fl[nfields] = (size_t) (q - p);
		}
		nfields++;
		p = q;
		while (*p && is_space(*p))
			p++;
	}
	if (nfields != CRON_NFIELDS)
	{
		set_err(err, "expected 5 fields (minute hour day-of-month month day-of-week), found %d",
				nfields);
		return false;
	}
	for (f = 0; f < CRON_NFIELDS; f++)
	{
		if (!parse_field(f, fs[f], fl[f], spec, err))
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------------
 * Calendar
 * --------------------------------------------------------------------- */

/* a / b rounded toward minus infinity (C division truncates toward zero). */
static int64_t
floordiv(int64_t a, int64_t b)
{
	int64_t		q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Howard Hinnant's days_from_civil / civil_from_days. */
static int64_t
CronDaysFromCivil(int64_t y, int m, int d)
{
	int64_t		era;
	int64_t		yoe,
				doy,
				doe;

	y -= m <= 2;
	era = floordiv(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * The proleptic Gregorian date (*y, *m 1-12, *d 1-31) of day z, counted from
 * 1970-01-01; the inverse of CronDaysFromCivil.
 */
void
CronCivilFromDays(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t		era,
				doe,
				yoe,
				doy,
				mp;

	z += 719468;
	era = floordiv(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* Day of the week of day days since 1970-01-01, 0 for Sunday to 6 for Saturday. */
static int
weekday_of_days(int64_t days)
{
	return (int) (days - floordiv(days + 4, 7) * 7 + 4);	/* 1970-01-01: Thu */
}

/* Number of days in month m (1-12) of year y, leap years counted. */
static int
days_in_month(int64_t y, int m)
{
	static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return dim[m - 1];
}

#define HAS(spec, f, v) (((spec)->bits[f] >> (v)) & 1)

/*
 * Whether a day of the month and day of the week match, with Vixie cron's
 * rule: when either day field starts with "*" both must match, otherwise
 * matching either is enough.
 */
static bool
day_matches(const CronSpec *spec, int day, int wday)
{
	bool		dom = HAS(spec, CRON_DOM, day);
	bool		dow = HAS(spec, CRON_DOW, wday);

	if (spec->star[CRON_DOM] || spec->star[CRON_DOW])
		return dom && dow;
	return dom || dow;
}

/* Whether a local (civil) date and time matches every field of spec. */
bool
CronMatchesCivil(const CronSpec *spec, int year, int month, int day,
				   int hour, int minute)
{
	int64_t		days = CronDaysFromCivil(year, month, day);

	return HAS(spec, CRON_MINUTE, minute) && HAS(spec, CRON_HOUR, hour) &&
		HAS(spec, CRON_MONTH, month) &&
		day_matches(spec, day, weekday_of_days(days));
}

/* Lowest set bit >= from, or -1. */
static int
next_bit(uint64_t bits, int from, int hi)
{
	int			v;

	for (v = from; v <= hi; v++)
		if ((bits >> v) & 1)
			return v;
	return -1;
}

/*
 * The first civil minute (seconds of local time since the epoch, a multiple
 * of 60) >= start and < limit that matches; false when none.
 */
static bool
civil_next(const CronSpec *spec, int64_t start, int64_t limit, int64_t *out)
{
	int64_t		days = floordiv(start, 86400);
	int			sod = (int) (start - days * 86400);
	int			h = sod / 3600;
	int			mi = (sod % 3600 + 59) / 60;	/* round up to a minute */
	int64_t		y;
	int			m,
				d;

	if (mi == 60)
	{
		mi = 0;
		if (++h == 24)
		{
			h = 0;
			days++;
		}
	}
	CronCivilFromDays(days, &y, &m, &d);
	for (;;)
	{
		int			hh,
					mm;

		if (days * 86400 >= limit)
			return false;
		if (!HAS(spec, CRON_MONTH, m))
		{
			days += days_in_month(y, m) - d + 1;
			d = 1;
			if (++m == 13)
			{
				m = 1;
				y++;
			}
			h = mi = 0;
			continue;
		}
		if (!day_matches(spec, d, weekday_of_days(days)))
			goto next_day;
		hh = next_bit(spec->bits[CRON_HOUR], h, 23);
		if (hh < 0)
			goto next_day;
		if (hh != h)
		{
			h = hh;
			mi = 0;
		}
		mm = next_bit(spec->bits[CRON_MINUTE], mi, 59);
		if (mm < 0)
		{
			mi = 0;
			if (++h == 24)
				goto next_day;
			continue;
		}
		{
			int64_t		cand = days * 86400 + h * 3600 + mm * 60;

			if (cand >= limit)
				return false;
			*out = cand;
			return true;
		}
next_day:
		days++;
		h = mi = 0;
		if (++d > days_in_month(y, m))
		{
			d = 1;
			if (++m == 13)
			{
				m = 1;
				y++;
			}
		}
	}
}

/*
 * Whether local time C (civil seconds) already occurred at an instant
 * before x (a fall-back repeats local times).
 */
static bool
earlier_occurrence(const CronZone *zone, int64_t c, int64_t x)
{
	int64_t		s = x - 52 * 3600;

	for (;;)
	{
		long		o = zone->offset_at(zone->arg, s);
		int64_t		b;
		long		o2;
		bool		has = zone->next_transition(zone->arg, s, &b, &o2);
		int64_t		y = c - o;

		if (y >= s && y < x && (!has || y < b))
			return true;
		if (!has || b >= x)
			return false;
		s = b;
	}
}

/*
 * The first firing instant (Unix seconds) strictly after after and at most
 * horizon seconds later, in *result; false when there is none.  Walks the
 * zone's offset segments: within each, looks for the first matching local
 * minute.  A local time repeated by a fall-back fires only at its first
 * occurrence, and one skipped by a spring-forward fires once at the
 * transition, both for fixed-time jobs only; jobs whose minute or hour field
 * starts with "*" follow the local clock as it is (both occurrences of a
 * repeated time, nothing for a skipped one).
 */
bool
CronNextInstant(const CronSpec *spec, const CronZone *zone, int64_t after,
				  int64_t horizon, int64_t *result)
{
	/* Vixie cron's "wildcard" jobs: the minute or hour field starts with * */
	bool		wild = spec->star[CRON_MINUTE] || spec->star[CRON_HOUR];
	int64_t		end = after + horizon;
	int64_t		t = after + 1;

	while (t <= end)
	{
		long		o = zone->offset_at(zone->arg, t);
		int64_t		e = 0;
		long		o2 = o;
		bool		has = zone->next_transition(zone->arg, t, &e, &o2);
		int64_t		seg_end = (has && e <= end) ? e : end + 1;
		int64_t		c;

		if (has && e <= t)
			has = false;		/* a broken zone: never go backwards */
		if (civil_next(spec, t + o, seg_end + o, &c))
		{
			int64_t		x = c - o;

			/* a repeated local time fires at its first occurrence only */
			if (!wild && earlier_occurrence(zone, c, x))
			{
				t = x + 1;
				continue;
			}
			*result = x;
			return true;
		}
		if (!has || e > end)
			return false;

		/*
		 * Spring forward skips local times [e+o, e+o2): a fixed-time job due
		 * in the gap fires once, at the first instant after it (e).
		 */
		if (!wild && o2 > o && civil_next(spec, e + o, e + o2, &c))
		{
			*result = e;
			return true;
		}
		t = e;
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Description
 * --------------------------------------------------------------------- */

typedef struct Buf
{
	char	   *s;
	size_t		len;
} Buf;

static void put(Buf *b, const char *fmt,...) CRON_PRINTF(2, 3);

/* Appends printf-style text to b, silently truncated at CRON_DESC_LEN - 1. */
static void
put(Buf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (b->len >= CRON_DESC_LEN - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, CRON_DESC_LEN - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t) n;
	if (b->len > CRON_DESC_LEN - 1)
		b->len = CRON_DESC_LEN - 1;
}

/* The English ordinal suffix of n: "st", "nd", "rd" or "th" (11th to 13th). */
static const char *
ordinal_suffix(int n)
{
	if (n % 100 >= 11 && n % 100 <= 13)
		return "th";
	switch (n % 10)
	{
		case 1:
			return "st";
		case 2:
			return "nd";
		case 3:
			return "rd";
		default:
			return "th";
	}
}

/* Values of a field in display order (weekdays Monday first). */
static int
field_values(const CronSpec *spec, int f, int *vals)
{
	int			n = 0,
				v;

	if (f == CRON_DOW)
	{
		for (v = 1; v <= 7; v++)
			if (HAS(spec, f, v % 7))
				vals[n++] = v;	/* 7 stands for Sunday */
		return n;
	}
	for (v = field_lo[f]; v <= field_hi[f]; v++)
		if (HAS(spec, f, v))
			vals[n++] = v;
	return n;
}

/* Number of possible values of field f. */
static int
field_size(int f)
{
	return (f == CRON_DOW) ? 7 : field_hi[f] - field_lo[f] + 1;
}

/*
 * Appends value v of field f: month and weekday by full name (7 being
 * Sunday), other fields as a number.
 */
static void
put_value(Buf *b, int f, int v)
{
	if (f == CRON_MONTH)
		put(b, "%s", month_full[v - 1]);
	else if (f == CRON_DOW)
		put(b, "%s", dow_full[v % 7]);
	else
		put(b, "%d", v);
}

/*
 * If the values are an arithmetic progression with step >= 2 (at least
 * three values), returns the step.
 */
static int
progression_step(const int *vals, int n)
{
	int			s,
				i;

	if (n < 3)
		return 0;
	s = vals[1] - vals[0];
	if (s < 2)
		return 0;
	for (i = 2; i < n; i++)
		if (vals[i] - vals[i - 1] != s)
			return 0;
	return s;
}

/*
 * The values of a field as a phrase: "9", "9 and 17", "1 through 5",
 * "every 2nd ... from 1 through 9".  unit names the field for progressions
 * ("minute", "hour", "day of the month", "month", "day").
 */
static void
put_values(Buf *b, const CronSpec *spec, int f, const char *unit)
{
	int			vals[64];
	int			n = field_values(spec, f, vals);
	int			step = progression_step(vals, n);
	int			i;

	/* weekdays read better as a list; months only as a whole-year step */
	if (f == CRON_DOW ||
		(f == CRON_MONTH && step && (vals[0] != 1 || vals[n - 1] + step <= 12)))
		step = 0;
	if (step)
	{
		put(b, "every %d%s %s", step, ordinal_suffix(step), unit);
		/* a progression from the field's start to its end needs no bounds */
		if (vals[0] != field_lo[f] || vals[n - 1] + step <= field_hi[f])
		{
			put(b, " from ");
			put_value(b, f, vals[0]);
			put(b, " through ");
			put_value(b, f, vals[n - 1]);
		}
		return;
	}

	/* runs of consecutive values; runs of three or more become ranges */
	{
		int			items = 0;
		int			starts[64],
					ends[64];

		for (i = 0; i < n;)
		{
			int			j = i;

			while (j + 1 < n && vals[j + 1] == vals[j] + 1)
				j++;
			if (j - i >= 2)
			{
				starts[items] = vals[i];
				ends[items++] = vals[j];
			}
			else
			{
				int			k;

				for (k = i; k <= j; k++)
				{
					starts[items] = vals[k];
					ends[items++] = vals[k];
				}
			}
			i = j + 1;
		}
		for (i = 0; i < items; i++)
		{
			if (i > 0)
				put(b, i == items - 1 ? " and " : ", ");
			put_value(b, f, starts[i]);
			if (ends[i] != starts[i])
			{
				put(b, " through ");
				put_value(b, f, ends[i]);
			}
		}
	}
}

/* Number of set bits of x. */
static int
popcount64(uint64_t x)
{
	int			n = 0;

	while (x)
	{
		x &= x - 1;
		n++;
	}
	return n;
}

/* Whether field f allows every one of its values. */
static bool
is_all(const CronSpec *spec, int f)
{
	return popcount64(spec->bits[f]) == field_size(f);
}

/* A step progression from the field's start covering it (e.g. *\/15). */
static int
full_step(const CronSpec *spec, int f)
{
	int			vals[64];
	int			n = field_values(spec, f, vals);
	int			step = progression_step(vals, n);

	if (step && vals[0] == field_lo[f] && vals[n - 1] + step > field_hi[f])
		return step;
	return 0;
}

/*
 * Writes into out (CRON_DESC_LEN bytes) a plain English description of spec,
 * e.g. "every 15 minutes": the time of day, then the
 * days of the month and of the week that restrict it (combined as
 * day_matches does), then the months.  Long descriptions are truncated.
 */
void
CronDescribeSpec(const CronSpec *spec, char *out)
{
	Buf			b = {out, 0};
	int			nmin = popcount64(spec->bits[CRON_MINUTE]);
	int			nhour = popcount64(spec->bits[CRON_HOUR]);
	bool		min_all = is_all(spec, CRON_MINUTE);
	bool		hour_all = is_all(spec, CRON_HOUR);
	bool		dom_all = is_all(spec, CRON_DOM);
	bool		dow_all = is_all(spec, CRON_DOW);
	bool		daily_time = false;
	int			mstep = full_step(spec, CRON_MINUTE);
	int			hstep = full_step(spec, CRON_HOUR);
	bool		dom_r,
				dow_r;

	out[0] = '\0';

	/* time of day */
	if (min_all && hour_all)
		put(&b, "every minute");
	else if (mstep && hour_all)
		put(&b, "every %d minutes", mstep);
	else if (nmin == 1 && HAS(spec, CRON_MINUTE, 0) && hour_all)
		put(&b, "every hour");
	else if (nmin == 1 && HAS(spec, CRON_MINUTE, 0) && hstep)
		put(&b, "every %d hours", hstep);
	else if (nmin * nhour <= 6 && !hour_all)
	{
		int			h,
					m,
					k = 0,
					total = nmin * nhour;

		put(&b, "at ");
		for (h = 0; h < 24; h++)
		{
			if (!HAS(spec, CRON_HOUR, h))
				continue;
			for (m = 0; m < 60; m++)
			{
				if (!HAS(spec, CRON_MINUTE, m))
					continue;
				if (k > 0)
					put(&b, k == total - 1 ? " and " : ", ");
				put(&b, "%02d:%02d", h, m);
				k++;
			}
		}
		daily_time = true;
	}
	else
	{
		if (min_all)
			put(&b, "every minute");
		else if (mstep)
			put(&b, "every %d minutes", mstep);
		else
		{
			int			vals[64];
			int			n = field_values(spec, CRON_MINUTE, vals);

			if (!progression_step(vals, n))
				put(&b, n == 1 ? "at minute " : "at minutes ");
			put_values(&b, spec, CRON_MINUTE, "minute");
		}
		if (hour_all)
			put(&b, " past every hour");
		else if (hstep)
			put(&b, " past every %d%s hour", hstep, ordinal_suffix(hstep));
		else
		{
			put(&b, nhour == 1 ? " past hour " : " past hours ");
			put_values(&b, spec, CRON_HOUR, "hour");
		}
	}

	/* days: which day fields restrict (see day_matches) */
	if (spec->star[CRON_DOM] || spec->star[CRON_DOW])
	{
		dom_r = !dom_all;
		dow_r = !dow_all;
	}
	else
		dom_r = dow_r = !(dom_all || dow_all);

	if (dom_r)
	{
		int			vals[64];
		int			n = field_values(spec, CRON_DOM, vals);

		put(&b, n == 1 ? " on day " : " on ");
		if (n > 1 && !progression_step(vals, n))
			put(&b, "days ");
		put_values(&b, spec, CRON_DOM, "day");
		put(&b, " of the month");
	}
	if (dow_r)
	{
		if (dom_r)
			put(&b, (spec->star[CRON_DOM] || spec->star[CRON_DOW]) ? " if it is " : " or on ");
		else
			put(&b, " on ");
		put_values(&b, spec, CRON_DOW, "day of the week");
	}
	if (!dom_r && !dow_r && daily_time)
		put(&b, " every day");

	/* months */
	if (!is_all(spec, CRON_MONTH))
	{
		put(&b, " in ");
		put_values(&b, spec, CRON_MONTH, "month");
	}
}
