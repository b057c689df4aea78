-- agent.cron_describe: plain English, and agent.cron_valid.
CREATE TEMP TABLE describe_cases (expr text, expected text);
INSERT INTO describe_cases VALUES
 ('* * * * *',             'every minute'),
 ('*/5 * * * *',           'every 5 minutes'),
 ('*/15 * * * *',          'every 15 minutes'),
 ('0 * * * *',             'every hour'),
 ('@hourly',               'every hour'),
 ('0 */4 * * *',           'every 4 hours'),
 ('30 * * * *',            'at minute 30 past every hour'),
 ('0,30 * * * *',          'at minutes 0 and 30 past every hour'),
 ('1-10/2 * * * *',        'every 2nd minute from 1 through 9 past every hour'),
 ('0 7 * * *',             'at 07:00 every day'),
 ('@daily',                'at 00:00 every day'),
 ('30 17 * * *',           'at 17:30 every day'),
 ('0 9,17 * * *',          'at 09:00 and 17:00 every day'),
 ('0 9-17/2 * * *',        'at 09:00, 11:00, 13:00, 15:00 and 17:00 every day'),
 ('0 9 * * 1-5',           'at 09:00 on Monday through Friday'),
 ('0 9 * * MON-FRI',       'at 09:00 on Monday through Friday'),
 ('0 17 * * 1-5',          'at 17:00 on Monday through Friday'),
 ('0 9 * * 1',             'at 09:00 on Monday'),
 ('0 10 * * sat,sun',      'at 10:00 on Saturday and Sunday'),
 ('0 10 * * 0,6',          'at 10:00 on Saturday and Sunday'),
 ('0 10 * * 5-7',          'at 10:00 on Friday through Sunday'),
 ('0 8 * * 1,3,5',         'at 08:00 on Monday, Wednesday and Friday'),
 ('@weekly',               'at 00:00 on Sunday'),
 ('0 0 1 * *',             'at 00:00 on day 1 of the month'),
 ('@monthly',              'at 00:00 on day 1 of the month'),
 ('0 0 1,15 * *',          'at 00:00 on days 1 and 15 of the month'),
 ('0 0 1-7 * *',           'at 00:00 on days 1 through 7 of the month'),
 ('0 0 */2 * *',           'at 00:00 on every 2nd day of the month'),
 ('0 0 1 1 *',             'at 00:00 on day 1 of the month in January'),
 ('@yearly',               'at 00:00 on day 1 of the month in January'),
 ('0 12 * JAN-MAR *',      'at 12:00 every day in January through March'),
 ('0 12 * */3 *',          'at 12:00 every day in every 3rd month'),
 ('0 0 13 * 5',            'at 00:00 on day 13 of the month or on Friday'),
 ('0 0 */2 * 1',           'at 00:00 on every 2nd day of the month if it is Monday'),
 ('0 0 1-31 * 1',          'at 00:00 every day'),
 ('*/15 9-17 * * MON-FRI', 'every 15 minutes past hours 9 through 17 on Monday through Friday'),
 ('* 9 * * *',             'every minute past hour 9'),
 ('0,15,30,45 8-18 * * *', 'every 15 minutes past hours 8 through 18'),
 ('5 */2 * * *',           'at minute 5 past every 2nd hour'),
 ('0 0 29 2 *',            'at 00:00 on day 29 of the month in February');
SELECT expr, agent.cron_describe(expr) AS description,
       agent.cron_describe(expr) = expected AS ok
  FROM describe_cases ORDER BY expr COLLATE "C";
SELECT count(*) AS wrong FROM describe_cases WHERE agent.cron_describe(expr) <> expected;
DROP TABLE describe_cases;

-- cron_valid never raises
SELECT left(e, 30) AS expr, agent.cron_valid(e) AS valid
  FROM unnest(ARRAY['0 9 * * 1-5', '@daily', '*/15 * * * *', '0 0 31 2 *', '0 0 * * 7',
                    '', '   ', 'hello', '61 * * * *', '* * * *', '* * * * * *', '@reboot',
                    '*/0 * * * *', '5-1 * * * *', '1,,2 * * * *', '* * * * 8',
                    '* * * FOO *', repeat('1,', 150) || '1 * * * *']) e;
SELECT agent.cron_valid(NULL) IS NULL AS null_in_null_out;
SELECT agent.cron_describe(NULL) IS NULL AS null_in_null_out;
