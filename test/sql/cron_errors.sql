-- Every error of the cron functions: SQLSTATE 22023 and a message naming the bad field.
SET timezone = 'UTC';
\set VERBOSITY default
SELECT agent.cron_next('61 * * * *');
SELECT agent.cron_describe('0 9 * * funday');
SELECT agent.cron_next('0 9 * * *', now(), 'Mars/Olympus_Mons');
SELECT agent.cron_next('0 9 * * *', 'infinity');
SELECT agent.cron_next(repeat('1,', 150) || '1 * * * *');

-- the whole list: SQLSTATE and message for each bad expression
CREATE FUNCTION pg_temp.cron_error(e text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM agent.cron_next(e, '2024-01-01', 'UTC');
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
SELECT pg_temp.cron_error(e) AS error
  FROM unnest(ARRAY[
    '', '   ', '* * * *', '* * * * * *', '0 9 * * 1 extra',
    '61 * * * *', '* 24 * * *', '* * 0 * *', '* * 32 * *', '* * * 0 *', '* * * 13 *', '* * * * 8',
    '0-60 * * * *', '99999999999 * * * *',
    'a * * * *', '*5 * * * *', '? * * * *', '-5 * * * *', '1.5 * * * *',
    '* * * foo *', '* * * January *', '* * * * funday', '* * * * MONDAY',
    '1,,2 * * * *', ',1 * * * *', '1, * * * *',
    '5-2 * * * *', '* * * * FRI-MON', '* * * DEC-JAN *', '1- * * * *', '1-2-3 * * * *',
    '*/0 * * * *', '*/60 * * * *', '* */24 * * *', '*/ * * * *', '*/x * * * *', '1-10/0 * * * *', '*/2/2 * * * *',
    '@reboot', '@daily extra', '@', '@DAILY'
  ]) WITH ORDINALITY AS u(e, n) ORDER BY n;

-- cron_describe raises the same errors; cron_valid never does
SELECT pg_temp.cron_error('* 99 * * *') AS next_error;
DO $$ BEGIN PERFORM agent.cron_describe('* 99 * * *'); END $$;
SELECT agent.cron_valid('* 99 * * *') AS valid;

-- saving a schedule trigger validates it
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (450901, 'ws-cron-errors', 'u1', 'cron errors');
INSERT INTO agent.triggers (agent_id, kind, schedule, prompt) VALUES (450901, 'schedule', '0 25 * * *', 'x');
INSERT INTO agent.triggers (agent_id, kind, schedule, timezone, prompt) VALUES (450901, 'schedule', '0 9 * * *', 'Europe/Atlantis', 'x');
INSERT INTO agent.triggers (agent_id, kind, schedule, prompt) VALUES (450901, 'schedule', '0 0 31 2 *', 'x');
INSERT INTO agent.triggers (id, agent_id, kind, schedule, prompt) VALUES (450901, 450901, 'schedule', '0 9 * * *', 'x');
UPDATE agent.triggers SET schedule = '0 9 * * 1-9' WHERE id = 450901;
UPDATE agent.triggers SET timezone = 'Nowhere/City' WHERE id = 450901;
SELECT schedule, timezone FROM agent.triggers WHERE id = 450901;
DELETE FROM agent.agents WHERE id = 450901;
