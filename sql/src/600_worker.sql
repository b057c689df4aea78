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

-- ---------------------------------------------------------------------------
-- A batch of final answers recorded in one transaction (src/executor.c).
-- For each reply of a root run still running: the llm step, the usage, then
-- the end of the run (succeeded with {"text"}, or budget_exceeded when its
-- token_budget is used up) and its state forgotten; a run with undelivered
-- messages goes on instead (lease renewed, outcome "continue").  The same
-- rows as one transaction per reply (agent.add_usage, agent.finish_run).
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_finish_replies(p_replies jsonb, p_lease_secs integer)
RETURNS TABLE(run_id bigint, outcome text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
  v_all    bigint[];
  v_bad    boolean;
  v_ids    bigint[];
  v_ws     text[];
  v_over   boolean[];
  v_budget bigint[];
  v_total  bigint[];
  v_fin    bigint[];
  v_cont   bigint[];
  v_status text[];
  v_output jsonb[];
  v_error  text[];
BEGIN
  SELECT array_agg(x.run_id ORDER BY x.run_id),
         bool_or(x.tokens_in IS NULL OR x.tokens_out IS NULL OR x.tokens_in < 0 OR x.tokens_out < 0)
    INTO v_all, v_bad
    FROM jsonb_to_recordset(p_replies) AS x(run_id bigint, tokens_in int, tokens_out int);
  IF v_bad THEN
    RAISE EXCEPTION 'token counts must be non-negative' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- the usage (agent.add_usage of a root run: no ancestor to roll up to), on
  -- the root runs still running; the update locks them (a root run's row is
  -- its tree lock)
  -- (planned for this batch: a plan kept from when agent.runs was small would scan it)
  EXECUTE $q$
    WITH u AS (
      UPDATE agent.runs r
         SET tokens_total = r.tokens_total + x.tokens_in + x.tokens_out,
             tokens_in = r.tokens_in + x.tokens_in, tokens_out = r.tokens_out + x.tokens_out,
             model = coalesce(x.model, r.model)
        FROM jsonb_to_recordset($1) AS x(run_id bigint, model text, tokens_in int, tokens_out int)
       WHERE r.id = ANY ($2) AND r.id = x.run_id
         AND r.status = 'running' AND r.parent_run_id IS NULL AND r.root_run_id = r.id
      RETURNING r.id, r.workspace_id, r.token_budget IS NOT NULL AND r.tokens_total >= r.token_budget AS over,
                r.token_budget, r.tokens_total)
    SELECT array_agg(u.id ORDER BY u.id), array_agg(u.workspace_id ORDER BY u.id), array_agg(u.over ORDER BY u.id),
           array_agg(u.token_budget ORDER BY u.id), array_agg(u.tokens_total ORDER BY u.id)
      FROM u$q$
    INTO v_ids, v_ws, v_over, v_budget, v_total
    USING p_replies, v_all;

  IF v_ids IS NOT NULL THEN
    -- the llm steps (as src/tools.c ToolsRecordStep)
    INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, tokens,
                                 started_at, finished_at)
    SELECT u.workspace_id, u.id, coalesce((SELECT max(s.seq) FROM agent.run_steps s WHERE s.run_id = u.id), 0) + 1,
           'llm', x.model, agent.redact(x.input), agent.redact(x.output), 'ok', x.tokens,
           timestamptz 'epoch' + x.started_us * interval '1 microsecond', clock_timestamp()
      FROM unnest(v_ids, v_ws) AS u(id, workspace_id)
      JOIN jsonb_to_recordset(p_replies)
           AS x(run_id bigint, model text, input jsonb, output jsonb, tokens integer, started_us bigint)
        ON x.run_id = u.id
     ORDER BY u.id;

    -- the end: budget used up, else succeeded unless messages wait for the run
    SELECT array_agg(f.id ORDER BY f.id) FILTER (WHERE f.status IS NOT NULL),
           array_agg(f.status ORDER BY f.id) FILTER (WHERE f.status IS NOT NULL),
           array_agg(f.output ORDER BY f.id) FILTER (WHERE f.status IS NOT NULL),
           array_agg(f.error ORDER BY f.id) FILTER (WHERE f.status IS NOT NULL),
           array_agg(f.id ORDER BY f.id) FILTER (WHERE f.status IS NULL)
      INTO v_fin, v_status, v_output, v_error, v_cont
      FROM (SELECT u.id,
                   CASE WHEN u.over THEN 'budget_exceeded'
                        WHEN (SELECT count(*) FROM agent.run_messages m
                               WHERE m.run_id = u.id AND m.delivered_at IS NULL) > 0 THEN NULL
                        ELSE 'succeeded' END AS status,
                   CASE WHEN NOT u.over THEN jsonb_build_object('text', coalesce(x.text, '')) END AS output,
                   CASE WHEN u.over THEN format('token budget of %s exhausted (%s used)', u.budget, u.total) END AS error
              FROM unnest(v_ids, v_over, v_budget, v_total) AS u(id, over, budget, total)
              JOIN jsonb_to_recordset(p_replies) AS x(run_id bigint, text text) ON x.run_id = u.id) f;

    IF v_fin IS NOT NULL THEN
      SELECT array_agg(f.id) INTO v_fin FROM agent._finish_runs(v_fin, v_status, v_output, v_error) AS f(id);
      DELETE FROM agent.run_state s WHERE s.run_id = ANY (v_fin);
    END IF;
    IF v_cont IS NOT NULL THEN
      UPDATE agent.runs r SET lease_until = now() + make_interval(secs => p_lease_secs)
       WHERE r.id = ANY (v_cont);
    END IF;
  END IF;

  RETURN QUERY
  SELECT x.run_id,
         CASE WHEN x.run_id = ANY (coalesce(v_fin, '{}')) THEN 'finished'
              WHEN x.run_id = ANY (coalesce(v_cont, '{}')) THEN 'continue'
              WHEN x.run_id = ANY (coalesce(v_ids, '{}')) THEN 'gone'
              WHEN (SELECT r.status FROM agent.runs r WHERE r.id = x.run_id) IS DISTINCT FROM 'running' THEN 'gone'
              ELSE 'single' END
    FROM unnest(v_all) AS x(run_id);
END
$$;
REVOKE ALL ON FUNCTION agent._worker_finish_replies(jsonb, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_finish_replies(jsonb, integer) IS
  'Internal (worker): records a batch of final answers [{"run_id","model","input","output","tokens","tokens_in","tokens_out","started_us" (microseconds since 1970),"text"}] in one transaction: llm step, usage, end of the run (succeeded, or budget_exceeded) and its state, for root runs still running; returns each run''s outcome: finished, continue (messages wait: lease renewed, the worker delivers them), gone (no longer running) or single (the worker records it alone).';
