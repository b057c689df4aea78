-- Operations (docs/operations.md): the status views and agent.run_stats
-- against figures computed directly from agent.runs and agent.run_steps;
-- who sees which rows (an analytics role bound to one workspace, the
-- application, pg_monitor, a role with nothing, an agent session, a leaky
-- function in a WHERE clause); bulk cancel and re-run, their rights and
-- their audit rows.
BEGIN;
SELECT plan(65);

-- ---------------------------------------------------------------- setup
SET LOCAL client_min_messages = warning;
CREATE ROLE ops_nobody NOLOGIN;                              -- PUBLIC only
CREATE ROLE ops_app NOLOGIN IN ROLE agents_app;              -- the documented grants
CREATE ROLE ops_reader NOLOGIN IN ROLE agents_reader;        -- bound to w-ops-1
CREATE ROLE ops_reader2 NOLOGIN IN ROLE agents_reader;       -- bound to nothing
CREATE ROLE ops_monitor NOLOGIN IN ROLE pg_monitor;          -- the DBA's monitoring
RESET client_min_messages;
SELECT agent.bind_reader('ops_reader', 'w-ops-1');
-- the agents' own endpoints, allowlisted by the superuser (docs/worker.md)
SET LOCAL pg_agents.llm_url_allowlist = 'https://user:pw@llm.example.com:8443/v1?key=zz, http://[::1]:11434/v1';

INSERT INTO agent.agents (id, workspace_id, owner_id, name, model, scope) VALUES
  (995001, 'w-ops-1', 'alice', 'ops-a1', 'm-small', '{"llm_url": "https://user:pw@llm.example.com:8443/v1?key=zz", "llm_provider": "anthropic"}'),
  (995002, 'w-ops-1', 'alice', 'ops-a2', NULL, '{"llm_url": "http://[::1]:11434/v1"}'),
  (995003, 'w-ops-2', 'bob', 'ops-b1', 'm-big', '{}');

-- a year-old run, runs of today in every status, several models per agent
CREATE TEMP TABLE ops_base AS SELECT now() AS t0;
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, requested_by, status, priority, model,
                        created_at, started_at, finished_at, tokens_in, tokens_out, attempts, error)
SELECT 9950000 + g, CASE WHEN g / 12 % 3 = 0 THEN 'w-ops-2' ELSE 'w-ops-1' END,
       CASE WHEN g / 12 % 3 = 0 THEN 995003 WHEN g / 12 % 3 = 1 THEN 995001 ELSE 995002 END,
       'autonomous', 'api', 'alice',
       (ARRAY['succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired', 'succeeded', 'succeeded',
              'queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children'])[1 + g % 12],
       (g % 2) * 10,
       CASE WHEN g % 5 = 0 THEN NULL WHEN g % 5 = 1 THEN 'm-alt' ELSE 'm-main' END,
       t0 - make_interval(secs => 30 + g * 37),
       CASE WHEN 1 + g % 12 <= 7 OR 1 + g % 12 >= 9 THEN t0 - make_interval(secs => 30 + g * 37) + make_interval(secs => g % 7 + 0.25) END,
       CASE WHEN 1 + g % 12 <= 7 THEN t0 - make_interval(secs => 30 + g * 37) + make_interval(secs => g % 7 + 0.25 + g % 11 * 1.5) END,
       g * 10, g * 3, 1 + g % 2,
       CASE 1 + g % 12 WHEN 2 THEN 'LLM endpoint returned HTTP 503: busy' WHEN 3 THEN 'token budget of 5 exhausted (9 used)'
                       WHEN 4 THEN 'cancelled by alice' WHEN 5 THEN 'approval of tool "x" expired at now' END
  FROM generate_series(1, 120) g, ops_base;
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status, model, created_at, started_at, finished_at,
                        tokens_in, tokens_out)
SELECT 9950999, 'w-ops-1', 995001, 'autonomous', 'api', 'succeeded', 'm-main',
       t0 - interval '300 days', t0 - interval '300 days', t0 - interval '300 days' + interval '5 seconds', 1, 1
  FROM ops_base;
