-- pg_agents: the background worker's SQL side (src/worker.c, executor.c, tools.c).
--
--   grants to agents_tool (the role the worker switches to for tool SQL)
--   agent.run_state       conversation state of runs in flight (resume after
--                         approval, delegation or a crash)
--   agent._worker_reclaim requeues runs left running by a previous worker

-- ---------------------------------------------------------------------------
-- The tool role agents_tool (created in 010_core.sql): neither superuser
-- nor BYPASSRLS, so that row-level security and audit triggers apply to what
-- an agent does.  agent.register_resource_table grants it SELECT, UPDATE on
-- each registered table.
-- ---------------------------------------------------------------------------
GRANT USAGE ON SCHEMA agent TO agents_tool;
-- what access checks evaluated inside tool SQL (search filters, RLS policies)
-- read: agents, grants, shares, groups and the default ACL
GRANT SELECT ON agent.agents, agent.access, agent.shares, agent.group_members, agent.resource_acl
  TO agents_tool;

-- ---------------------------------------------------------------------------
-- Run state
-- ---------------------------------------------------------------------------
CREATE TABLE agent.run_state (
    run_id       bigint PRIMARY KEY,
    workspace_id text NOT NULL,
    worker_pid   integer,
    claimed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    state        jsonb,
    FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE
);
REVOKE ALL ON agent.run_state FROM PUBLIC;
COMMENT ON TABLE agent.run_state IS
  'Worker bookkeeping of runs in flight: which worker process holds the run and the conversation needed to resume it (after an approval, a delegated run, or a crash). Deleted when the run ends.';
COMMENT ON COLUMN agent.run_state.run_id IS 'Run.';
COMMENT ON COLUMN agent.run_state.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.run_state.worker_pid IS 'Process id of the worker that claimed the run last.';
COMMENT ON COLUMN agent.run_state.claimed_at IS 'When the worker claimed it last.';
COMMENT ON COLUMN agent.run_state.updated_at IS 'When the state was saved last.';
COMMENT ON COLUMN agent.run_state.state IS
  'Conversation: {"messages": provider-native messages, "pending": tool calls of the last reply, "results": their results so far, "iterations": model turns, "child_run_id": delegated run awaited}.';

-- ---------------------------------------------------------------------------
-- Crash recovery: runs still marked running by a previous incarnation of the
-- worker (another process id) are requeued at once, or failed past
-- pg_agents.max_attempts.  agent.tick reclaims expired leases of any executor.
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_reclaim(p_worker_pid integer) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  r     record;
  n     integer := 0;
  v_max integer := coalesce(nullif(current_setting('pg_agents.max_attempts', true), '')::integer, 3);
BEGIN
  FOR r IN
    SELECT ru.id, ru.attempts
      FROM agent.runs ru JOIN agent.run_state s ON s.run_id = ru.id
     WHERE ru.status = 'running' AND s.worker_pid IS DISTINCT FROM p_worker_pid
     ORDER BY ru.id
     FOR UPDATE OF ru SKIP LOCKED
  LOOP
    IF r.attempts >= v_max THEN
      PERFORM agent.finish_run(r.id, 'failed', NULL,
        format('the worker stopped during this run %s times (pg_agents.max_attempts = %s)', r.attempts, v_max));
    ELSE
      UPDATE agent.runs SET status = 'queued', lease_until = NULL WHERE id = r.id;
      UPDATE agent.run_state SET worker_pid = NULL WHERE run_id = r.id;
    END IF;
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent._worker_reclaim(integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_reclaim(integer) IS
  'Internal (worker start): requeues runs left running by a previous worker process, or fails them past pg_agents.max_attempts; returns how many it handled.';

CREATE FUNCTION agent._worker_cleanup() RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
  WITH d AS (
    DELETE FROM agent.run_state s USING agent.runs r
     WHERE r.id = s.run_id
       AND r.status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
    RETURNING 1)
  SELECT count(*)::integer FROM d
$$;
REVOKE ALL ON FUNCTION agent._worker_cleanup() FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_cleanup() IS
  'Internal (worker, every tick): drops the saved state of runs that ended without the worker (denied, expired, cancelled); returns how many.';
