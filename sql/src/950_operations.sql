-- pg_agents: operations for DBAs (docs/operations.md).
--
--   agent.worker_status     the worker process (shared memory): state, slots,
--                           requests in flight, last tick and error, restarts
--   agent.queue_status      per workspace and priority: queued, running,
--                           waiting, oldest queued, started/finished in the
--                           last minute
--   agent.run_metrics       one row per run: times, tokens, LLM latencies,
--                           retries, error code (no content)
--   agent.run_stats(since)  per agent, provider and model: the figures above
--                           aggregated (counts, p50/p95/max, failure rate)
--   agent.pause_worker(), agent.resume_worker()   no new claims (a row of
--                           agent.worker_control: survives a restart)
--   agent.cancel_runs(...), agent.requeue_runs(...)   bulk, audited
--   pg_agents.log_runs      one LOG line per finished run (src/ops.c)
--
-- Who reads what: a role that may read a workspace under the rule of
-- sql/src/210_reads.sql (the application, an analytics role bound to it;
-- pg_agents.workspace names it) sees that workspace's rows; members of
-- pg_monitor (PostgreSQL's monitoring role) and superusers see every
-- workspace, and they alone see agent.worker_status (cluster-wide).  The
-- views run with their owner's rights on the tables and filter by the
-- querying role (current_user), as security barriers.

-- ---------------------------------------------------------------------------
-- Indexes the status views and run_stats use (cheap to maintain: a BRIN on
-- the times, which follow the physical order of an append-mostly table,
-- summarized by (auto)vacuum, the pages since then always read; and a
-- partial index on the few waiting runs)
-- ---------------------------------------------------------------------------
CREATE INDEX runs_times_brin ON agent.runs USING brin (created_at, started_at, finished_at)
  WITH (pages_per_range = 16);
CREATE INDEX runs_waiting_idx ON agent.runs (workspace_id, priority)
  WHERE status IN ('waiting_approval', 'waiting_input', 'waiting_children');

-- ---------------------------------------------------------------------------
-- The pause state
-- ---------------------------------------------------------------------------
CREATE TABLE agent.worker_control (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    paused     boolean NOT NULL DEFAULT false,
    changed_at timestamptz,
    changed_by text,
    reason     text
);
COMMENT ON TABLE agent.worker_control IS
  'The worker''s pause state (one row): agent.pause_worker() / agent.resume_worker() write it, the worker reads it at every tick, so that it survives a restart.';
COMMENT ON COLUMN agent.worker_control.id IS 'Always true: the table has one row.';
COMMENT ON COLUMN agent.worker_control.paused IS 'Whether the worker claims no new runs.';
COMMENT ON COLUMN agent.worker_control.changed_at IS 'When it was paused or resumed last.';
COMMENT ON COLUMN agent.worker_control.changed_by IS 'Database role (session user) that paused or resumed it last.';
COMMENT ON COLUMN agent.worker_control.reason IS 'Why it was paused, as given to agent.pause_worker().';
INSERT INTO agent.worker_control (id) VALUES (true);

-- ---------------------------------------------------------------------------
-- C parts (src/ops.c)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_status()
RETURNS TABLE(pid integer, database text, started_at timestamptz, state text, slots_in_use integer,
              max_concurrent_runs integer, llm_requests_in_flight integer, mcp_requests_in_flight integer,
              mcp_request_since timestamptz, last_tick timestamptz, last_error text, last_error_at timestamptz,
              restarts bigint, shmem_resets bigint)
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'pg_agents_worker_status';
COMMENT ON FUNCTION agent._worker_status() IS
  'Internal (agent.worker_status): the worker''s status from shared memory; no row when pg_agents is not in shared_preload_libraries.';

CREATE FUNCTION agent._worker_sync_pause(paused boolean) RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'pg_agents_worker_sync_pause';
COMMENT ON FUNCTION agent._worker_sync_pause(boolean) IS
  'Internal: the worker''s cached pause state takes this value when the transaction commits (at once in the worker).';

CREATE FUNCTION agent.run_error_code(error text) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_run_error_code';
COMMENT ON FUNCTION agent.run_error_code(text) IS
  'A stable word for the error text of a run (llm_timeout, llm_unreachable, llm_http_503, llm_malformed, max_iterations, token_budget, hourly_cap, worker_error, lease_expired, approval_expired, cancelled, ... or other); NULL for no error. Used by the run log and agent.run_metrics.';

CREATE FUNCTION agent._run_log() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_run_log';
COMMENT ON FUNCTION agent._run_log() IS
  'Internal trigger on agent.runs: a run that reached a terminal status is written as one LOG line when its transaction commits (pg_agents.log_runs = errors or all).';

-- every path that ends a run (finish_run, cancel, tick, the worker's batch,
-- a run created budget_exceeded by the hourly cap); nothing is queued for
-- the trigger while the log is off
CREATE TRIGGER runs_log_insert AFTER INSERT ON agent.runs
  FOR EACH ROW WHEN (coalesce(pg_catalog.current_setting('pg_agents.log_runs', true), 'off') <> 'off'
                     AND NEW.status IN ('succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired'))
  EXECUTE FUNCTION agent._run_log();
CREATE TRIGGER runs_log_finish AFTER UPDATE OF status ON agent.runs
  FOR EACH ROW WHEN (coalesce(pg_catalog.current_setting('pg_agents.log_runs', true), 'off') <> 'off'
                     AND OLD.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                     AND NEW.status IN ('succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired'))
  EXECUTE FUNCTION agent._run_log();

-- ---------------------------------------------------------------------------
-- agent.worker_status (superusers and pg_monitor)
-- ---------------------------------------------------------------------------
CREATE VIEW agent.worker_status WITH (security_barrier) AS
  SELECT w.pid, w.database, w.started_at, w.state, w.slots_in_use, w.max_concurrent_runs,
         w.llm_requests_in_flight, w.mcp_requests_in_flight, w.mcp_request_since,
         w.last_tick, pg_catalog.now() - w.last_tick AS last_tick_age,
         w.last_error, w.last_error_at, w.restarts, w.shmem_resets,
         coalesce(c.paused, false) AS paused, c.changed_at AS paused_changed_at,
         c.changed_by AS paused_changed_by, c.reason AS pause_reason
    FROM agent._worker_status() w
    -- the pause state is the one of the worker's database
    LEFT JOIN agent.worker_control c ON c.id AND w.database = pg_catalog.current_database()::text;
COMMENT ON VIEW agent.worker_status IS
  'The pg_agents worker of the cluster (one row; none when pg_agents is not preloaded): pid (NULL when it does not run), state (starting, waiting for extension, waiting for extension update, running, paused, draining, stopped), slots in use of max_concurrent_runs, LLM and MCP requests in flight, last tick, last error (redacted) and when, restarts since the postmaster started, and the pause state. Superusers and pg_monitor.';
COMMENT ON COLUMN agent.worker_status.pid IS 'Process id of the worker; NULL when it does not run.';
COMMENT ON COLUMN agent.worker_status.database IS 'Database it works in (pg_agents.database).';
COMMENT ON COLUMN agent.worker_status.started_at IS 'When the current (or last) worker process started.';
COMMENT ON COLUMN agent.worker_status.state IS 'starting, waiting for extension, waiting for extension update, running, paused, draining or stopped.';
COMMENT ON COLUMN agent.worker_status.slots_in_use IS 'Runs it executes now (runs waiting for a child not counted).';
COMMENT ON COLUMN agent.worker_status.max_concurrent_runs IS 'pg_agents.max_concurrent_runs as the worker sees it.';
COMMENT ON COLUMN agent.worker_status.llm_requests_in_flight IS 'LLM requests in flight.';
COMMENT ON COLUMN agent.worker_status.mcp_requests_in_flight IS 'MCP tool calls in flight (the worker waits on them).';
COMMENT ON COLUMN agent.worker_status.mcp_request_since IS 'Start of the MCP call in flight.';
COMMENT ON COLUMN agent.worker_status.last_tick IS 'Last successful tick (about once a second while it runs).';
COMMENT ON COLUMN agent.worker_status.last_tick_age IS 'now() - last_tick.';
COMMENT ON COLUMN agent.worker_status.last_error IS 'Last error of a unit of work of the worker (redacted, at most 255 bytes).';
COMMENT ON COLUMN agent.worker_status.last_error_at IS 'When it happened.';
COMMENT ON COLUMN agent.worker_status.restarts IS 'Worker starts since the postmaster started, minus one (kept over crash resets).';
COMMENT ON COLUMN agent.worker_status.shmem_resets IS 'Crash resets of shared memory since the postmaster started (a killed backend or worker).';
COMMENT ON COLUMN agent.worker_status.paused IS 'agent.pause_worker() is in force (read in the worker''s database; false elsewhere).';
COMMENT ON COLUMN agent.worker_status.paused_changed_at IS 'When it was paused or resumed last.';
COMMENT ON COLUMN agent.worker_status.paused_changed_by IS 'Who paused or resumed it last.';
COMMENT ON COLUMN agent.worker_status.pause_reason IS 'Reason given to agent.pause_worker().';

-- ---------------------------------------------------------------------------
-- agent.queue_status and agent.run_metrics: the workspaces the querying role
-- may read (sql/src/210_reads.sql), every one for pg_monitor and superusers
-- ---------------------------------------------------------------------------
CREATE VIEW agent.queue_status WITH (security_barrier) AS
  SELECT k.workspace_id, k.priority,
         count(*) FILTER (WHERE k.kind = 'queued') AS queued,
         count(*) FILTER (WHERE k.kind = 'running') AS running,
         count(*) FILTER (WHERE k.kind = 'waiting_approval') AS waiting_approval,
         count(*) FILTER (WHERE k.kind = 'waiting_input') AS waiting_input,
         count(*) FILTER (WHERE k.kind = 'waiting_children') AS waiting_children,
         min(k.at) FILTER (WHERE k.kind = 'queued') AS oldest_queued_at,
         pg_catalog.now() - min(k.at) FILTER (WHERE k.kind = 'queued') AS oldest_queued_age,
         count(*) FILTER (WHERE k.kind = 'started') AS started_last_minute,
         count(*) FILTER (WHERE k.kind = 'finished') AS finished_last_minute
    FROM (SELECT r.workspace_id, r.priority, r.status AS kind, r.created_at AS at
            FROM agent.runs r WHERE r.status = 'queued'
          UNION ALL
          SELECT r.workspace_id, r.priority, r.status, NULL FROM agent.runs r WHERE r.status = 'running'
          UNION ALL
          SELECT r.workspace_id, r.priority, r.status, NULL FROM agent.runs r
           WHERE r.status IN ('waiting_approval', 'waiting_input', 'waiting_children')
          UNION ALL
          SELECT r.workspace_id, r.priority, 'started', NULL FROM agent.runs r
           WHERE r.started_at >= pg_catalog.now() - interval '1 minute'
          UNION ALL
          SELECT r.workspace_id, r.priority, 'finished', NULL FROM agent.runs r
           WHERE r.finished_at >= pg_catalog.now() - interval '1 minute') k
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (k.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())))
   GROUP BY k.workspace_id, k.priority;