-- LLM steps with latencies, and retries
INSERT INTO agent.run_steps (run_id, seq, kind, name, status, started_at, finished_at)
SELECT r.id, s, CASE WHEN s = 2 AND r.id % 4 = 0 THEN 'error' ELSE 'llm' END, 'm',
       CASE WHEN s = 2 AND r.id % 4 = 0 THEN 'retry' ELSE 'ok' END,
       r.created_at, r.created_at + make_interval(secs => (r.id % 13) * 0.1 + s)
  FROM agent.runs r, generate_series(1, 3) s
 WHERE r.id BETWEEN 9950001 AND 9950120 AND r.started_at IS NOT NULL;

-- the figures computed directly from the tables
CREATE TEMP TABLE ops_direct_queue AS
  SELECT workspace_id, priority,
         count(*) FILTER (WHERE status = 'queued') AS queued,
         count(*) FILTER (WHERE status = 'running') AS running,
         count(*) FILTER (WHERE status = 'waiting_approval') AS waiting_approval,
         count(*) FILTER (WHERE status = 'waiting_input') AS waiting_input,
         count(*) FILTER (WHERE status = 'waiting_children') AS waiting_children,
         min(created_at) FILTER (WHERE status = 'queued') AS oldest_queued_at,
         count(*) FILTER (WHERE started_at >= now() - interval '1 minute') AS started_last_minute,
         count(*) FILTER (WHERE finished_at >= now() - interval '1 minute') AS finished_last_minute
    FROM agent.runs
   WHERE workspace_id LIKE 'w-ops-%'
     AND (status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
          OR started_at >= now() - interval '1 minute' OR finished_at >= now() - interval '1 minute')
   GROUP BY 1, 2;
-- the percentiles are run_stats' histogram quantiles (agent._hist_quantile,
-- docs/operations.md), computed here from the rows themselves
CREATE TEMP TABLE ops_direct_stats AS
  WITH r AS (SELECT * FROM agent.runs WHERE agent_id BETWEEN 995001 AND 995003 AND created_at >= now() - interval '1 day'),
  runs AS (
    SELECT agent_id, coalesce(model, '-') AS model, count(*) AS runs,
           count(*) FILTER (WHERE status = 'succeeded') AS succeeded, count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status = 'budget_exceeded') AS budget_exceeded,
           count(*) FILTER (WHERE status = 'cancelled') AS cancelled, count(*) FILTER (WHERE status = 'expired') AS expired,
           count(*) FILTER (WHERE finished_at IS NULL) AS active,
           round(count(*) FILTER (WHERE status IN ('failed', 'budget_exceeded', 'expired'))::numeric
                 / nullif(count(*) FILTER (WHERE finished_at IS NOT NULL), 0), 4) AS failure_rate,
           round(agent._hist_quantile(agent._hist(date_part('epoch', finished_at - started_at) * 1000), 0.5)::numeric, 3) AS d50,
           round(agent._hist_quantile(agent._hist(date_part('epoch', finished_at - started_at) * 1000), 0.95)::numeric, 3) AS d95,
           round(max(extract(epoch FROM finished_at - started_at)) * 1000, 3) AS dmax,
           round(agent._hist_quantile(agent._hist(date_part('epoch', started_at - created_at) * 1000), 0.95)::numeric, 3) AS q95,
           sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out
      FROM r GROUP BY 1, 2),
  steps AS (
    SELECT r.agent_id, coalesce(r.model, '-') AS model,
           count(*) FILTER (WHERE s.kind = 'llm') AS llm_calls,
           round(agent._hist_quantile(agent._hist(date_part('epoch', s.finished_at - s.started_at) * 1000)
                                       FILTER (WHERE s.kind = 'llm'), 0.5)::numeric, 3) AS l50,
           round(agent._hist_quantile(agent._hist(date_part('epoch', s.finished_at - s.started_at) * 1000)
                                       FILTER (WHERE s.kind = 'llm'), 0.95)::numeric, 3) AS l95,
           count(*) FILTER (WHERE s.kind = 'error' AND s.status = 'retry') AS retries
      FROM r JOIN agent.run_steps s ON s.run_id = r.id GROUP BY 1, 2)
  SELECT runs.*, coalesce(steps.llm_calls, 0) AS llm_calls, steps.l50, steps.l95, coalesce(steps.retries, 0) AS retries
    FROM runs LEFT JOIN steps USING (agent_id, model);
GRANT SELECT ON ops_direct_queue, ops_direct_stats TO PUBLIC;

