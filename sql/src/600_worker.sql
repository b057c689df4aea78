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
\ir ../functions/agent._worker_reclaim.sql
REVOKE ALL ON FUNCTION agent._worker_reclaim(integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_reclaim(integer) IS
  'Internal (worker start): requeues runs left running by a previous worker process, or fails them past pg_agents.max_attempts; returns how many it handled.';

\ir ../functions/agent._worker_cleanup.sql
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
\ir ../functions/agent._worker_finish_replies.sql
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
