-- agent.cron_next: known answers (after and results in UTC unless a zone is named).
-- 2024-01-01 was a Monday.
SET timezone = 'UTC';
CREATE TEMP TABLE cron_cases (expr text, after timestamptz, tz text, expected timestamptz, why text);
INSERT INTO cron_cases VALUES
 ('* * * * *',        '2024-01-01 00:00:00',     'UTC', '2024-01-01 00:01', 'strictly after a whole minute'),
 ('* * * * *',        '2024-01-01 00:00:30',     'UTC', '2024-01-01 00:01', 'seconds are dropped'),
 ('* * * * *',        '2024-01-01 00:00:59.999', 'UTC', '2024-01-01 00:01', 'just before the minute'),
 ('*/15 * * * *',     '2024-01-01 00:07',        'UTC', '2024-01-01 00:15', 'step'),
 ('*/15 * * * *',     '2024-01-01 00:45',        'UTC', '2024-01-01 01:00', 'step wraps to the next hour'),
 ('1-10/2 * * * *',   '2024-01-01 00:09',        'UTC', '2024-01-01 01:01', 'range with step'),
 ('5/15 * * * *',     '2024-01-01 00:50',        'UTC', '2024-01-01 01:05', 'N/step runs to the end of the field'),
 ('5,10,50 * * * *',  '2024-01-01 00:10',        'UTC', '2024-01-01 00:50', 'list'),
 ('0 9 * * 1-5',      '2024-01-05 09:00',        'UTC', '2024-01-08 09:00', 'weekdays skip the weekend'),
 ('0 9 * * MON-FRI',  '2024-01-05 09:00',        'UTC', '2024-01-08 09:00', 'weekday names'),
 ('0 22 * * mon-fri', '2024-01-05 22:00',        'UTC', '2024-01-08 22:00', 'names are case-insensitive'),
 ('0 0 * * 0',        '2024-01-01',              'UTC', '2024-01-07 00:00', '0 is Sunday'),
 ('0 0 * * 7',        '2024-01-01',              'UTC', '2024-01-07 00:00', '7 is Sunday'),
 ('0 0 * * Sun',      '2024-01-01',              'UTC', '2024-01-07 00:00', 'SUN'),
 ('0 0 * * 5-7',      '2024-01-01',              'UTC', '2024-01-05 00:00', 'range ending at 7'),
 ('0 0 * * FRI-SUN',  '2024-01-06 00:00',        'UTC', '2024-01-07 00:00', 'FRI-SUN closes the week'),
 ('0 0 1 jan *',      '2024-01-01',              'UTC', '2025-01-01 00:00', 'month name'),
 ('0 12 * feb,Aug *', '2024-01-01',              'UTC', '2024-02-01 12:00', 'month list'),
 ('0 12 * feb,Aug *', '2024-02-29 12:00',        'UTC', '2024-08-01 12:00', 'month list, next month in list'),
 ('0 0 13 * 5',       '2024-01-01',              'UTC', '2024-01-05 00:00', 'OR rule: a Friday'),
 ('0 0 13 * 5',       '2024-01-12',              'UTC', '2024-01-13 00:00', 'OR rule: the 13th'),
 ('0 0 */2 * 5',      '2024-01-05',              'UTC', '2024-01-19 00:00', 'day-of-month starting with * : both must match'),
 ('0 0 1-31 * 5',     '2024-01-01',              'UTC', '2024-01-02 00:00', 'OR rule with every day restricted'),
 ('0 0 * * *',        '2024-02-28 00:00',        'UTC', '2024-02-29 00:00', 'leap day'),
 ('0 0 29 2 *',       '2024-03-01',              'UTC', '2028-02-29 00:00', 'next leap year'),
 ('0 0 29 2 1',       '2024-02-27',              'UTC', '2024-02-29 00:00', 'OR rule with Feb 29'),
 ('0 0 31 * *',       '2024-01-31',              'UTC', '2024-03-31 00:00', 'months without a 31st are skipped'),
 ('59 23 31 12 *',    '2024-01-01',              'UTC', '2024-12-31 23:59', 'last minute of the year'),
 ('0 0 1 1 *',        '2099-12-31 23:59',        'UTC', '2100-01-01 00:00', 'century'),
 ('0 0 29 2 *',       '2099-03-01',              'UTC', '2104-02-29 00:00', '2100 is not a leap year'),
 ('@hourly',          '2024-01-01 00:30',        'UTC', '2024-01-01 01:00', '@hourly'),
 ('@daily',           '2024-01-01 00:30',        'UTC', '2024-01-02 00:00', '@daily'),
 ('@weekly',          '2024-01-01',              'UTC', '2024-01-07 00:00', '@weekly'),
 ('@monthly',         '2024-01-15',              'UTC', '2024-02-01 00:00', '@monthly'),
 ('@yearly',          '2024-01-15',              'UTC', '2025-01-01 00:00', '@yearly'),
 (E'  0\t 9 * *  1 ',  '2024-01-01 09:00',        'UTC', '2024-01-08 09:00', 'extra whitespace'),
 ('0 9 * * *',        '2024-01-01 00:00',        'Asia/Tokyo',       '2024-01-02 00:00', '09:00 JST is 00:00Z, strictly after'),
 ('0 9 * * *',        '2024-01-01 00:00',        'Asia/Kolkata',     '2024-01-01 03:30', 'half-hour offset'),
 ('0 9 * * 1-5',      '2024-07-01 00:00',        'America/New_York', '2024-07-01 13:00', 'EDT'),
 ('0 9 * * 1-5',      '2024-01-01 00:00',        'america/new_york', '2024-01-01 14:00', 'zone names are case-insensitive'),
 ('0 0 31 2 *',       '2024-01-01',              'UTC', NULL, 'February 31 never comes'),
 ('0 0 30 2 *',       '2024-01-01',              'UTC', NULL, 'February 30 never comes');