CREATE FUNCTION pg_temp.stats_diff() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM ops_direct_stats d
    FULL JOIN (SELECT agent_id, coalesce(model, '-') AS model, runs, succeeded, failed, budget_exceeded, cancelled,
                      expired, active, failure_rate,
                      round(duration_p50_ms::numeric, 3) AS d50, round(duration_p95_ms::numeric, 3) AS d95,
                      round(duration_max_ms::numeric, 3) AS dmax, round(queue_p95_ms::numeric, 3) AS q95,
                      tokens_in, tokens_out, llm_calls, round(llm_p50_ms::numeric, 3) AS l50,
                      round(llm_p95_ms::numeric, 3) AS l95, retries
                 FROM agent.run_stats() WHERE agent_id BETWEEN 995001 AND 995003) v USING (agent_id, model)
   WHERE (d.runs, d.succeeded, d.failed, d.budget_exceeded, d.cancelled, d.expired, d.active, d.failure_rate,
          d.d50, d.d95, d.dmax, d.q95, d.tokens_in, d.tokens_out, d.llm_calls, d.l50, d.l95, d.retries)
         IS DISTINCT FROM
         (v.runs, v.succeeded, v.failed, v.budget_exceeded, v.cancelled, v.expired, v.active, v.failure_rate,
          v.d50, v.d95, v.dmax, v.q95, v.tokens_in, v.tokens_out, v.llm_calls, v.l50, v.l95, v.retries)
$$;
GRANT EXECUTE ON FUNCTION pg_temp.stats_diff() TO PUBLIC;
-- a leaky function: it keeps every workspace id it is shown
CREATE FUNCTION pg_temp.leak(ws text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE COST 0.0001 AS $$
BEGIN
  PERFORM set_config('ops.leak', coalesce(current_setting('ops.leak', true), '') || ',' || ws, true);
  RETURN true;
END
$$;
-- the counts the bulk operations below must reach
SELECT count(*) AS q1 FROM agent.runs WHERE agent_id = 995001 AND status = 'queued' \gset
SELECT count(*) AS r1 FROM agent.runs WHERE agent_id = 995001 AND status = 'running' \gset
SELECT count(*) AS a2 FROM agent.runs WHERE agent_id = 995002 AND status = 'waiting_approval' \gset
SELECT count(*) AS act2 FROM agent.runs WHERE workspace_id = 'w-ops-2'
   AND status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children') \gset
SELECT count(*) AS f1 FROM agent.runs WHERE workspace_id = 'w-ops-1' AND status = 'failed'
   AND finished_at >= now() - interval '1 day' AND parent_run_id IS NULL \gset

-- ------------------------------------------------- figures (superuser, every workspace)
SELECT is((SELECT count(*) FROM ops_direct_queue d
             FULL JOIN (SELECT * FROM agent.queue_status WHERE workspace_id LIKE 'w-ops-%') v USING (workspace_id, priority)
            WHERE (d.queued, d.running, d.waiting_approval, d.waiting_input, d.waiting_children, d.oldest_queued_at,
                   d.started_last_minute, d.finished_last_minute)
                  IS DISTINCT FROM (v.queued, v.running, v.waiting_approval, v.waiting_input, v.waiting_children,
                                    v.oldest_queued_at, v.started_last_minute, v.finished_last_minute)),
          0::bigint, 'agent.queue_status equals the figures computed from agent.runs');
SELECT is((SELECT count(*) FROM agent.queue_status WHERE workspace_id LIKE 'w-ops-%'), 4::bigint,
          'two workspaces times two priorities');
SELECT is(pg_temp.stats_diff(), 0::bigint,
          'agent.run_stats equals the figures computed from agent.runs and agent.run_steps (counts, rates, percentiles, tokens, retries)');
SELECT ok((SELECT count(*) FROM ops_direct_stats) >= 9, 'several agents and models are compared');
SELECT is((SELECT sum(runs) FROM agent.run_stats(now() - interval '1 year') WHERE agent_id = 995001)
            - (SELECT sum(runs) FROM agent.run_stats() WHERE agent_id = 995001), 1::numeric,
          'since: the year-old run counts only over a year');
SELECT is((SELECT string_agg(DISTINCT provider || '@' || coalesce(endpoint_host, '-'), ',' ORDER BY provider || '@' || coalesce(endpoint_host, '-'))
             FROM agent.run_stats() WHERE agent_id BETWEEN 995001 AND 995003),
          'anthropic@llm.example.com,openai@-,openai@[::1]',
          'provider kind and endpoint host, never the credentials or the query string of the URL');
SELECT is((SELECT string_agg(DISTINCT error_code, ',' ORDER BY error_code) FROM agent.run_metrics
            WHERE agent_id BETWEEN 995001 AND 995003),
          'approval_expired,cancelled,llm_http_503,token_budget', 'error codes of the runs, never their text');
SELECT is(agent.run_error_code('LLM endpoint returned HTTP 429: slow down (gave up after 4 attempts)'), 'llm_http_429',
          'run_error_code: the HTTP status of the provider');
SELECT is(agent.run_error_code('the provider reported invalid usage: prompt_tokens is -100, a negative count'),
          'llm_invalid_usage', 'run_error_code: usage counts the provider got wrong have their own code');
SELECT is(agent.run_error_code('the provider sent an invalid stream: content_block_start has index 300000 where 0 to 0 was expected'),
          'llm_malformed', 'run_error_code: an invalid stream is a malformed reply');
SELECT is(agent.run_error_code('something new'), 'other', 'an unknown error is "other"');
SELECT is(agent.run_error_code(NULL), NULL, 'no error, no code');
UPDATE agent.runs SET tokens_cached = least(tokens_in, 3) WHERE agent_id = 995001;
SELECT is((SELECT sum(tokens_cached) FROM agent.run_stats() WHERE agent_id = 995001),
          (SELECT sum(least(tokens_in, 3)) FROM agent.runs WHERE agent_id = 995001 AND created_at >= now() - interval '1 day')::numeric,
          'cached tokens: run_stats sums agent.runs.tokens_cached through run_metrics');
SELECT ok(NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'agent' AND table_name = 'run_metrics'
                        AND column_name IN ('input', 'output', 'error', 'requested_by')),
          'agent.run_metrics has no content column');

