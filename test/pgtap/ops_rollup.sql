-- The rollup of agent.run_stats (docs/operations.md, "run_stats at a year of
-- history"): runs of two workspaces over about 80 days, folded by the tick
-- into day and month rows; run_stats read through the rollup equals, for
-- many windows (UTC midnights, month starts, hours in between, before every
-- run), run_stats computed from agent.runs alone (the watermark hidden),
-- and figures computed directly from agent.runs and agent.run_steps.  An
-- active run holds the fold back at its day; the retention purge and the
-- deletion of an agent keep it exact.  Who reads it: a reader bound to one
-- workspace, the application, a role with no grant.
BEGIN;
SELECT plan(24);

SET LOCAL client_min_messages = warning;
CREATE ROLE rr_nobody NOLOGIN;                              -- PUBLIC only
CREATE ROLE rr_app NOLOGIN IN ROLE agents_app;              -- the documented grants
CREATE ROLE rr_reader NOLOGIN IN ROLE agents_reader;        -- bound to w-rr-1
RESET client_min_messages;
SELECT agent.bind_reader('rr_reader', 'w-rr-1');

-- a clean slate: the rollup of this database is rebuilt inside this
-- transaction (rolled back at the end)
SELECT agent.reset_run_rollup();

INSERT INTO agent.agents (id, workspace_id, owner_id, name, model) VALUES
  (996001, 'w-rr-1', 'alice', 'rr-a1', 'm-small'),
  (996002, 'w-rr-1', 'alice', 'rr-a2', NULL),
  (996003, 'w-rr-2', 'bob', 'rr-b1', 'm-big'),
  (996004, 'w-rr-2', 'bob', 'rr-b2', 'm-big');

-- about 80 days of ended runs (several models per agent, every terminal
-- status, some never started), two LLM steps each and a retry every 9th
CREATE TEMP TABLE rr_base AS SELECT now() AS t0;
INSERT INTO agent.runs (id, workspace_id, agent_id, root_run_id, regime, origin, status, model,
                        created_at, started_at, finished_at, tokens_in, tokens_out, tokens_cached, attempts, error)
SELECT 996000000 + g, CASE WHEN g % 4 < 2 THEN 'w-rr-1' ELSE 'w-rr-2' END, 996001 + g % 4, 996000000 + g,
       'autonomous', 'event', s.status, CASE WHEN g % 7 = 0 THEN NULL ELSE 'm-' || (g % 3) END,
       c.at, CASE WHEN g % 17 <> 0 THEN c.at + (g % 13) * interval '70 ms' END,
       c.at + (g % 13) * interval '70 ms' + (g % 29) * interval '333 ms', 10 + g % 50, g % 7, g % 3, 1,
       CASE s.status WHEN 'failed' THEN 'LLM endpoint returned HTTP 503' END
  FROM generate_series(1, 4000) g
 CROSS JOIN LATERAL (SELECT (SELECT t0 FROM rr_base) - g * interval '29 minutes' - interval '2 hours' AS at) c
 CROSS JOIN LATERAL (SELECT (ARRAY['succeeded', 'succeeded', 'failed', 'succeeded', 'budget_exceeded', 'cancelled',
                                   'succeeded', 'expired'])[1 + g % 8] AS status) s;
INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, status, tokens, started_at, finished_at)
SELECT r.workspace_id, r.id, k.seq, k.kind, 'm', k.status, 5, r.started_at,
       r.started_at + (k.seq * 40 + r.id % 97) * interval '1 ms'
  FROM agent.runs r
 CROSS JOIN LATERAL (VALUES (1, 'llm', 'ok'), (2, CASE WHEN r.id % 9 = 0 THEN 'error' ELSE 'llm' END,
                             CASE WHEN r.id % 9 = 0 THEN 'retry' ELSE 'ok' END)) k(seq, kind, status)
 WHERE r.agent_id BETWEEN 996001 AND 996004 AND r.started_at IS NOT NULL;
-- one run waiting for an approval, 30 days ago
INSERT INTO agent.runs (id, workspace_id, agent_id, root_run_id, regime, origin, status, model, created_at, started_at)
VALUES (996999999, 'w-rr-2', 996003, 996999999, 'autonomous', 'event', 'waiting_approval', 'm-1',
        (SELECT t0 FROM rr_base) - interval '30 days', (SELECT t0 FROM rr_base) - interval '30 days');

ANALYZE agent.runs;
ANALYZE agent.run_steps;

-- the windows compared
CREATE TEMP TABLE rr_windows AS
  SELECT DISTINCT s AS since FROM (
    SELECT t0 - k * interval '1 day' - h * interval '1 hour' AS s
      FROM rr_base, generate_series(0, 85, 5) k, unnest(ARRAY[0, 13]) h
    UNION ALL
    SELECT date_trunc('day', t0, 'UTC') - k * interval '24 hours' FROM rr_base, generate_series(0, 85, 7) k
    UNION ALL
    SELECT date_trunc('month', t0, 'UTC') - k * interval '1 month' FROM rr_base, generate_series(0, 3) k
    UNION ALL
    SELECT t0 - interval '1 year' FROM rr_base
    UNION ALL
    SELECT t0 - interval '1 hour' FROM rr_base) x;