SELECT expr, after, tz, agent.cron_next(expr, after, tz) AS got,
       agent.cron_next(expr, after, tz) IS NOT DISTINCT FROM expected AS ok, why
  FROM cron_cases ORDER BY why COLLATE "C";
SELECT count(*) AS wrong FROM cron_cases
 WHERE agent.cron_next(expr, after, tz) IS DISTINCT FROM expected;

-- defaults: after = now(), tz = UTC
SELECT agent.cron_next('* * * * *') > now() AS after_now,
       agent.cron_next('* * * * *') <= now() + interval '1 minute' AS within_a_minute;
SELECT agent.cron_next('0 9 * * *', '2024-01-01') = '2024-01-01 09:00+00' AS utc_default;
-- NULL in, NULL out
SELECT agent.cron_next(NULL, now()) IS NULL AS null_expr,
       agent.cron_next('* * * * *', NULL) IS NULL AS null_after,
       agent.cron_next('* * * * *', now(), NULL) IS NULL AS null_tz;
-- the next firings of a schedule
SELECT * FROM agent.cron_upcoming('0 9 * * MON,WED,FRI', 5, '2024-01-01');
SELECT count(*) FROM agent.cron_upcoming('0 0 31 2 *', 3, '2024-01-01');
SELECT count(*) FROM agent.cron_upcoming('* * * * *', 0, '2024-01-01');
-- a microsecond before a slot still gets that slot
SELECT agent.cron_next('0 0 * * *', '2024-02-28 23:59:59.999999') AS microsecond_before;
-- the search looks five years ahead: February 29 on a Sunday (day-of-week */7
-- starts with *, so both day fields must match) next comes in 2032
SELECT agent.cron_next('0 0 29 2 */7', '2024-03-01') AS from_2024_beyond_horizon,
       agent.cron_next('0 0 29 2 */7', '2028-03-01') AS from_2028;

-- the ends of the timestamptz range, and a zone offset that is not whole minutes
-- (Paris used local mean time, +00:09:21, in 1850)
SELECT agent.cron_next('* * * * *', '294276-12-31 23:58:00Z') AS last_minute,
       agent.cron_next('* * * * *', '294276-12-31 23:59:00Z') AS past_the_end,
       agent.cron_next('0 0 1 1 *', '4713-01-01 00:00Z BC') AS first_year;
SELECT agent.cron_next('0 12 * * *', '1850-01-01', 'Europe/Paris') AS paris_noon_lmt;
DROP TABLE cron_cases;