-- --------------------------------------------- an analytics role bound to w-ops-1
SET LOCAL ROLE ops_reader;
SELECT set_config('pg_agents.workspace', 'w-ops-1', true);
SELECT is((SELECT string_agg(DISTINCT workspace_id, ',') FROM agent.queue_status), 'w-ops-1',
          'a reader bound to w-ops-1 sees the queue of w-ops-1');
SELECT is((SELECT sum(queued) FROM agent.queue_status),
          (SELECT sum(queued) FROM ops_direct_queue WHERE workspace_id = 'w-ops-1'), 'with its figures');
SELECT is((SELECT string_agg(DISTINCT workspace_id, ',') FROM agent.run_stats()), 'w-ops-1', 'and the run_stats of w-ops-1 only');
SELECT is((SELECT count(*) FROM agent.run_metrics), (SELECT count(*) FROM agent.runs), 'run_metrics: the runs it may read');
SELECT throws_ok('SELECT * FROM agent.worker_status', '42501', NULL, 'not the cluster-wide worker status');
SELECT set_config('pg_agents.workspace', 'w-ops-2', true);
SELECT is((SELECT count(*) FROM agent.queue_status), 0::bigint, 'naming w-ops-2 shows nothing of it');
SELECT is((SELECT count(*) FROM agent.run_stats(now() - interval '1 year')), 0::bigint, 'nor its run_stats');
SELECT is((SELECT count(*) FROM agent.run_metrics), 0::bigint, 'nor its run metrics');
SELECT set_config('pg_agents.workspace', '', true);
SELECT is((SELECT count(*) FROM agent.queue_status), 0::bigint, 'naming no workspace shows nothing');
-- a leaky function in the WHERE clause sees only the rows the view lets through
SELECT set_config('pg_agents.workspace', 'w-ops-1', true);
SELECT set_config('ops.leak', '', true);
SELECT is((SELECT count(*) FROM agent.run_metrics WHERE pg_temp.leak(workspace_id)), (SELECT count(*) FROM agent.runs),
          'a leaky function in the WHERE clause runs');
