-- DST: each zone's spring-forward and fall-back, for fixed-time and hourly jobs.
--   America/New_York 2024: 03-10 07:00Z (02:00 EST -> 03:00 EDT),
--                          11-03 06:00Z (02:00 EDT -> 01:00 EST)
--   Europe/Paris 2024:     03-31 01:00Z (02:00 CET -> 03:00 CEST),
--                          10-27 01:00Z (03:00 CEST -> 02:00 CET)
-- Rules (docs/cron.md): a fixed-time job whose local time is skipped fires
-- once, at the first instant after the gap (03:00 local); a repeated local time
-- fires once, at its first occurrence.  Jobs whose minute or hour field starts
-- with * follow the wall clock: nothing is made up in a gap, and a repeated
-- hour fires again.
SET timezone = 'UTC';
CREATE TEMP TABLE dst_cases (tz text, expr text, after timestamptz, expected timestamptz[], why text);
INSERT INTO dst_cases VALUES
 ('America/New_York', '30 2 * * *', '2024-03-08 00:00Z',
  '{2024-03-08 07:30Z,2024-03-09 07:30Z,2024-03-10 07:00Z,2024-03-11 06:30Z}', 'NY spring: 02:30 skipped, fires at 03:00 EDT'),
 ('America/New_York', '30 1 * * *', '2024-03-09 00:00Z',
  '{2024-03-09 06:30Z,2024-03-10 06:30Z,2024-03-11 05:30Z}', 'NY spring: 01:30 unaffected'),
 ('America/New_York', '0 2 * * *', '2024-03-10 05:00Z',
  '{2024-03-10 07:00Z,2024-03-11 06:00Z}', 'NY spring: 02:00 skipped, fires at 03:00 EDT'),
 ('America/New_York', '0 2,3 * * *', '2024-03-10 05:00Z',
  '{2024-03-10 07:00Z,2024-03-11 06:00Z,2024-03-11 07:00Z}', 'NY spring: skipped 02:00 and real 03:00 fire once'),
 ('America/New_York', '0 * * * *', '2024-03-10 05:00Z',
  '{2024-03-10 06:00Z,2024-03-10 07:00Z,2024-03-10 08:00Z}', 'NY spring: hourly goes 01:00 EST, 03:00 EDT'),
 ('America/New_York', '30 * * * *', '2024-03-10 05:00Z',
  '{2024-03-10 05:30Z,2024-03-10 06:30Z,2024-03-10 07:30Z}', 'NY spring: hourly :30 makes nothing up'),
 ('America/New_York', '30 1 * * *', '2024-11-02 00:00Z',
  '{2024-11-02 05:30Z,2024-11-03 05:30Z,2024-11-04 06:30Z}', 'NY fall: 01:30 repeated, fires at the first (EDT)'),
 ('America/New_York', '30 2 * * *', '2024-11-02 00:00Z',
  '{2024-11-02 06:30Z,2024-11-03 07:30Z,2024-11-04 07:30Z}', 'NY fall: 02:30 unaffected'),
 ('America/New_York', '30 * * * *', '2024-11-03 04:00Z',
  '{2024-11-03 04:30Z,2024-11-03 05:30Z,2024-11-03 06:30Z,2024-11-03 07:30Z}', 'NY fall: hourly fires in both 01:00 hours'),
 ('America/New_York', '*/30 1 * * *', '2024-11-03 04:00Z',
  '{2024-11-03 05:00Z,2024-11-03 05:30Z,2024-11-03 06:00Z,2024-11-03 06:30Z,2024-11-04 06:00Z}', 'NY fall: minute */30 follows the wall clock'),
 ('America/New_York', '45 1 * * *', '2024-11-03 06:10Z',
  '{2024-11-04 06:45Z}', 'NY fall: after the first 01:45, the second one does not fire'),
 ('Europe/Paris', '30 2 * * *', '2024-03-30 00:00Z',
  '{2024-03-30 01:30Z,2024-03-31 01:00Z,2024-04-01 00:30Z}', 'Paris spring: 02:30 skipped, fires at 03:00 CEST'),
 ('Europe/Paris', '30 1 * * *', '2024-03-30 00:00Z',
  '{2024-03-30 00:30Z,2024-03-31 00:30Z,2024-03-31 23:30Z}', 'Paris spring: 01:30 unaffected'),
 ('Europe/Paris', '15 * * * *', '2024-03-31 00:00Z',
  '{2024-03-31 00:15Z,2024-03-31 01:15Z,2024-03-31 02:15Z}', 'Paris spring: hourly :15 goes 01:15 CET, 03:15 CEST'),
 ('Europe/Paris', '30 2 * * *', '2024-10-26 00:00Z',
  '{2024-10-26 00:30Z,2024-10-27 00:30Z,2024-10-28 01:30Z}', 'Paris fall: 02:30 repeated, fires at the first (CEST)'),
 ('Europe/Paris', '30 1 * * *', '2024-10-26 00:00Z',
  '{2024-10-26 23:30Z,2024-10-28 00:30Z}', 'Paris fall: 01:30 unaffected'),
 ('Europe/Paris', '0 * * * *', '2024-10-26 23:30Z',
  '{2024-10-27 00:00Z,2024-10-27 01:00Z,2024-10-27 02:00Z}', 'Paris fall: hourly fires at 02:00 CEST and 02:00 CET'),
 ('Europe/Paris', '0 9 * * 1-5', '2024-10-25 00:00Z',
  '{2024-10-25 07:00Z,2024-10-28 08:00Z}', 'Paris: weekday 09:00 across the change');
SELECT tz, expr, why,
       array(SELECT agent.cron_upcoming(expr, cardinality(expected), after, tz)) AS got,
       array(SELECT agent.cron_upcoming(expr, cardinality(expected), after, tz)) = expected AS ok
  FROM dst_cases ORDER BY tz, why COLLATE "C";
SELECT count(*) AS wrong FROM dst_cases
 WHERE array(SELECT agent.cron_upcoming(expr, cardinality(expected), after, tz)) <> expected;
-- the same in local time, as a user reads it
SELECT u AT TIME ZONE 'America/New_York' AS new_york_local
  FROM agent.cron_upcoming('30 2 * * *', 3, '2024-03-09 00:00Z', 'America/New_York') u;
SELECT u AT TIME ZONE 'Europe/Paris' AS paris_local
  FROM agent.cron_upcoming('0 * * * *', 4, '2024-10-26 23:30Z', 'Europe/Paris') u;
-- a zone without DST
SELECT agent.cron_next('0 9 * * *', '2024-03-10 00:00Z', 'Asia/Tokyo') AS tokyo,
       agent.cron_next('0 9 * * *', '2024-03-10 00:00Z', 'UTC') AS utc;
DROP TABLE dst_cases;
