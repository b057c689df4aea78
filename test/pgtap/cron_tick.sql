-- agent.tick: due schedules queue one run through the shared queue, missed
-- slots fire once, next_run_at advances with cron_next, disabled triggers and
-- suspended or deleted agents are skipped, the hourly cap applies.
BEGIN;
SELECT plan(54);

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (450801, 'ws-cron-tick', 'u1', 'tick active'),
  (450802, 'ws-cron-tick', 'u1', 'tick suspended'),
  (450803, 'ws-cron-tick', 'u1', 'tick deleted'),
  (450804, 'ws-cron-tick', 'u1', 'tick capped');
UPDATE agent.agents SET status = 'suspended' WHERE id = 450802;
UPDATE agent.agents SET deleted_at = now() WHERE id = 450803;
UPDATE agent.agents SET hourly_run_cap = 1 WHERE id = 450804;

-- Park every schedule that is not ours far in the future, so that tick here
-- only sees the triggers of this test.
CREATE TEMP TABLE parked AS
  SELECT id, next_run_at FROM agent.triggers WHERE kind = 'schedule' AND enabled;
UPDATE agent.triggers SET next_run_at = 'infinity' WHERE id IN (SELECT id FROM parked);

-- ---- saving computes next_run_at ----
INSERT INTO agent.triggers (id, agent_id, kind, schedule, prompt, created_by)
VALUES (450801, 450801, 'schedule', '0 9 * * *', 'Summarise the night', 'u1');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801),
          agent.cron_next('0 9 * * *', now(), 'UTC'),
          'insert computes next_run_at from now()');
SELECT is((SELECT workspace_id FROM agent.triggers WHERE id = 450801), 'ws-cron-tick',
          'workspace filled from the agent');
UPDATE agent.triggers SET schedule = '30 7 * * 1-5' WHERE id = 450801;
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801),
          agent.cron_next('30 7 * * 1-5', now(), 'UTC'), 'changing the schedule recomputes it');
UPDATE agent.triggers SET timezone = 'Asia/Tokyo' WHERE id = 450801;
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801),
          agent.cron_next('30 7 * * 1-5', now(), 'Asia/Tokyo'), 'changing the time zone recomputes it');
UPDATE agent.triggers SET enabled = false WHERE id = 450801;
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801), NULL,
          'disabling clears next_run_at');
UPDATE agent.triggers SET enabled = true WHERE id = 450801;
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801),
          agent.cron_next('30 7 * * 1-5', now(), 'Asia/Tokyo'), 're-enabling computes it again');
UPDATE agent.triggers SET next_run_at = '2030-01-01 09:00Z' WHERE id = 450801;
UPDATE agent.triggers SET prompt = 'Summarise the night, briefly' WHERE id = 450801;
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801), '2030-01-01 09:00Z'::timestamptz,
          'changing the prompt leaves next_run_at alone');
UPDATE agent.triggers SET schedule = '0 9 * * *', timezone = 'UTC' WHERE id = 450801;
UPDATE agent.triggers SET next_run_at = '2030-01-01 09:00Z' WHERE id = 450801;

-- ---- not due ----
SELECT is(agent.tick('2030-01-01 08:59:59Z'), 0, 'nothing due: tick queues nothing');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 450801), 0::bigint, 'no run made');

-- ---- due ----
SELECT is(agent.tick('2030-01-01 09:00Z'), 1, 'a due schedule: tick queues one run');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 450801), 1::bigint, 'exactly one run');
SELECT results_eq(
  $$SELECT regime, origin, status, trigger_id, requested_by FROM agent.runs WHERE agent_id = 450801$$,
  $$VALUES ('autonomous', 'schedule', 'queued', 450801::bigint, 'u1')$$,
  'the run is autonomous, origin schedule, queued, tied to its trigger');
SELECT is((SELECT input FROM agent.runs WHERE agent_id = 450801),
          jsonb_build_object('prompt', 'Summarise the night, briefly',
                             'scheduled_for', '2030-01-01 09:00Z'::timestamptz,
                             'trigger_id', 450801),
          'input carries prompt, scheduled_for and trigger_id');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801), '2030-01-02 09:00Z'::timestamptz,
          'next_run_at advanced to the next slot');
SELECT is((SELECT last_run_at FROM agent.triggers WHERE id = 450801), '2030-01-01 09:00Z'::timestamptz,
          'last_run_at written');
SELECT is(agent.tick('2030-01-01 09:00Z'), 0, 'a second tick at the same time queues nothing');
SELECT is(agent.tick('2030-01-01 10:00Z'), 0, 'nor does a later tick before the next slot');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 450801), 1::bigint, 'still one run');