SELECT ok(position('w-ops-2' IN current_setting('ops.leak')) = 0, 'but never sees a row of another workspace (run_metrics)');
SELECT set_config('ops.leak', '', true);
SELECT ok((SELECT count(*) FROM agent.queue_status WHERE pg_temp.leak(workspace_id)) > 0
          AND position('w-ops-2' IN current_setting('ops.leak')) = 0, 'nor through queue_status');
RESET ROLE;

SET LOCAL ROLE ops_reader2;
SELECT set_config('pg_agents.workspace', 'w-ops-1', true);
SELECT is((SELECT count(*) FROM agent.queue_status), 0::bigint, 'an analytics role bound to nothing sees nothing');
SELECT is((SELECT count(*) FROM agent.run_stats()), 0::bigint, 'nor run_stats');
RESET ROLE;

-- --------------------------------------------- the application, in its session's workspace
SET LOCAL ROLE ops_app;
SELECT set_config('pg_agents.workspace', 'w-ops-2', true);
SELECT is((SELECT string_agg(DISTINCT workspace_id, ',') FROM agent.queue_status), 'w-ops-2',
          'the application sees the queue of its session''s workspace');
SELECT is((SELECT string_agg(DISTINCT workspace_id, ',') FROM agent.run_stats()), 'w-ops-2', 'and its run_stats');
SELECT throws_ok('SELECT * FROM agent.worker_status', '42501', NULL, 'not the worker status');
RESET ROLE;

-- --------------------------------------------- pg_monitor: every workspace, no content
SET LOCAL ROLE ops_monitor;
SELECT is((SELECT count(DISTINCT workspace_id) FROM agent.queue_status WHERE workspace_id LIKE 'w-ops-%'), 2::bigint,
          'pg_monitor sees the queue of every workspace');
SELECT is(pg_temp.stats_diff(), 0::bigint, 'and run_stats of every workspace, the same figures');
SELECT lives_ok('SELECT * FROM agent.worker_status', 'and the worker status');
SELECT throws_ok('SELECT count(*) FROM agent.runs', '42501', NULL, 'but not the runs themselves (their inputs and outputs)');
SELECT throws_ok('SELECT count(*) FROM agent.run_steps', '42501', NULL, 'nor their steps');
SELECT throws_ok($$SELECT agent.cancel_runs(workspace_id => 'w-ops-1')$$, '42501', NULL, 'nor cancel runs');
RESET ROLE;

-- --------------------------------------------- nobody, and an agent session
SET LOCAL ROLE ops_nobody;
SELECT set_config('pg_agents.workspace', 'w-ops-1', true);
SELECT throws_ok('SELECT * FROM agent.queue_status', '42501', NULL, 'a role with no grant reads no queue status');
SELECT throws_ok('SELECT * FROM agent.run_stats()', '42501', NULL, 'nor run_stats');
SELECT throws_ok('SELECT * FROM agent.run_metrics', '42501', NULL, 'nor run metrics');
SELECT throws_ok('SELECT * FROM agent.worker_status', '42501', NULL, 'nor the worker status');
SELECT throws_ok($$SELECT agent.cancel_runs(workspace_id => 'w-ops-1', by_user => 'alice')$$, '42501', NULL, 'nor cancels runs');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT set_config('pg_agents.actor', 'agent:995001', true);
SELECT throws_ok('SELECT * FROM agent.queue_status', '42501', NULL, 'an agent session reads no queue status');
SELECT throws_ok('SELECT * FROM agent.run_stats()', '42501', NULL, 'nor run_stats');
RESET ROLE;
SELECT set_config('pg_agents.actor', '', true);

-- --------------------------------------------- cancel_runs
SET LOCAL ROLE ops_app;
SELECT set_config('pg_agents.workspace', 'w-ops-1', true);
SELECT throws_ok($$SELECT agent.cancel_runs(agent_id => 995003, by_user => 'bob')$$, '42704',
                 'agent 995003 does not exist', 'an agent of another workspace does not exist for the application');
SELECT is(agent.cancel_runs(workspace_id => 'w-ops-2', by_user => 'bob'), 0,
          'another workspace holds no run for the application');
SELECT throws_ok($$SELECT agent.cancel_runs(agent_id => 995001)$$, '22023', 'by_user must not be empty',
                 'the application names the user it cancels for');
SELECT throws_ok($$SELECT agent.cancel_runs(agent_id => 995001, by_user => 'mallory')$$, '42501',
                 'user "mallory" may not cancel the runs of agent 995001', 'who needs the edit level on the agent');
