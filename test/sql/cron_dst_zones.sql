-- Wall-clock jobs across the 2024 DST changes of unusual zones, checked against
-- PostgreSQL's own AT TIME ZONE: every minute of the three days around each
-- change whose local time matches must be a firing, and nothing else.
--   Lord Howe: 30-minute DST; St John's: -03:30; Chatham: +12:45/+13:45;
--   Santiago: the change happens at midnight.
SET timezone = 'UTC';
CREATE TEMP TABLE zone_changes (tz text, d date);
INSERT INTO zone_changes VALUES
 ('America/New_York', '2024-03-10'), ('America/New_York', '2024-11-03'),
 ('Europe/Paris', '2024-03-31'), ('Europe/Paris', '2024-10-27'),
 ('Australia/Lord_Howe', '2024-04-07'), ('Australia/Lord_Howe', '2024-10-06'),
 ('America/St_Johns', '2024-03-10'), ('America/St_Johns', '2024-11-03'),
 ('Pacific/Chatham', '2024-04-07'), ('Pacific/Chatham', '2024-09-29'),
 ('America/Santiago', '2024-04-07'), ('America/Santiago', '2024-09-08'),
 ('Asia/Kolkata', '2024-03-10');
SELECT w.tz, w.d, e.expr,
  (SELECT array_agg(t ORDER BY t)
     FROM generate_series((w.d - 1)::timestamp AT TIME ZONE w.tz, (w.d + 2)::timestamp AT TIME ZONE w.tz, '1 minute') t
    WHERE e.minute_mod = 0 AND extract(minute FROM t AT TIME ZONE w.tz)::int % 20 = 0
       OR e.minute_mod = 45 AND extract(minute FROM t AT TIME ZONE w.tz)::int = 45
       OR e.minute_mod = 3 AND extract(minute FROM t AT TIME ZONE w.tz)::int = 0
                           AND extract(hour FROM t AT TIME ZONE w.tz)::int % 3 = 0)
  = (SELECT array_agg(u ORDER BY u)
       FROM agent.cron_upcoming(e.expr, 1000, ((w.d - 1)::timestamp AT TIME ZONE w.tz) - interval '1 second', w.tz) u
      WHERE u <= (w.d + 2)::timestamp AT TIME ZONE w.tz) AS same_as_wall_clock
  FROM zone_changes w,
       (VALUES ('*/20 * * * *', 0), ('45 * * * *', 45), ('0 */3 * * *', 3)) AS e(expr, minute_mod)
 ORDER BY 1, 2, 3;
DROP TABLE zone_changes;

-- fixed-time jobs in those zones
-- Santiago, 2024-09-08: midnight does not exist (00:00 -04 -> 01:00 -03): fires at 01:00
SELECT u AT TIME ZONE 'America/Santiago' AS santiago_local, u
  FROM agent.cron_upcoming('0 0 * * *', 3, '2024-09-06 12:00Z', 'America/Santiago') u;
-- Lord Howe, 2024-10-06: 02:00 -> 02:30, so 02:15 is skipped: fires at 02:30
SELECT u AT TIME ZONE 'Australia/Lord_Howe' AS lord_howe_local, u
  FROM agent.cron_upcoming('15 2 * * *', 3, '2024-10-04 00:00Z', 'Australia/Lord_Howe') u;
-- Lord Howe, 2024-04-07: 02:00 -> 01:30, so 01:45 happens twice: fires at the first
SELECT u AT TIME ZONE 'Australia/Lord_Howe' AS lord_howe_local, u
  FROM agent.cron_upcoming('45 1 * * *', 3, '2024-04-05 00:00Z', 'Australia/Lord_Howe') u;
