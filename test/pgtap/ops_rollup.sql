-- agent.run_stats over its daily rollup (sql/src/955_rollup.sql, issue 32):
-- equal to the same figures computed by scanning agent.runs (the rollup
-- set aside), after a fold, inserts into folded days, finishes, updates of
-- steps, a retention purge and a bulk delete, in two workspaces; who sees
-- which rows of the rollup (a reader bound to one workspace, one bound to
-- none, the application, pg_monitor, a role with nothing).
BEGIN;
SELECT plan(33);

SET LOCAL client_min_messages = warning;
CREATE ROLE rollup_nobody NOLOGIN;                           -- PUBLIC only
CREATE ROLE rollup_app NOLOGIN IN ROLE agents_app;           -- the documented grants
CREATE ROLE rollup_reader NOLOGIN IN ROLE agents_reader;     -- bound to w-rollup-1
CREATE ROLE rollup_reader2 NOLOGIN IN ROLE agents_reader;    -- bound to nothing
CREATE ROLE rollup_monitor NOLOGIN IN ROLE pg_monitor;
RESET client_min_messages;
SELECT agent.bind_reader('rollup_reader', 'w-rollup-1');

-- only this test's runs: the rollup starts empty
DELETE FROM agent.run_rollup;
DELETE FROM agent.run_rollup_dirty;
UPDATE agent.run_rollup_state SET watermark = NULL;

INSERT INTO agent.agents (id, workspace_id, owner_id, name, model) VALUES
  (996001, 'w-rollup-1', 'alice', 'rollup-a1', 'm-1'),
  (996002, 'w-rollup-1', 'alice', 'rollup-a2', NULL),
  (996003, 'w-rollup-2', 'bob', 'rollup-b1', 'm-2');

-- 1200 runs over 60 days, every status, several models, steps with latencies
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, requested_by, status, model,
                        created_at, started_at, finished_at, tokens_in, tokens_out, tokens_cached, error)
SELECT 9960000 + g, CASE WHEN g % 3 = 2 THEN 'w-rollup-2' ELSE 'w-rollup-1' END, 996001 + g % 3,
       'autonomous', 'api', 'alice',
       (ARRAY['succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired', 'succeeded', 'succeeded',
              'queued', 'running', 'waiting_approval', 'succeeded', 'succeeded'])[1 + g / 3 % 12],
       CASE WHEN g % 7 = 0 THEN NULL WHEN g % 7 = 1 THEN 'm-alt' ELSE 'm-main' END,
       c.at,
       CASE WHEN 1 + g / 3 % 12 <> 8 THEN c.at + make_interval(secs => (g % 17) * 0.013) END,
       CASE WHEN 1 + g / 3 % 12 NOT IN (8, 9, 10) THEN c.at + make_interval(secs => (g % 17) * 0.013 + (g % 23) * 0.37 + 0.0004) END,
       g % 50, g % 9, g % 4, NULL
  FROM generate_series(1, 1200) g
 CROSS JOIN LATERAL (SELECT now() - make_interval(secs => g * 4320 + 60) AS at) c;
INSERT INTO agent.run_steps (run_id, seq, kind, name, status, started_at, finished_at)
SELECT r.id, s, CASE WHEN s = 2 AND r.id % 4 = 0 THEN 'error' ELSE 'llm' END, 'm',
       CASE WHEN s = 2 AND r.id % 4 = 0 THEN 'retry' ELSE 'ok' END,
       r.started_at, r.started_at + make_interval(secs => (r.id % 13) * 0.11 + s * 0.05)
  FROM agent.runs r, generate_series(1, 2) s
 WHERE r.id BETWEEN 9960001 AND 9961200 AND r.started_at IS NOT NULL;

-- run_stats with the rollup set aside (every run scanned), kept in a table
CREATE FUNCTION pg_temp.direct(p_since timestamptz) RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
  v_w timestamptz;
BEGIN
  SELECT watermark INTO v_w FROM agent.run_rollup_state;
  UPDATE agent.run_rollup_state SET watermark = NULL;
  RETURN QUERY SELECT * FROM agent.run_stats(p_since) WHERE agent_id BETWEEN 996001 AND 996003;
  UPDATE agent.run_rollup_state SET watermark = v_w;
