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

\ir ../views/agent.run_metrics.sql
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
\ir ../views/agent.mcp_metrics.sql

\ir ../functions/agent.run_stats.sql

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
\ir ../functions/agent._worker_requeue.sql

-- ---------------------------------------------------------------------------
-- Bulk cancel (superuser; the application within its session's workspace)
-- and bulk re-run (superuser)
-- ---------------------------------------------------------------------------
\ir ../functions/agent.cancel_runs.sql

\ir ../functions/agent.requeue_runs.sql

-- Where the key file of the secrets store lies (src/secret_keyfile.c).
\ir ../functions/agent.secret_key_file.sql