CREATE TEMP TABLE rr_through AS SELECT w.since, s.* FROM rr_windows w, agent.run_stats(w.since) s LIMIT 0;
CREATE TEMP TABLE rr_raw AS SELECT * FROM rr_through LIMIT 0;
-- run_stats through the rollup against run_stats of agent.runs alone (the
-- watermark hidden for the time of the second computation): the rows that
-- differ, over every window
CREATE FUNCTION pg_temp.rr_diff() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_state agent.run_rollup_state;
  v_n bigint;
BEGIN
  TRUNCATE rr_through, rr_raw;
  INSERT INTO rr_through SELECT w.since, s.* FROM rr_windows w, agent.run_stats(w.since) s
   WHERE s.agent_id BETWEEN 996001 AND 996004;
  SELECT * INTO v_state FROM agent.run_rollup_state;
  DELETE FROM agent.run_rollup_state;
  INSERT INTO rr_raw SELECT w.since, s.* FROM rr_windows w, agent.run_stats(w.since) s
   WHERE s.agent_id BETWEEN 996001 AND 996004;
  IF v_state.id IS NOT NULL THEN
    INSERT INTO agent.run_rollup_state SELECT v_state.*;
  END IF;
  SELECT count(*) INTO v_n FROM ((TABLE rr_through EXCEPT ALL TABLE rr_raw) UNION ALL (TABLE rr_raw EXCEPT ALL TABLE rr_through)) d;
  RETURN v_n;
END
$$;
-- folds until nothing is left (the ticks do it 31 days at a time)
CREATE FUNCTION pg_temp.rr_fold() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_n integer := 0;
  v_k integer;
BEGIN
  UPDATE agent.run_rollup_state SET blocked_at = NULL;
  LOOP
    v_k := agent._run_rollup_fold();
    EXIT WHEN v_k <= 0;
    v_n := v_n + v_k;
  END LOOP;
  RETURN v_n;
END
$$;