-- ---- missed slots fire once ----
SELECT is(agent.tick('2030-01-05 12:00Z'), 1, 'four missed slots: one run');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 450801), 2::bigint, 'two runs in all');
SELECT is((SELECT input->>'scheduled_for' FROM agent.runs WHERE agent_id = 450801 ORDER BY id DESC LIMIT 1),
          to_jsonb('2030-01-02 09:00Z'::timestamptz)->>0,
          'scheduled_for is the first missed slot');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450801), '2030-01-06 09:00Z'::timestamptz,
          'next_run_at is the next slot after now, not the next missed one');
SELECT is((SELECT last_run_at FROM agent.triggers WHERE id = 450801), '2030-01-05 12:00Z'::timestamptz,
          'last_run_at is the tick time');

-- ---- next_run_at advances with the same code as cron_next (DST) ----
INSERT INTO agent.triggers (id, agent_id, kind, schedule, timezone, prompt)
VALUES (450802, 450801, 'schedule', '30 2 * * *', 'America/New_York', 'dst');
UPDATE agent.triggers SET next_run_at = '2024-03-09 07:30Z' WHERE id = 450802;
SELECT is(agent.tick('2024-03-09 07:30Z'), 1, 'New York 02:30 job fires');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450802),
          agent.cron_next('30 2 * * *', '2024-03-09 07:30Z', 'America/New_York'),
          'next_run_at = cron_next(schedule, now, timezone)');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450802), '2024-03-10 07:00Z'::timestamptz,
          'the skipped 02:30 becomes 03:00 EDT');
SELECT is(agent.tick('2024-03-10 07:00Z'), 1, 'and fires then');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450802), '2024-03-11 06:30Z'::timestamptz,
          'then 02:30 EDT the next day');
DELETE FROM agent.triggers WHERE id = 450802;

-- ---- disabled ----
UPDATE agent.triggers SET enabled = false WHERE id = 450801;
UPDATE agent.triggers SET next_run_at = '2030-01-06 09:00Z' WHERE id = 450801;
SELECT is(agent.tick('2030-01-07 00:00Z'), 0, 'a disabled trigger never fires, even with a past next_run_at');
UPDATE agent.triggers SET enabled = true WHERE id = 450801;
UPDATE agent.triggers SET next_run_at = '2030-01-06 09:00Z' WHERE id = 450801;

-- ---- suspended and deleted agents: skipped, next_run_at still advances ----
INSERT INTO agent.triggers (id, agent_id, kind, schedule, prompt) VALUES
  (450803, 450802, 'schedule', '0 9 * * *', 'suspended'),
  (450804, 450803, 'schedule', '0 9 * * *', 'deleted');
UPDATE agent.triggers SET next_run_at = '2030-01-06 09:00Z' WHERE id IN (450803, 450804);
SELECT is(agent.tick('2030-01-06 09:00Z'), 1, 'only the active agent''s schedule makes a run');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id IN (450802, 450803)), 0::bigint,
          'no run for a suspended or deleted agent');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450803), '2030-01-07 09:00Z'::timestamptz,
          'a suspended agent''s schedule still advances');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450804), '2030-01-07 09:00Z'::timestamptz,
          'a deleted agent''s schedule still advances');
SELECT is((SELECT last_run_at FROM agent.triggers WHERE id = 450803), NULL,
          'last_run_at stays empty when nothing was queued');
UPDATE agent.agents SET status = 'active' WHERE id = 450802;
SELECT is(agent.tick('2030-01-07 09:00Z'), 2, 'resumed: the agent''s next slot fires (no backlog)');
DELETE FROM agent.triggers WHERE id IN (450803, 450804);

-- ---- the hourly cap applies ----
INSERT INTO agent.triggers (id, agent_id, kind, schedule, prompt) VALUES
  (450805, 450804, 'schedule', '0 9 * * *', 'capped a'),
  (450806, 450804, 'schedule', '0 9 * * *', 'capped b');
UPDATE agent.triggers SET next_run_at = '2030-01-08 09:00Z' WHERE id IN (450805, 450806);
UPDATE agent.triggers SET next_run_at = 'infinity' WHERE id = 450801;
-- the set-based path queues them (agent._enqueue_run is the per-trigger fallback)
SET LOCAL track_functions = 'pl';
SELECT coalesce(pg_stat_get_xact_function_calls(
         'agent._enqueue_run(bigint,text,text,jsonb,bigint,text,bigint,bigint)'::regprocedure), 0) AS enq_before \gset
SELECT is(agent.tick('2030-01-08 09:00Z'), 2, 'both due schedules make a run');
SELECT is(coalesce(pg_stat_get_xact_function_calls(
            'agent._enqueue_run(bigint,text,text,jsonb,bigint,text,bigint,bigint)'::regprocedure), 0) - :enq_before,
          0::bigint, 'healthy schedules are queued by the set-based path, not one agent._enqueue_run each');