COMMENT ON VIEW agent.queue_status IS
  'The run queue per workspace and priority: queued, running and waiting runs, the oldest queued run and its age, runs started (first claimed) and finished in the last minute. A workspace appears while it has active runs or runs that started or finished in the last minute. Rows of the workspaces the querying role may read (pg_agents.workspace, bound analytics roles, the application); every workspace for pg_monitor and superusers.';
COMMENT ON COLUMN agent.queue_status.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.queue_status.priority IS 'Priority (higher is claimed first).';
COMMENT ON COLUMN agent.queue_status.queued IS 'Runs queued.';
COMMENT ON COLUMN agent.queue_status.running IS 'Runs claimed by an executor.';
COMMENT ON COLUMN agent.queue_status.waiting_approval IS 'Runs waiting for a human approval.';
COMMENT ON COLUMN agent.queue_status.waiting_input IS 'Runs waiting for an answer (teams).';
COMMENT ON COLUMN agent.queue_status.waiting_children IS 'Runs waiting for their delegated runs.';
COMMENT ON COLUMN agent.queue_status.oldest_queued_at IS 'Queue time (created_at) of the oldest queued run.';
COMMENT ON COLUMN agent.queue_status.oldest_queued_age IS 'now() - oldest_queued_at.';
COMMENT ON COLUMN agent.queue_status.started_last_minute IS 'Runs first claimed in the last minute.';
COMMENT ON COLUMN agent.queue_status.finished_last_minute IS 'Runs that reached a terminal status in the last minute.';