-- ---------------------------------------------------------------- the fold
-- (a worker ticking this database may hold the tick's lock for a moment)
CREATE FUNCTION pg_temp.rr_tick() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 200 LOOP
    PERFORM agent.tick();
    IF EXISTS (SELECT FROM agent.run_rollup_state WHERE watermark IS NOT NULL) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN false;
END
$$;
SELECT ok(pg_temp.rr_tick(), 'agent.tick() folds the rollup');
SELECT ok(pg_temp.rr_fold() > 0, 'the next folds go on');
SELECT is((SELECT watermark FROM agent.run_rollup_state),
          date_trunc('day', (SELECT t0 FROM rr_base) - interval '30 days', 'UTC'),
          'an active run holds the fold back at its day');
SELECT is(pg_temp.rr_diff(), 0::bigint, 'run_stats through the rollup equals run_stats of agent.runs, for every window');
SELECT is(agent._run_rollup_fold(), 0, 'a blocked fold tries again a minute later only');

UPDATE agent.runs SET status = 'expired', finished_at = (SELECT t0 FROM rr_base) - interval '29 days' WHERE id = 996999999;
SELECT ok(pg_temp.rr_fold() > 0, 'the run ended: the fold goes on');
SELECT is((SELECT watermark FROM agent.run_rollup_state), date_trunc('day', now(), 'UTC'), 'up to today');
SELECT ok((SELECT count(*) FROM agent.run_rollup WHERE month AND agent_id BETWEEN 996001 AND 996004) > 0
          AND (SELECT count(*) FROM agent.run_rollup WHERE NOT month AND agent_id BETWEEN 996001 AND 996004) > 0,
          'with day rows and the month rows of the closed months');
SELECT is(pg_temp.rr_diff(), 0::bigint, 'run_stats through the rollup equals run_stats of agent.runs, for every window');
SELECT ok((SELECT count(*) FROM rr_through) > 300 AND (SELECT count(DISTINCT since) FROM rr_through) > 50,
          'over many windows');

-- figures computed directly from the tables (a year: every run)
SELECT is((SELECT count(*) FROM (
    WITH r AS (SELECT * FROM agent.runs WHERE agent_id BETWEEN 996001 AND 996004 AND created_at >= now() - interval '1 year'),
    d AS (
      SELECT agent_id, model, count(*) AS runs, count(*) FILTER (WHERE status = 'failed') AS failed,
             count(*) FILTER (WHERE status = 'expired') AS expired,
             max(date_part('epoch', finished_at - started_at) * 1000) AS dmax,
             agent._hist_quantile(agent._hist(date_part('epoch', finished_at - started_at) * 1000), 0.5) AS d50,
             agent._hist_quantile(agent._hist(date_part('epoch', started_at - created_at) * 1000), 0.95) AS q95,
             sum(tokens_in) AS tin, sum(tokens_out) AS tout, sum(tokens_cached) AS tcached
        FROM r GROUP BY 1, 2),
    s AS (
      SELECT r.agent_id, r.model, count(*) FILTER (WHERE s.kind = 'llm') AS llm_calls,
             agent._hist_quantile(agent._hist(date_part('epoch', s.finished_at - s.started_at) * 1000)
                                    FILTER (WHERE s.kind = 'llm'), 0.95) AS l95,
             count(*) FILTER (WHERE s.kind = 'error' AND s.status = 'retry') AS retries
        FROM r JOIN agent.run_steps s ON s.workspace_id = r.workspace_id AND s.run_id = r.id GROUP BY 1, 2),
    v AS (SELECT * FROM agent.run_stats(now() - interval '1 year') WHERE agent_id BETWEEN 996001 AND 996004)
    SELECT 1 FROM d LEFT JOIN s ON s.agent_id = d.agent_id AND s.model IS NOT DISTINCT FROM d.model
      FULL JOIN v ON v.agent_id = d.agent_id AND v.model IS NOT DISTINCT FROM d.model
     WHERE (d.runs, d.failed, d.expired, d.dmax, d.d50, d.q95, d.tin, d.tout, d.tcached,
            coalesce(s.llm_calls, 0), s.l95, coalesce(s.retries, 0))
           IS DISTINCT FROM (v.runs, v.failed, v.expired, v.duration_max_ms, v.duration_p50_ms, v.queue_p95_ms,
                             v.tokens_in, v.tokens_out, v.tokens_cached, v.llm_calls, v.llm_p95_ms, v.retries)) x),
          0::bigint, 'a year of run_stats equals the figures computed from agent.runs and agent.run_steps');

-- a run queued now is read from agent.runs
INSERT INTO agent.runs (id, workspace_id, agent_id, root_run_id, regime, origin, status, model)
VALUES (996999998, 'w-rr-1', 996001, 996999998, 'autonomous', 'event', 'queued', 'm-1');
SELECT is((SELECT sum(runs) FROM agent.run_stats(now() - interval '1 year') WHERE agent_id = 996001)::bigint,
          (SELECT count(*) FROM agent.runs WHERE agent_id = 996001), 'a run queued today counts at once');
DELETE FROM agent.runs WHERE id = 996999998;

-- ---------------------------------------------------------------- retention and deletion
SET LOCAL pg_agents.run_retention_days = 40;
SELECT ok(agent.purge_runs(100000) > 0, 'the retention purge removes the runs ended 40 days ago and more');
SELECT is(pg_temp.rr_diff(), 0::bigint, 'and run_stats through the rollup stays equal to agent.runs');
RESET pg_agents.run_retention_days;
SELECT agent.delete_agent(996002, 'alice');
SELECT is(pg_temp.rr_diff(), 0::bigint, 'an agent soft-deleted: still equal');
DELETE FROM agent.agents WHERE id = 996004;
SELECT is((SELECT count(*) FROM agent.run_rollup WHERE agent_id = 996004), 0::bigint,
          'an agent row deleted: its rollup rows go with it');
SELECT is(pg_temp.rr_diff(), 0::bigint, 'and run_stats stays equal to agent.runs');

-- ---------------------------------------------------------------- who reads it
SET LOCAL ROLE rr_reader;
SELECT set_config('pg_agents.workspace', 'w-rr-1', true) AS rr_ws \gset
SELECT is((SELECT string_agg(DISTINCT workspace_id, ',') FROM agent.run_stats(now() - interval '1 year')
            WHERE agent_id BETWEEN 996001 AND 996004), 'w-rr-1', 'a reader bound to w-rr-1 sees the run_stats of w-rr-1');
SELECT is((SELECT sum(runs) FROM agent.run_stats(now() - interval '1 year') WHERE agent_id BETWEEN 996001 AND 996004)::bigint,
          (SELECT count(*) FROM agent.runs WHERE agent_id BETWEEN 996001 AND 996004), 'every run of w-rr-1');
SELECT is((SELECT count(*) FROM agent._run_rollup_visible WHERE workspace_id <> 'w-rr-1'), 0::bigint,
          'and no rollup row of another workspace');
SELECT throws_ok('SELECT count(*) FROM agent.run_rollup', '42501', NULL, 'but not the rollup table itself');
RESET ROLE;
SET LOCAL ROLE rr_app;
SELECT set_config('pg_agents.workspace', 'w-rr-2', true) AS rr_ws \gset
SELECT is((SELECT string_agg(DISTINCT workspace_id, ',') FROM agent.run_stats(now() - interval '1 year')
            WHERE agent_id BETWEEN 996001 AND 996004), 'w-rr-2', 'the application sees its session''s workspace');
SELECT throws_ok('SELECT agent.reset_run_rollup()', '42501', NULL, 'and may not reset the rollup');
RESET ROLE;
SET LOCAL ROLE rr_nobody;
SELECT throws_ok('SELECT count(*) FROM agent._run_rollup_visible', '42501', NULL, 'a role with no grant reads no rollup');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