SELECT results_eq(
  $$SELECT status, error FROM agent.runs WHERE agent_id = 450804 ORDER BY trigger_id$$,
  $$VALUES ('queued', NULL::text), ('budget_exceeded', 'hourly run cap of 1 reached')$$,
  'past the hourly cap the run is created budget_exceeded, visible');
SELECT is((SELECT count(*) FROM agent.triggers WHERE id IN (450805, 450806)
            AND next_run_at = '2030-01-09 09:00Z' AND last_run_at = '2030-01-08 09:00Z'), 2::bigint,
          'both schedules advanced');
SELECT results_eq(
  $$SELECT last_status, last_error FROM agent.triggers WHERE id IN (450805, 450806) ORDER BY id$$,
  $$VALUES (NULL::text, NULL::text), ('budget_exceeded', 'hourly run cap of 1 reached')$$,
  'the capped schedule shows budget_exceeded as its last outcome; the queued one waits for its run to finish');

-- ---- a broken schedule is recorded and does not stop the others ----
SET LOCAL session_replication_role = replica;   -- bypass the save trigger, as a bad restore would
UPDATE agent.triggers SET timezone = 'Gone/Zone', next_run_at = '2030-01-09 09:00Z' WHERE id = 450805;
SET LOCAL session_replication_role = origin;
UPDATE agent.triggers SET next_run_at = '2030-01-09 09:00Z' WHERE id = 450806;
SET LOCAL client_min_messages = error;
SELECT is(agent.tick('2030-01-09 09:00Z'), 1, 'the healthy schedule still fires');
RESET client_min_messages;
SELECT results_eq(
  $$SELECT last_status, last_error, next_run_at FROM agent.triggers WHERE id = 450805$$,
  $$VALUES ('error', 'schedule could not fire: time zone "Gone/Zone" not recognized', NULL::timestamptz)$$,
  'the broken one records why and stops');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 450805), 1::bigint,
          'its failed attempt left no run behind');
DELETE FROM agent.triggers WHERE id IN (450805, 450806);

-- ---- other kinds are not touched ----
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, prompt)
VALUES (450807, 450801, 'event', 'collection.row_added', 'collection', 'not a schedule');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 450807), NULL, 'event triggers get no next_run_at');

-- ---- tick calls the other modules' periodic work with its own now ----
-- runs module: a running run whose lease ended is re-queued
INSERT INTO agent.runs (id, agent_id, regime, origin, status, lease_until, attempts, started_at)
VALUES (450899, 450801, 'autonomous', 'schedule', 'running', '2030-01-31 23:00Z', 1, now());
-- events module: a dedup fingerprint older than the window is dropped
INSERT INTO agent.event_dedup (workspace_id, trigger_id, fingerprint, seen_at)
VALUES ('ws-cron-tick', 450807, 'e:cron-tick-test', '2030-01-31 23:00Z');
SELECT is(agent.tick('2030-01-31 22:00Z'), 0, 'tick before the lease ends');
SELECT results_eq($$SELECT status FROM agent.runs WHERE id = 450899$$, $$VALUES ('running')$$,
                  'tick passes its now to agent._tick_runs: lease not over yet at that time');
SELECT is(agent.tick('2030-02-01 00:00Z'), 0, 'tick with nothing due');
SELECT results_eq($$SELECT status FROM agent.runs WHERE id = 450899$$, $$VALUES ('queued')$$,
                  'tick calls agent._tick_runs(now): the expired lease is reclaimed');
SELECT is((SELECT count(*) FROM agent.event_dedup WHERE fingerprint = 'e:cron-tick-test'), 0::bigint,
          'tick calls agent._events_cleanup(now): the old fingerprint is gone');

-- ---- privileges and plan ----
SELECT ok(NOT has_function_privilege('public', 'agent.tick(timestamptz)', 'EXECUTE'),
          'PUBLIC cannot call tick');
SELECT ok(has_function_privilege('public', 'agent.cron_next(text, timestamptz, text)', 'EXECUTE'),
          'anyone may preview a schedule');
SELECT ok((SELECT prosecdef FROM pg_proc WHERE oid = 'agent.tick(timestamptz)'::regprocedure),
          'tick is SECURITY DEFINER');
SELECT ok((SELECT proconfig @> ARRAY['search_path=pg_catalog, pg_temp'] FROM pg_proc
            WHERE oid = 'agent.tick(timestamptz)'::regprocedure), 'tick pins search_path');
SELECT ok((SELECT count(*) FROM pg_trigger WHERE tgrelid = 'agent.triggers'::regclass
            AND tgname = 'triggers_schedule_next') = 1, 'the save trigger is installed');

UPDATE agent.triggers t SET next_run_at = p.next_run_at FROM parked p WHERE t.id = p.id;
SELECT * FROM finish();
ROLLBACK;
