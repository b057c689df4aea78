-- pg_agents: the background worker's SQL side (src/worker.c, run_units.c, tools.c).
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
-- Cached prompt tokens (docs/worker.md, "Usage"): the input tokens a
-- provider read from its prompt cache, a part of tokens_in
-- ---------------------------------------------------------------------------
ALTER TABLE agent.runs ADD COLUMN tokens_cached bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN agent.runs.tokens_cached IS 'Prompt tokens of this run read from the provider''s prompt cache (Anthropic cache_read_input_tokens, OpenAI prompt_tokens_details.cached_tokens); a part of tokens_in.';

-- ---------------------------------------------------------------------------
-- Run state
-- ---------------------------------------------------------------------------
CREATE TABLE agent.run_state (
    run_id       bigint NOT NULL,
    workspace_id text NOT NULL,
    worker_pid   integer,
    claimed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    state        jsonb,
    CONSTRAINT run_state_pkey PRIMARY KEY (run_id, workspace_id),
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
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c        record;
  n        integer := 0;
  v_max    integer := coalesce(nullif(current_setting('pg_agents.max_attempts', true), '')::integer, 3);
  v_tries  integer;
BEGIN
  -- the runs first (a colocated join), then each locked in its workspace
  -- (Citus routes by it and refuses FOR UPDATE across workspaces)
  FOR c IN
    SELECT ru.workspace_id, ru.id
      FROM agent.runs ru JOIN agent.run_state s ON s.workspace_id = ru.workspace_id AND s.run_id = ru.id
     WHERE ru.status = 'running' AND s.worker_pid IS DISTINCT FROM p_worker_pid
     ORDER BY ru.id
  LOOP
    SELECT ru.attempts INTO v_tries FROM agent.runs ru
     WHERE ru.workspace_id = c.workspace_id AND ru.id = c.id AND ru.status = 'running'
       FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    IF v_tries >= v_max THEN
      PERFORM agent.finish_run(c.id, 'failed', NULL,
        format('the worker stopped during this run %s times (pg_agents.max_attempts = %s)', v_tries, v_max));
    ELSE
      UPDATE agent.runs SET status = 'queued', lease_until = NULL WHERE workspace_id = c.workspace_id AND id = c.id;
      UPDATE agent.run_state SET worker_pid = NULL WHERE workspace_id = c.workspace_id AND run_id = c.id;
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
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table;
  -- a colocated join, on the workspace too)
  DELETE FROM agent.run_state s USING agent.runs r
   WHERE r.workspace_id = s.workspace_id AND r.id = s.run_id
     AND r.status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children');
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent._worker_cleanup() FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_cleanup() IS
  'Internal (worker, every tick): drops the saved state of runs that ended without the worker (denied, expired, cancelled); returns how many.';