END
$$;
-- rows of run_stats(since) over the rollup that differ from the direct
-- figures: counts, sums and maxima equal, percentiles within 4.5 % (or
-- 0.5 ms below 1 ms)
CREATE FUNCTION pg_temp.diff(p_since timestamptz) RETURNS bigint LANGUAGE sql AS $$
  WITH d AS (SELECT * FROM pg_temp.direct(p_since) AS x(
               workspace_id text, agent_id bigint, agent_name text, provider text, endpoint_host text,
               model text, runs bigint, succeeded bigint, failed bigint, budget_exceeded bigint,
               cancelled bigint, expired bigint, active bigint, failure_rate numeric,
               duration_p50_ms double precision, duration_p95_ms double precision,
               duration_max_ms double precision, queue_p50_ms double precision,
               queue_p95_ms double precision, queue_max_ms double precision, llm_calls bigint,
               llm_p50_ms double precision, llm_p95_ms double precision, llm_max_ms double precision,
               tokens_in numeric, tokens_out numeric, tokens_cached numeric, retries bigint)),
       r AS (SELECT * FROM agent.run_stats(p_since) WHERE agent_id BETWEEN 996001 AND 996003)
  SELECT count(*) FROM d FULL JOIN r
      ON r.workspace_id = d.workspace_id AND r.agent_id = d.agent_id AND r.model IS NOT DISTINCT FROM d.model
   WHERE d.agent_id IS NULL OR r.agent_id IS NULL
      OR (d.agent_name, d.provider, d.endpoint_host, d.runs, d.succeeded, d.failed, d.budget_exceeded, d.cancelled,
          d.expired, d.active, d.failure_rate, d.duration_max_ms, d.queue_max_ms, d.llm_calls, d.llm_max_ms,
          d.tokens_in, d.tokens_out, d.tokens_cached, d.retries)
         IS DISTINCT FROM
         (r.agent_name, r.provider, r.endpoint_host, r.runs, r.succeeded, r.failed, r.budget_exceeded, r.cancelled,
          r.expired, r.active, r.failure_rate, r.duration_max_ms, r.queue_max_ms, r.llm_calls, r.llm_max_ms,
          r.tokens_in, r.tokens_out, r.tokens_cached, r.retries)
      OR EXISTS (SELECT FROM (VALUES (d.duration_p50_ms, r.duration_p50_ms), (d.duration_p95_ms, r.duration_p95_ms),
                                     (d.queue_p50_ms, r.queue_p50_ms), (d.queue_p95_ms, r.queue_p95_ms),
                                     (d.llm_p50_ms, r.llm_p50_ms), (d.llm_p95_ms, r.llm_p95_ms)) p(e, a)
                  WHERE (p.e IS NULL) <> (p.a IS NULL)
                     OR abs(p.a - p.e) > greatest(0.045 * p.e, 0.5))
$$;
CREATE FUNCTION pg_temp.check_all() RETURNS bigint LANGUAGE sql AS $$
  SELECT pg_temp.diff(now() - interval '1 year') + pg_temp.diff(now() - interval '30 days')
         + pg_temp.diff(now() - interval '36 hours') + pg_temp.diff(now() - interval '1 day')
$$;

-- ---------------------------------------------------------------- fold
SELECT ok(agent._run_rollup_fold(now(), 100) > 0, 'the tick''s fold folds the closed days');
SELECT is(agent._run_rollup_watermark(), date_trunc('day', now(), 'UTC'), 'the watermark is the last UTC midnight');
SELECT is((SELECT sum(runs) FROM agent.run_rollup WHERE NOT month AND agent_id BETWEEN 996001 AND 996003),
          (SELECT count(*) FROM agent.runs WHERE agent_id BETWEEN 996001 AND 996003
              AND created_at < date_trunc('day', now(), 'UTC'))::numeric,
          'the rollup holds every run before the watermark');
SELECT is((SELECT sum(runs) FROM agent.run_stats(now() - interval '1 year') WHERE agent_id BETWEEN 996001 AND 996003),
          1200::numeric, 'run_stats over a year counts every run');
SELECT is(pg_temp.diff(now() - interval '1 year'), 0::bigint, 'a year: run_stats over the rollup equals the scan of agent.runs');
SELECT is(pg_temp.diff(now() - interval '30 days'), 0::bigint, '30 days: equal');
SELECT is(pg_temp.diff(now() - interval '36 hours'), 0::bigint, '36 hours (a partial first day): equal');
SELECT is(pg_temp.diff(now() - interval '1 day'), 0::bigint, 'the last day (no whole folded day): equal');
SELECT is((SELECT sum(runs) FROM agent.run_rollup WHERE month AND agent_id BETWEEN 996001 AND 996003),
          (SELECT sum(runs) FROM agent.run_rollup WHERE NOT month AND agent_id BETWEEN 996001 AND 996003
              AND day < date_trunc('month', now(), 'UTC')),
          'the month rows hold the runs of the whole months before the watermark');
SELECT is(agent._run_rollup_fold(now(), 100), 0, 'a second fold has nothing to do');

-- ---------------------------------------------------------------- changes to folded days
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status, model, created_at, started_at, finished_at,
                        tokens_in, tokens_out)
VALUES (9961500, 'w-rollup-2', 996003, 'autonomous', 'api', 'succeeded', 'm-new', now() - interval '10 days',
        now() - interval '10 days', now() - interval '10 days' + interval '90 minutes', 7, 7);
SELECT is((SELECT count(*) FROM agent.run_rollup_dirty WHERE workspace_id = 'w-rollup-2'), 1::bigint,
          'a run inserted into a folded day marks that day dirty');