SELECT throws_ok($$SELECT agent.cancel_runs(agent_id => 995001, status => 'succeeded', by_user => 'alice')$$, '22023',
                 'invalid status "succeeded"', 'only active statuses');
SELECT is(agent.cancel_runs(agent_id => 995001, status => 'queued', by_user => 'alice'), :q1,
          'the application cancels the queued runs of an agent');
RESET ROLE;
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 995001 AND status = 'queued'), 0::bigint, 'none is left queued');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 995001 AND status = 'running'), :r1::bigint,
          'its running runs are untouched (status filter)');
SELECT is((SELECT count(*) FROM agent.runs WHERE workspace_id = 'w-ops-2' AND status = 'cancelled' AND error LIKE '%bulk%'),
          0::bigint, 'nothing of w-ops-2 was cancelled');
SELECT is((SELECT inputs->>'by_user' || ' ' || (inputs->>'cancelled') || ' ' || db_user FROM agent.audit_log
            WHERE action = 'runs.cancel' AND workspace_id = 'w-ops-1' ORDER BY id DESC LIMIT 1),
          'alice ' || :q1 || ' ' || session_user, 'audited: who, how many, the database user');

SELECT set_config('pg_agents.workspace', '', true);
SELECT throws_ok($$SELECT agent.cancel_runs()$$, '22023', 'agent.cancel_runs needs an agent or a workspace',
                 'a superuser names an agent or a workspace');
-- a delegated child goes with its parent
INSERT INTO agent.runs (id, workspace_id, agent_id, parent_run_id, root_run_id, depth, regime, origin, status)
VALUES (9951001, 'w-ops-1', 995001, 9950033, 9950033, 1, 'autonomous', 'delegation', 'running');
SELECT is(agent.cancel_runs(workspace_id => 'w-ops-2'), :act2, 'a superuser cancels every active run of a workspace');
SELECT is((SELECT count(*) FROM agent.runs WHERE workspace_id = 'w-ops-2'
             AND status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')), 0::bigint,
          'none is left active there');
SELECT is(agent.cancel_runs(agent_id => 995002, status => 'waiting_approval'), :a2, 'by agent and status');
SELECT is((SELECT status FROM agent.runs WHERE id = 9951001), 'cancelled', 'the child of a cancelled run is cancelled too');
SELECT is((SELECT count(*) FROM agent.audit_log WHERE action = 'run.finish' AND target_id::bigint BETWEEN 9950001 AND 9951001
              AND inputs->>'status' = 'cancelled'),
          (SELECT count(*) FROM agent.runs WHERE id BETWEEN 9950001 AND 9951001 AND error LIKE 'cancelled%bulk%'
              OR id = 9951001), 'each cancelled run has its run.finish audit row');
SELECT ok((SELECT db_user = session_user AND inputs->>'by_user' IS NULL FROM agent.audit_log
            WHERE action = 'runs.cancel' AND workspace_id = 'w-ops-2' ORDER BY id DESC LIMIT 1),
          'a superuser''s bulk cancel is audited with its database user');

-- --------------------------------------------- requeue_runs (superuser)
SELECT is(agent.requeue_runs(workspace_id => 'w-ops-1', status => 'failed', since => now() - interval '1 day'),
          :f1, 'requeue_runs re-runs the failed runs of a workspace');
SELECT is((SELECT count(*) FROM agent.runs n JOIN agent.runs o ON o.id = (n.input->>'rerun_of')::bigint
            WHERE n.origin = 'rerun' AND o.workspace_id = 'w-ops-1' AND o.status = 'failed' AND n.status = 'queued'),
          (SELECT count(*) FROM agent.runs WHERE workspace_id = 'w-ops-1' AND status = 'failed'), 'each as a new linked run');
SELECT is(agent.requeue_runs(workspace_id => 'w-ops-1', status => 'failed', since => now() - interval '1 day'), 0,
          'a run re-run already is not re-run again');
SET LOCAL ROLE ops_app;
SELECT set_config('pg_agents.workspace', 'w-ops-1', true);
SELECT throws_ok($$SELECT agent.requeue_runs(workspace_id => 'w-ops-1')$$, '42501', NULL, 'the application may not bulk re-run');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