-- ---------------------------------------------------------------------------
-- A batch of final answers recorded in one transaction (src/run_calls.c, src/run_units.c).
-- For each reply of a root run still running and without active children:
-- the llm step, the usage, then the end of the run (succeeded with
-- {"text"}, or budget_exceeded when its budget is used up: its token_budget,
-- or its agent's default_token_budget when NULL) and its
-- state forgotten; a run with undelivered messages goes on instead (lease
-- renewed, outcome "continue").  The same rows as one transaction per reply
-- (agent.add_usage, agent.finish_run), in one statement and
-- agent._finish_runs_effects.
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_finish_replies(p_replies jsonb, p_lease_secs integer)
RETURNS TABLE(run_id bigint, outcome text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_rows agent.runs[];
  v_out  text[];
  v_ids  bigint[];
  v_all  bigint[];
  v_ws   text;
  v_wids bigint[];
  v_wids_all bigint[] := '{}';
  -- now() and the lease's end as values (Citus takes no volatile or stable
  -- call in the UPDATE's CASE)
  v_now  timestamptz := now();
  v_until timestamptz := v_now + make_interval(secs => p_lease_secs);
BEGIN
  IF EXISTS (SELECT 1 FROM jsonb_to_recordset(p_replies) AS x(tokens_in int, tokens_out int, tokens_cached int)
              WHERE x.tokens_in IS NULL OR x.tokens_out IS NULL OR x.tokens_in < 0 OR x.tokens_out < 0
                 OR x.tokens_cached < 0) THEN
    RAISE EXCEPTION 'token counts must be non-negative' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- One statement per workspace.  The update finds the runs among the running ones
  -- (status = 'running': the small partial index runs_lease_idx, whatever
  -- the size of agent.runs), locks them (a root run's row is its tree
  -- lock), adds the usage (agent.add_usage of a root run: no
  -- ancestor) and ends them as agent._finish_run does, unless messages wait
  -- (then the lease is renewed); the steps are written as src/tools.c
  -- ToolsRecordStep does; the state of ended runs is forgotten.
  v_all := ARRAY(SELECT (e ->> 'run_id')::bigint FROM jsonb_array_elements(p_replies) e);
  -- workspace by workspace (Citus routes each statement by it): those of the
  -- runs still running (runs_lease_idx); a batch is mostly of one
  FOR v_ws, v_wids IN SELECT r.workspace_id, array_agg(r.id) FROM agent.runs r
                       WHERE r.id = ANY (v_all) AND r.status = 'running' GROUP BY r.workspace_id ORDER BY 1
  LOOP
    v_wids_all := v_wids_all || v_wids;
    WITH x AS MATERIALIZED (
      -- (the answer built here: Citus takes no stable call in the UPDATE's CASE)
      SELECT x.*, agent.redact(x.input) AS step_input, agent.redact(x.output) AS step_output,
             jsonb_build_object('text', coalesce(x.text, '')) AS answer,
             EXISTS (SELECT 1 FROM agent.run_messages m
                      WHERE m.workspace_id = v_ws AND m.run_id = x.run_id AND m.delivered_at IS NULL) AS waits
        FROM jsonb_to_recordset(p_replies)
          AS x(run_id bigint, model text, input jsonb, output jsonb, tokens integer,
               tokens_in integer, tokens_out integer, tokens_cached integer, started_us bigint, text text)
       WHERE x.run_id = ANY (v_wids)),
    u AS (
      UPDATE agent.runs r
         SET tokens_total = r.tokens_total + x.tokens_in + x.tokens_out,
             tokens_in = r.tokens_in + x.tokens_in, tokens_out = r.tokens_out + x.tokens_out,
             tokens_cached = r.tokens_cached + coalesce(x.tokens_cached, 0),
             model = coalesce(x.model, r.model),
             -- the live progress of the step (agent._teams_steps_inserted then finds it done)
             current_step = 'llm' || coalesce(':' || x.model, ''),
             preview = agent._teams_step_preview('llm', x.step_output),
             status = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN 'budget_exceeded'
                           WHEN x.waits THEN r.status ELSE 'succeeded' END,
             output = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN r.output
                           WHEN x.waits THEN r.output ELSE x.answer END,
             error = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget)
                            THEN 'token budget of ' || coalesce(r.token_budget, a.default_token_budget)::text
                                 || ' exhausted (' || (r.tokens_total + x.tokens_in + x.tokens_out)::text || ' used)'
                          WHEN x.waits THEN r.error END,
             finished_at = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN v_now
                                WHEN x.waits THEN r.finished_at ELSE v_now END,
             lease_until = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN NULL
                                WHEN x.waits THEN v_until END
        FROM x, agent.agents a
       WHERE r.workspace_id = v_ws AND r.id = ANY (v_wids) AND r.id = x.run_id
         AND a.workspace_id = v_ws AND a.id = r.agent_id
         AND r.status = 'running' AND r.parent_run_id IS NULL AND r.root_run_id = r.id
         AND NOT EXISTS (SELECT 1 FROM agent.runs c
                          WHERE c.workspace_id = v_ws AND c.parent_run_id = r.id AND agent._run_is_active(c.status))
      RETURNING r AS run, r.status <> 'running' AS ended),
    s AS (
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, tokens,
                                   started_at, finished_at)
      SELECT (u.run).workspace_id, x.run_id,
             coalesce((SELECT max(st.seq) FROM agent.run_steps st WHERE st.workspace_id = v_ws AND st.run_id = x.run_id), 0) + 1,
             'llm', x.model, x.step_input, x.step_output, 'ok', x.tokens,
             timestamptz 'epoch' + x.started_us * interval '1 microsecond', clock_timestamp()
        FROM u JOIN x ON x.run_id = (u.run).id
       ORDER BY x.run_id),
    d AS (
      DELETE FROM agent.run_state st USING u WHERE st.workspace_id = v_ws AND st.run_id = (u.run).id AND u.ended)
    SELECT v_rows || array_agg(u.run ORDER BY (u.run).id) FILTER (WHERE u.ended),
           v_out || array_agg(CASE WHEN u.ended THEN 'finished' ELSE 'continue' END ORDER BY (u.run).id),
           v_ids || array_agg((u.run).id ORDER BY (u.run).id)
      INTO v_rows, v_out, v_ids
      FROM u;
  END LOOP;

  IF v_rows IS NOT NULL THEN
    PERFORM agent._finish_runs_effects(v_rows);
  END IF;

  -- the others: no longer running (gone), or left to the one-reply path (single)
  RETURN QUERY
  SELECT x.run_id,
         coalesce(v_out[array_position(v_ids, x.run_id)],
                  CASE WHEN x.run_id = ANY (v_wids_all) THEN 'single' ELSE 'gone' END)
    FROM jsonb_to_recordset(p_replies) AS x(run_id bigint);
END
$$;
REVOKE ALL ON FUNCTION agent._worker_finish_replies(jsonb, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_finish_replies(jsonb, integer) IS
  'Internal (worker): records a batch of final answers [{"run_id","model","input","output","tokens","tokens_in","tokens_out","tokens_cached","started_us" (microseconds since 1970),"text"}] in one transaction: llm step, usage, end of the run (succeeded, or budget_exceeded) and its state, for root runs still running without active children; returns each run''s outcome: finished, continue (messages wait: lease renewed, the worker delivers them), gone (no longer running) or single (the worker records it alone).';

-- ---------------------------------------------------------------------------
-- Where the API key goes (docs/worker.md, "LLM endpoints and the API key")
-- ---------------------------------------------------------------------------
-- An agent's settings may name their own LLM endpoint (scope.llm_url) only
-- when a superuser listed it in pg_agents.llm_url_allowlist (or it is
-- pg_agents.llm_url itself).  Checked on every write of the scope (save,
-- create, restore, a direct UPDATE) and again by the worker before each
-- run, since the allowlist may change.  pg_agents.llm_api_key is only ever
-- sent to pg_agents.llm_url: an allowlisted agent endpoint gets no key.
CREATE FUNCTION agent._llm_url_allowed(url text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_llm_url_allowed';
COMMENT ON FUNCTION agent._llm_url_allowed(text) IS
  'Internal: whether an agent may name this LLM endpoint: pg_agents.llm_url, or an entry of pg_agents.llm_url_allowlist (exact match once trailing slashes are trimmed).';

CREATE FUNCTION agent._agents_llm_url_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_url jsonb := NEW.scope -> 'llm_url';
BEGIN
  IF v_url IS NULL OR (TG_OP = 'UPDATE' AND v_url IS NOT DISTINCT FROM OLD.scope -> 'llm_url') THEN
    RETURN NEW;
  END IF;
  IF pg_catalog.jsonb_typeof(v_url) <> 'string' THEN
    RAISE EXCEPTION 'scope key "llm_url" must be a string'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT agent._llm_url_allowed(v_url #>> '{}') THEN
    RAISE EXCEPTION 'scope llm_url "%" is not an allowed LLM endpoint', v_url #>> '{}'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An agent''s settings may only name an endpoint listed in pg_agents.llm_url_allowlist, which a superuser sets; the API key is only ever sent to pg_agents.llm_url.',
            HINT = 'Remove llm_url from the scope to use the cluster''s endpoint, or ask a superuser to add it to pg_agents.llm_url_allowlist.';
  END IF;
  RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION agent._agents_llm_url_check() FROM PUBLIC;
COMMENT ON FUNCTION agent._agents_llm_url_check() IS
  'Internal trigger: refuses (22023) an agent scope whose llm_url changed to an endpoint outside pg_agents.llm_url_allowlist.';

CREATE TRIGGER agents_llm_url_check BEFORE INSERT OR UPDATE OF scope ON agent.agents
  FOR EACH ROW EXECUTE FUNCTION agent._agents_llm_url_check();
COMMENT ON TRIGGER agents_llm_url_check ON agent.agents IS
  'scope.llm_url must be an endpoint a superuser allowed (pg_agents.llm_url_allowlist).';

-- ---------------------------------------------------------------------------
-- Approvals show what runs (agent.request_approval)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._has_credential(input jsonb) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_has_credential';
COMMENT ON FUNCTION agent._has_credential(jsonb) IS
  'Internal: whether redaction of credentials (agent.redact''s rules, without its size cuts) would change the value: a value under a credential-shaped key, or a credential-shaped string.';