SELECT is(pg_temp.check_all(), 0::bigint, 'after the insert: equal (the dirty day scanned)');
UPDATE agent.runs SET status = 'succeeded', finished_at = started_at + interval '3 hours', tokens_in = 999
 WHERE id BETWEEN 9960001 AND 9961200 AND status = 'running';
SELECT is(pg_temp.check_all(), 0::bigint, 'after old runs finish (the finish path): equal');
UPDATE agent.run_steps SET finished_at = finished_at + interval '20 seconds'
 WHERE run_id IN (SELECT id FROM agent.runs WHERE id BETWEEN 9960001 AND 9961200 AND created_at < now() - interval '40 days'
                   AND id % 5 = 0);
SELECT is(pg_temp.check_all(), 0::bigint, 'after steps of old runs change: equal');
SELECT is(agent._run_rollup_fold(now(), 100), 0, 'a fold less than a minute after the last one leaves the dirty days (scanned meanwhile)');
SELECT ok(agent._run_rollup_fold(now() + interval '2 minutes', 100) > 0, 'a minute later the fold refolds the dirty days');
SELECT is((SELECT count(*) FROM agent.run_rollup_dirty), 0::bigint, 'no day is dirty after it');
SELECT is(pg_temp.check_all(), 0::bigint, 'after the refold: equal');

-- retention (agent.purge_runs) and a bulk delete
SET LOCAL pg_agents.run_retention_days = 45;
SELECT ok(agent.purge_runs(100000) > 0, 'retention purges the runs ended over 45 days ago');
SELECT is(pg_temp.check_all(), 0::bigint, 'after the purge: equal');
DELETE FROM agent.runs WHERE agent_id = 996002 AND created_at < now() - interval '20 days';
SELECT is(pg_temp.check_all(), 0::bigint, 'after a bulk delete of one agent''s runs: equal');
SELECT ok(agent._run_rollup_fold(now() + interval '4 minutes', 100) > 0, 'the fold refolds them');
SELECT is(pg_temp.check_all(), 0::bigint, 'after the refold: equal');
SELECT is((SELECT count(*) FROM agent.run_rollup r WHERE NOT EXISTS (
             SELECT FROM agent.runs x WHERE x.workspace_id = r.workspace_id AND x.agent_id = r.agent_id
                AND date_trunc(CASE WHEN r.month THEN 'month' ELSE 'day' END, x.created_at, 'UTC') = r.day)
                AND r.agent_id BETWEEN 996001 AND 996003),
          0::bigint, 'no rollup row is left of deleted runs');

-- ---------------------------------------------------------------- who sees what
SET LOCAL ROLE rollup_reader;
SET LOCAL pg_agents.workspace = 'w-rollup-1';
SELECT is((SELECT array_agg(DISTINCT workspace_id) FROM agent.run_stats(now() - interval '1 year')
            WHERE agent_id BETWEEN 996001 AND 996003), ARRAY['w-rollup-1'],
          'a reader bound to w-rollup-1 sees its workspace only, over the rollup');
SELECT is((SELECT count(*) FROM agent._run_rollup_visible WHERE workspace_id <> 'w-rollup-1'), 0::bigint,
          'nor any rollup row of another workspace');
SELECT throws_ok('SELECT count(*) FROM agent.run_rollup', '42501', NULL, 'the reader cannot read the rollup table');
SET LOCAL pg_agents.workspace = 'w-rollup-2';
SELECT is((SELECT count(*) FROM agent.run_stats(now() - interval '1 year') WHERE agent_id BETWEEN 996001 AND 996003),
          0::bigint, 'naming a workspace it is not bound to, it sees nothing');
RESET ROLE;
SET LOCAL ROLE rollup_reader2;
SET LOCAL pg_agents.workspace = 'w-rollup-1';
SELECT is((SELECT count(*) FROM agent._run_rollup_visible) + (SELECT count(*) FROM agent._run_rollup_dirty_visible),
          0::bigint, 'a reader bound to nothing sees no rollup row');
RESET ROLE;
SET LOCAL ROLE rollup_app;
SET LOCAL pg_agents.workspace = 'w-rollup-2';
SELECT is((SELECT array_agg(DISTINCT workspace_id) FROM agent.run_stats(now() - interval '1 year')
            WHERE agent_id BETWEEN 996001 AND 996003), ARRAY['w-rollup-2'],
          'the application sees the workspace its session names, over the rollup');
RESET ROLE;
SET LOCAL ROLE rollup_monitor;
SELECT is((SELECT count(DISTINCT workspace_id) FROM agent.run_stats(now() - interval '1 year')
            WHERE agent_id BETWEEN 996001 AND 996003), 2::bigint, 'pg_monitor sees both workspaces');
RESET ROLE;
SET LOCAL ROLE rollup_nobody;
SELECT throws_ok('SELECT count(*) FROM agent._run_rollup_visible', '42501', NULL, 'a role with nothing cannot read the rollup view');
SELECT throws_ok('SELECT agent._run_rollup_fold()', '42501', NULL, 'nor fold it');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