CREATE VIEW agent.run_metrics WITH (security_barrier) AS
  SELECT r.id AS run_id, r.workspace_id, r.agent_id, a.name AS agent_name, r.origin, r.trigger_id,
         r.parent_run_id, r.status,
         coalesce(a.scope ->> 'llm_provider', nullif(pg_catalog.current_setting('pg_agents.llm_provider', true), ''),
                  'openai') AS provider,
         pg_catalog.substring(coalesce(a.scope ->> 'llm_url', pg_catalog.current_setting('pg_agents.llm_url', true)),
                              '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\[[^]/]*\]|[^/:?#]*)') AS endpoint_host,
         r.model, r.created_at, r.started_at, r.finished_at,
         pg_catalog.date_part('epoch', r.started_at - r.created_at) * 1000 AS queue_ms,
         pg_catalog.date_part('epoch', r.finished_at - r.started_at) * 1000 AS duration_ms,
         r.tokens_in, r.tokens_out, r.tokens_cached, r.tokens_total, r.attempts,
         agent.run_error_code(r.error) AS error_code,
         coalesce(s.llm_calls, 0) AS llm_calls, s.llm_ms, coalesce(s.retries, 0) AS retries
    FROM agent.runs r
    JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id
    LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE st.kind = 'llm') AS llm_calls,
             pg_catalog.array_agg(pg_catalog.date_part('epoch', st.finished_at - st.started_at) * 1000 ORDER BY st.seq)
               FILTER (WHERE st.kind = 'llm' AND st.finished_at IS NOT NULL) AS llm_ms,
             count(*) FILTER (WHERE st.kind = 'error' AND st.status = 'retry') AS retries
        FROM agent.run_steps st
       WHERE st.workspace_id = r.workspace_id AND st.run_id = r.id AND st.kind IN ('llm', 'error')) s ON true
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (r.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent.run_metrics IS
  'One row per run, without its content: ids, status, provider kind and endpoint host (the agent''s scope, else the settings, as they are now), model, times, queue wait and duration (ms), tokens, attempts, error code, LLM calls with their latencies (ms) and retries. Rows of the workspaces the querying role may read; every workspace for pg_monitor and superusers.';
COMMENT ON COLUMN agent.run_metrics.run_id IS 'Run.';
COMMENT ON COLUMN agent.run_metrics.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.run_metrics.agent_id IS 'Agent.';
COMMENT ON COLUMN agent.run_metrics.agent_name IS 'Agent name.';
COMMENT ON COLUMN agent.run_metrics.origin IS 'What queued it: chat, api, schedule, event, mention, delegation, rerun or draft.';
COMMENT ON COLUMN agent.run_metrics.trigger_id IS 'Trigger that queued it, if any.';
COMMENT ON COLUMN agent.run_metrics.parent_run_id IS 'Delegating run, for a child run.';
COMMENT ON COLUMN agent.run_metrics.status IS 'Run status.';
COMMENT ON COLUMN agent.run_metrics.provider IS 'LLM wire format: the agent''s scope llm_provider, else pg_agents.llm_provider (current values; per provider object once providers exist).';
COMMENT ON COLUMN agent.run_metrics.endpoint_host IS 'Host of the LLM endpoint: the agent''s scope llm_url, else pg_agents.llm_url (current values, host only).';
COMMENT ON COLUMN agent.run_metrics.model IS 'Model used (NULL before the first model call).';
COMMENT ON COLUMN agent.run_metrics.created_at IS 'When it was queued.';
COMMENT ON COLUMN agent.run_metrics.started_at IS 'When it was first claimed.';
COMMENT ON COLUMN agent.run_metrics.finished_at IS 'When it ended.';
COMMENT ON COLUMN agent.run_metrics.queue_ms IS 'started_at - created_at, in milliseconds.';
COMMENT ON COLUMN agent.run_metrics.duration_ms IS 'finished_at - started_at, in milliseconds.';
COMMENT ON COLUMN agent.run_metrics.tokens_in IS 'Prompt tokens of the run.';
COMMENT ON COLUMN agent.run_metrics.tokens_out IS 'Completion tokens of the run.';
COMMENT ON COLUMN agent.run_metrics.tokens_cached IS 'Prompt tokens of the run read from the provider''s prompt cache (a part of tokens_in).';
COMMENT ON COLUMN agent.run_metrics.tokens_total IS 'Tokens of the run and its descendants.';
COMMENT ON COLUMN agent.run_metrics.attempts IS 'Claims of the run.';
COMMENT ON COLUMN agent.run_metrics.error_code IS 'agent.run_error_code(error): a stable word, never the error text.';
COMMENT ON COLUMN agent.run_metrics.llm_calls IS 'LLM steps of the run.';
COMMENT ON COLUMN agent.run_metrics.llm_ms IS 'Latency of each LLM step (finished_at - started_at, ms), in order.';
COMMENT ON COLUMN agent.run_metrics.retries IS 'LLM calls retried (429, 5xx, time-outs): error steps with status retry.';

-- ---------------------------------------------------------------------------
-- agent.mcp_metrics: counts of the MCP servers of the database, for pg_monitor
-- (monitoring/pg_agents_queries.yaml); no name, URL or error text
-- ---------------------------------------------------------------------------
CREATE VIEW agent.mcp_metrics WITH (security_barrier) AS
  SELECT count(*) AS servers,
         count(*) FILTER (WHERE s.enabled) AS enabled,
         count(*) FILTER (WHERE s.enabled AND s.last_error IS NULL AND s.tools_refreshed_at IS NOT NULL) AS connected,
         count(*) FILTER (WHERE s.enabled AND s.last_error IS NOT NULL) AS errored
    FROM agent.mcp_servers s;
COMMENT ON VIEW agent.mcp_metrics IS
  'Counts of the MCP servers of every workspace of the database, for monitoring (pg_monitor): registered, enabled, connected (enabled, refreshed, the last refresh succeeded) and errored (enabled, the last refresh failed). No name, URL or error text.';
COMMENT ON COLUMN agent.mcp_metrics.servers IS 'MCP servers registered.';
COMMENT ON COLUMN agent.mcp_metrics.enabled IS 'Servers enabled.';
COMMENT ON COLUMN agent.mcp_metrics.connected IS 'Enabled servers whose last refresh succeeded.';
COMMENT ON COLUMN agent.mcp_metrics.errored IS 'Enabled servers whose last refresh failed.';

CREATE FUNCTION agent.run_stats(since timestamptz DEFAULT now() - interval '1 day')
RETURNS TABLE(workspace_id text, agent_id bigint, agent_name text, provider text, endpoint_host text,
              model text, runs bigint, succeeded bigint, failed bigint, budget_exceeded bigint,
              cancelled bigint, expired bigint, active bigint, failure_rate numeric,
              duration_p50_ms double precision, duration_p95_ms double precision,
              duration_max_ms double precision, queue_p50_ms double precision,
              queue_p95_ms double precision, queue_max_ms double precision, llm_calls bigint,
              llm_p50_ms double precision, llm_p95_ms double precision, llm_max_ms double precision,
              tokens_in numeric, tokens_out numeric, tokens_cached numeric, retries bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the whole UTC days [d0, w) come from the rollup (sql/src/955_rollup.sql):
  -- month rows for the whole months [m1, m2), day rows for the rest; the
  -- runs before d0 and from w on are read from agent.run_metrics
  v_w    timestamptz := agent._run_rollup_watermark();
  v_d0   timestamptz := pg_catalog.date_trunc('day', run_stats.since, 'UTC');
  v_m1   timestamptz;
  v_m2   timestamptz;
  v_end1 timestamptz := 'infinity';
  v_beg2 timestamptz := 'infinity';
BEGIN
  IF v_d0 < run_stats.since THEN
    v_d0 := v_d0 + interval '24 hours';
  END IF;
  IF v_w IS NOT NULL AND v_d0 < v_w THEN
    v_end1 := v_d0;
    v_beg2 := v_w;
    v_m1 := pg_catalog.date_trunc('month', v_d0, 'UTC');
    IF v_m1 < v_d0 THEN
      v_m1 := agent._utc_next_month(v_m1);
    END IF;
    v_m2 := pg_catalog.date_trunc('month', v_w, 'UTC');
    IF v_m1 >= v_m2 THEN
      v_m1 := v_w;
      v_m2 := v_w;
    END IF;
  ELSE
    v_d0 := NULL;   -- nothing from the rollup
  END IF;
  -- planned for these bounds at every call (EXECUTE): a generic plan
  -- would not know how few rows the ranges hold
  RETURN QUERY EXECUTE $q$
  WITH m AS MATERIALIZED (
    -- only the columns used: the view computes no other
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model, m.status,
           m.duration_ms, m.queue_ms, m.llm_calls, m.llm_ms, m.retries, m.tokens_in, m.tokens_out, m.tokens_cached
      FROM agent.run_metrics m WHERE m.created_at >= $1 AND m.created_at < $2
    UNION ALL
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model, m.status,
           m.duration_ms, m.queue_ms, m.llm_calls, m.llm_ms, m.retries, m.tokens_in, m.tokens_out, m.tokens_cached
      FROM agent.run_metrics m WHERE m.created_at >= $3),
  rg AS (
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model,
           count(*) AS runs,
           count(*) FILTER (WHERE m.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE m.status = 'failed') AS failed,
           count(*) FILTER (WHERE m.status = 'budget_exceeded') AS budget_exceeded,
           count(*) FILTER (WHERE m.status = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE m.status = 'expired') AS expired,
           count(*) FILTER (WHERE m.status IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children')) AS active,
           max(m.duration_ms) AS duration_max_ms, agent._hist(m.duration_ms) AS duration_h,
           max(m.queue_ms) AS queue_max_ms, agent._hist(m.queue_ms) AS queue_h,
           sum(m.llm_calls)::bigint AS llm_calls,
           sum(m.tokens_in) AS tokens_in, sum(m.tokens_out) AS tokens_out, sum(m.tokens_cached) AS tokens_cached,
           sum(m.retries)::bigint AS retries
      FROM m
     GROUP BY m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model),
  rl AS (
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model,
           max(x.ms) AS llm_max_ms, agent._hist(x.ms) AS llm_h
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS x(ms)
     GROUP BY m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model),
  p AS (
    SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model, g.runs, g.succeeded,
           g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active, g.duration_max_ms, g.duration_h,
           g.queue_max_ms, g.queue_h, g.llm_calls, l.llm_max_ms, l.llm_h, g.tokens_in, g.tokens_out,
           g.tokens_cached, g.retries
      FROM rg g
      LEFT JOIN rl l ON l.workspace_id = g.workspace_id AND l.agent_id = g.agent_id
                    AND l.provider IS NOT DISTINCT FROM g.provider
                    AND l.endpoint_host IS NOT DISTINCT FROM g.endpoint_host
                    AND l.model IS NOT DISTINCT FROM g.model
    UNION ALL
    SELECT u.workspace_id, u.agent_id, u.agent_name, u.provider, u.endpoint_host, u.model, u.runs, u.succeeded,
           u.failed, u.budget_exceeded, u.cancelled, u.expired, u.active, u.duration_max_ms, u.duration_h,
           u.queue_max_ms, u.queue_h, u.llm_calls, u.llm_max_ms, u.llm_h, u.tokens_in, u.tokens_out,
           u.tokens_cached, u.retries
      FROM agent._run_rollup_visible u
     WHERE (u.month AND u.day >= $4 AND u.day < $5)
        OR (NOT u.month AND u.day >= $6 AND u.day < $4)
        OR (NOT u.month AND u.day >= $5 AND u.day < $7)),
  g AS (
    SELECT p.workspace_id, p.agent_id, p.agent_name, p.provider, p.endpoint_host, p.model,
           sum(p.runs)::bigint AS runs, sum(p.succeeded)::bigint AS succeeded, sum(p.failed)::bigint AS failed,
           sum(p.budget_exceeded)::bigint AS budget_exceeded, sum(p.cancelled)::bigint AS cancelled,
           sum(p.expired)::bigint AS expired, sum(p.active)::bigint AS active,
           max(p.duration_max_ms) AS duration_max_ms, agent._hist_merge(p.duration_h) AS duration_h,
           max(p.queue_max_ms) AS queue_max_ms, agent._hist_merge(p.queue_h) AS queue_h,
           sum(p.llm_calls)::bigint AS llm_calls, max(p.llm_max_ms) AS llm_max_ms,
           agent._hist_merge(p.llm_h) AS llm_h,
           sum(p.tokens_in) AS tokens_in, sum(p.tokens_out) AS tokens_out, sum(p.tokens_cached) AS tokens_cached,
           sum(p.retries)::bigint AS retries
      FROM p
     GROUP BY p.workspace_id, p.agent_id, p.agent_name, p.provider, p.endpoint_host, p.model)
  SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model,
         g.runs, g.succeeded, g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active,
         round((g.failed + g.budget_exceeded + g.expired)::numeric
               / nullif(g.succeeded + g.failed + g.budget_exceeded + g.cancelled + g.expired, 0), 4),
         agent._hist_quantile(g.duration_h, 0.5), agent._hist_quantile(g.duration_h, 0.95), g.duration_max_ms,
         agent._hist_quantile(g.queue_h, 0.5), agent._hist_quantile(g.queue_h, 0.95), g.queue_max_ms,
         g.llm_calls, agent._hist_quantile(g.llm_h, 0.5), agent._hist_quantile(g.llm_h, 0.95), g.llm_max_ms,
         g.tokens_in, g.tokens_out, g.tokens_cached, g.retries
    FROM g
   ORDER BY g.workspace_id, g.agent_id, g.provider, g.endpoint_host, g.model
  $q$ USING run_stats.since, v_end1, v_beg2, v_m1, v_m2, v_d0, v_w;
END
$$;
COMMENT ON FUNCTION agent.run_stats(timestamptz) IS
  'Per workspace, agent, provider (kind and endpoint host) and model, over the runs queued since the given time (default: the last day): runs by status, failure rate (failed, budget_exceeded and expired over ended runs), p50/p95 (histogram quantiles: 32 buckets per doubling of ms, agent._hist_quantile) and max of duration, queue wait and LLM latency (ms), tokens in/out/cached, LLM calls and retries. The whole UTC days up to the rollup''s watermark come from agent.run_rollup (folded by agent.tick), the rest from agent.run_metrics, with the same figures; scoped like agent.run_metrics: the workspaces the caller may read; every workspace for pg_monitor and superusers.';

-- ---------------------------------------------------------------------------
-- Controls: pause and resume (superuser), audited
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent.pause_worker(reason text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_was boolean;
BEGIN
  SELECT c.paused INTO v_was FROM agent.worker_control c WHERE c.id FOR UPDATE;
  UPDATE agent.worker_control c
     SET paused = true, changed_at = now(), changed_by = session_user::text, reason = pause_worker.reason
   WHERE c.id;
  PERFORM agent._worker_sync_pause(true);
  PERFORM agent._audit_event('worker.pause', 'success', 'worker', pg_catalog.current_database()::text, NULL, NULL,
                             pg_catalog.jsonb_build_object('reason', pause_worker.reason, 'was_paused', coalesce(v_was, false)),
                             'the worker claims no new runs', NULL);
  RETURN NOT coalesce(v_was, false);
END
$$;
COMMENT ON FUNCTION agent.pause_worker(text) IS
  'Pauses the worker: from the commit on it claims no new runs; runs in flight go on to their end or their next wait. Kept in agent.worker_control of the worker''s database (pg_agents.database; elsewhere it only warns), so it survives a restart. Superuser only; audited. Returns false when it was already paused.';

CREATE FUNCTION agent.resume_worker() RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_was boolean;
BEGIN
  SELECT c.paused INTO v_was FROM agent.worker_control c WHERE c.id FOR UPDATE;
  UPDATE agent.worker_control c
     SET paused = false, changed_at = now(), changed_by = session_user::text, reason = NULL
   WHERE c.id;
  PERFORM agent._worker_sync_pause(false);
  PERFORM agent._audit_event('worker.resume', 'success', 'worker', pg_catalog.current_database()::text, NULL, NULL,
                             pg_catalog.jsonb_build_object('was_paused', coalesce(v_was, false)),
                             'the worker claims runs again', NULL);
  RETURN coalesce(v_was, false);
END
$$;
COMMENT ON FUNCTION agent.resume_worker() IS
  'Resumes a paused worker (it claims runs again at once). Superuser only; audited. Returns false when it was not paused.';

-- ---------------------------------------------------------------------------
-- The drain of SIGTERM (src/worker.c): the runs the worker still holds go
-- back to the queue, their saved conversation kept, the claim not counted
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_requeue(p_run_ids bigint[], p_worker_pid integer) RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
  n integer := 0;
BEGIN
  FOR r IN
    UPDATE agent.runs x
       SET status = 'queued', lease_until = NULL, attempts = greatest(x.attempts - 1, 0)
     WHERE x.id = ANY (p_run_ids) AND x.status = 'running'
       AND EXISTS (SELECT 1 FROM agent.run_state s
                    WHERE s.workspace_id = x.workspace_id AND s.run_id = x.id AND s.worker_pid = p_worker_pid)
    RETURNING x.*
  LOOP
    UPDATE agent.run_state s SET worker_pid = NULL WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id;
    PERFORM agent._audit_run('run.requeue', r, 'success',
                             jsonb_build_object('status', 'queued', 'attempts', r.attempts, 'reason', 'drain'),
                             format('run %s re-queued: the worker stopped (drain)', r.id));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
COMMENT ON FUNCTION agent._worker_requeue(bigint[], integer) IS
  'Internal (worker drain): the running runs among these that this worker process holds go back to the queue (attempts not counted; the conversation in agent.run_state kept); audited; returns how many.';

-- ---------------------------------------------------------------------------
-- Bulk cancel (superuser; the application within its session's workspace)
-- and bulk re-run (superuser)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent.cancel_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                  status text DEFAULT NULL, by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_super boolean := current_setting('is_superuser') = 'on';
  v_ws    text := agent._session_workspace();
  a       agent.agents%ROWTYPE;
  c       record;
  v_who   text;
  v_n     integer := 0;
  v_per   jsonb := '{}';
  k       text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(cancel_runs.by_user, ''), true);
  IF status IS NOT NULL AND status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children') THEN
    RAISE EXCEPTION 'invalid status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Only active runs are cancelled: queued, running, waiting_approval, waiting_input or waiting_children.';
  END IF;
  IF NOT v_super AND (by_user IS NULL OR by_user = '') THEN
    RAISE EXCEPTION 'by_user must not be empty'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The application cancels runs on behalf of a user, who is audited.';
  END IF;
  IF agent_id IS NULL AND workspace_id IS NULL AND v_ws IS NULL THEN
    RAISE EXCEPTION 'agent.cancel_runs needs an agent or a workspace'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name agent_id or workspace_id (or set pg_agents.workspace).';
  END IF;
  IF agent_id IS NOT NULL THEN
    -- the session's workspace (a superuser session bound to none: the agent's own)
    k := v_ws;
    IF k IS NULL THEN
      SELECT y.workspace_id INTO k FROM agent.agents y WHERE y.id = agent_id;
    END IF;
    SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = k AND x.id = agent_id;
    IF NOT FOUND
       OR (workspace_id IS NOT NULL AND a.workspace_id IS DISTINCT FROM workspace_id) THEN
      RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT v_super AND NOT coalesce(agent.user_can(by_user, agent_id, 'edit_settings'), false) THEN
      RAISE EXCEPTION 'user "%" may not cancel the runs of agent %', by_user, agent_id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Cancelling the runs of an agent requires the edit level on it.';
    END IF;
  END IF;
  -- another workspace than the session's holds no run for this session
  IF workspace_id IS NOT NULL AND NOT agent._workspace_ok(workspace_id) THEN
    RETURN 0;
  END IF;
  workspace_id := coalesce(workspace_id, a.workspace_id, v_ws);
  v_who := coalesce(nullif(by_user, ''), 'dba:' || session_user::text);

  FOR c IN
    SELECT x.id, x.workspace_id AS ws,
           coalesce((SELECT rt.id FROM agent.runs rt
                      WHERE rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id), x.id) AS root
      FROM agent.runs x
     WHERE x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
       AND (status IS NULL OR x.status = status)
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
     ORDER BY x.id
  LOOP
    PERFORM agent._lock_tree(c.root);
    -- still active (and still of that status) once its tree is ours
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = c.ws AND x.id = c.id
                                 AND x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                                 AND (status IS NULL OR x.status = status));
    IF agent._finish_run(c.id, 'cancelled', NULL, format('cancelled by %s (bulk cancel)', v_who)) THEN
      v_n := v_n + 1;
      k := c.ws;
      v_per := jsonb_set(v_per, ARRAY[k], to_jsonb(coalesce((v_per ->> k)::integer, 0) + 1));
    END IF;
  END LOOP;

  -- one audit row per workspace touched (each run also has its run.finish row)
  FOR k IN SELECT jsonb_object_keys(v_per) LOOP
    PERFORM agent._audit_event('runs.cancel', 'success', 'workspace', k, k, NULL,
                               jsonb_build_object('agent_id', agent_id, 'status', status, 'by_user', by_user,
                                                  'db_user', session_user::text, 'cancelled', (v_per ->> k)::integer),
                               format('%s runs cancelled by %s', v_per ->> k, v_who), NULL);
  END LOOP;
  RETURN v_n;
END
$$;
COMMENT ON FUNCTION agent.cancel_runs(bigint, text, text, text) IS
  'Cancels the active runs of an agent or of a workspace (optionally of one status), with their active descendants; a worker holding one of them drops it at its next step. Superuser: any workspace. The application: within the session''s workspace, on behalf of by_user (edit level on the agent when one is named). Audited (one runs.cancel row per workspace, one run.finish row per run). Returns how many matching runs were cancelled.';

CREATE FUNCTION agent.requeue_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                   status text DEFAULT 'failed',
                                   since timestamptz DEFAULT now() - interval '1 hour',
                                   by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  o    agent.runs%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_n  integer := 0;
  v_who text := coalesce(nullif(by_user, ''), 'dba:' || session_user::text);
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(requeue_runs.by_user, ''), true);
  IF status IS NULL OR status NOT IN ('failed', 'budget_exceeded', 'cancelled', 'expired') THEN
    RAISE EXCEPTION 'invalid status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Runs that ended failed, budget_exceeded, cancelled or expired are run again.';
  END IF;
  IF agent_id IS NULL AND workspace_id IS NULL THEN
    RAISE EXCEPTION 'agent.requeue_runs needs an agent or a workspace'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF since IS NULL THEN
    RAISE EXCEPTION 'since must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF agent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.id = agent_id) THEN
    RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
  END IF;
  FOR o IN
    SELECT x.* FROM agent.runs x
      JOIN agent.agents a ON a.workspace_id = x.workspace_id AND a.id = x.agent_id
     WHERE x.status = status AND x.finished_at >= since AND x.parent_run_id IS NULL
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
       AND a.deleted_at IS NULL AND (x.regime = 'manual' OR a.status = 'active')
       -- not re-run already (by an earlier call)
       AND NOT EXISTS (SELECT 1 FROM agent.runs y
                        WHERE y.workspace_id = x.workspace_id AND y.agent_id = x.agent_id
                          AND y.created_at >= x.finished_at
                          AND y.origin = 'rerun' AND y.input ->> 'rerun_of' = x.id::text)
     ORDER BY x.id
  LOOP
    v_id := agent._enqueue_run(o.agent_id, o.regime, 'rerun', o.input || jsonb_build_object('rerun_of', o.id),
                               NULL, o.requested_by);
    SELECT * INTO n FROM agent.runs x WHERE x.workspace_id = o.workspace_id AND x.id = v_id;
    PERFORM agent._audit_run('run.rerun', n, 'success',
                             jsonb_build_object('rerun_of', o.id, 'by_user', by_user, 'db_user', session_user::text,
                                                'status', n.status, 'bulk', true),
                             format('run %s re-runs run %s (bulk, by %s)', v_id, o.id, v_who));
    v_n := v_n + 1;
  END LOOP;
  RETURN v_n;
END
$$;
COMMENT ON FUNCTION agent.requeue_runs(bigint, text, text, timestamptz, text) IS
  'Runs again the root runs of an agent or a workspace that ended with this status (default failed) since the given time (default: the last hour), e.g. after a provider outage: each gets a new linked run (origin rerun, input.rerun_of) through the same queue and caps; a run already re-run is skipped, as are runs of deleted agents and autonomous runs of suspended ones. Superuser only; audited. Returns how many runs were queued.';

-- Where the key file of the secrets store lies (src/secret_keyfile.c).
CREATE FUNCTION agent.secret_key_file(setting text DEFAULT NULL, config_file text DEFAULT NULL,
                                      data_dir text DEFAULT NULL,
                                      OUT path text, OUT inside_data_directory boolean)
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'pg_agents_secret_key_file_info';
COMMENT ON FUNCTION agent.secret_key_file(text, text, text) IS
  'The key file of the secrets store and whether it lies inside the data directory (a base backup then holds key and ciphertext together): pg_agents.secret_key_file when set (relative: from the data directory), else pg_agents.key beside config_file when that lies outside the data directory, else in the data directory (a key file left there by an earlier version is kept). Without arguments, this server''s file; with any, the choice for those values (NULL: the server''s). Superusers only.';
