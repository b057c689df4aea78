-- pg_agents 0.1.0 -> 0.2.0.  Applied by ALTER EXTENSION pg_agents UPDATE.
\echo Use "ALTER EXTENSION pg_agents UPDATE" to load this file. \quit

-- ===========================================================================
-- Allowlist: the readable set in C, as a typed array kept between statements
-- (docs/allowlist.md, "How it works").
-- ===========================================================================

-- Transactions that change what agents may access say so (src/shmem.c), so
-- that a backend may keep an agent's readable set across statements until one
-- of them commits.  ENABLE ALWAYS: logical replication's apply changes count.
CREATE FUNCTION agent._access_changed() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_access_changed';
COMMENT ON FUNCTION agent._access_changed() IS
  'Internal statement trigger on the tables agent.can_access reads: marks the transaction as changing access data, which invalidates the readable sets kept by backends when it commits.';
CREATE TRIGGER access_changed AFTER INSERT OR DELETE OR TRUNCATE
                             OR UPDATE OF workspace_id, owner_id, status, deleted_at ON agent.agents
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.access
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.resource_acl
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.group_members
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.access_config
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
ALTER TABLE agent.agents ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.access ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.resource_acl ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.group_members ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.access_config ENABLE ALWAYS TRIGGER access_changed;

CREATE FUNCTION agent.readable_set_stats(OUT computed bigint, OUT reused bigint)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_readable_set_stats';
COMMENT ON FUNCTION agent.readable_set_stats() IS
  'How many readable sets (for the allowlist policies and agent.readable_resources) this backend has computed, and how many it has reused because no access data could have changed since.';

CREATE FUNCTION agent._readable_ids(agent_id bigint, resource_type text, mode text) RETURNS text[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_readable_ids';
REVOKE ALL ON FUNCTION agent._readable_ids(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._readable_ids(bigint, text, text) IS
  'Internal to agent.readable_resources: the readable (or editable) ids of any agent among the resources of a type, sorted, computed in C by the decision of agent.can_access. Not executable by PUBLIC.';

CREATE FUNCTION agent._allowlist_ids_text(resource_type text, mode text) RETURNS text[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_text(text, text) IS
  'Internal to the allowlist policies: the ids the session''s agent may read (or edit) among the resources of a type, as text; empty when the session does not act as an agent. Computed in C once per statement, kept while the visible data cannot have changed.';

CREATE FUNCTION agent._allowlist_ids_int8(resource_type text, mode text) RETURNS bigint[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_int8(text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_ids_text, for integer id columns (ids that are not integers are left out).';

CREATE FUNCTION agent._allowlist_ids_uuid(resource_type text, mode text) RETURNS uuid[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_uuid(text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_ids_text, for uuid id columns (ids that are not canonical lowercase uuids are left out).';

CREATE OR REPLACE FUNCTION agent.readable_resources(agent_id bigint, resource_type text, mode text DEFAULT 'read')
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  v_self   bigint := agent.current_agent_id();
BEGIN
  IF mode IS NULL OR mode NOT IN ('read', 'edit') THEN
    RAISE EXCEPTION 'invalid mode "%"', coalesce(mode, '(null)')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A mode is read or edit.';
  END IF;
  IF v_self IS NOT NULL AND agent_id IS DISTINCT FROM v_self THEN
    RAISE EXCEPTION 'an agent session can only list its own resources'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = format('The session acts as agent %s.', v_self);
  END IF;
  IF agent_id IS NULL OR resource_type IS NULL THEN
    RETURN;
  END IF;
  -- (a) direct grants at >= mode, bounded by the owner's ACL (their user and
  --     group rows, and what is shared with the whole workspace);
  -- (b) with a workspace_shared grant: what is shared with the whole
  --     workspace now, bounded by the owner's ACL;
  -- each candidate decided by the code of agent.can_access (src/access.c).
  RETURN QUERY SELECT unnest(agent._readable_ids(agent_id, resource_type, mode));
END
$$;
COMMENT ON FUNCTION agent.readable_resources(bigint, text, text) IS
  'Ids of the resources of a type an agent may read (or edit) in the autonomous regime, exactly those agent.can_access allows: direct grants bounded by the owner''s ACL, plus what is shared with the workspace when the agent holds workspace_shared. Empty for an unknown, deleted or suspended agent. With a custom ACL function (agent.set_acl_function): the direct grants that function allows, without the workspace shares, which such a function cannot list. An agent session may only ask for itself.';

CREATE OR REPLACE FUNCTION agent._allowlist_expr(p_tbl regclass, p_column name, p_type text, p_mode text,
                                      OUT expr text, OUT indexable boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
  att  pg_attribute := agent._rls_column(p_tbl, p_column, 'id');
  col  text := quote_ident(p_column);
  ids  text;
  arr  text;
BEGIN
  indexable := true;
  CASE att.atttypid
    WHEN 'text'::regtype, 'varchar'::regtype THEN
      ids := format('agent._allowlist_ids_text(%L, %L)', p_type, p_mode);
      arr := 'text[]';
    WHEN 'int2'::regtype, 'int4'::regtype, 'int8'::regtype THEN
      -- int2/int4 = int8 are in the integer btree family: the index serves it
      ids := format('agent._allowlist_ids_int8(%L, %L)', p_type, p_mode);
      arr := 'bigint[]';
    WHEN 'uuid'::regtype THEN
      ids := format('agent._allowlist_ids_uuid(%L, %L)', p_type, p_mode);
      arr := 'uuid[]';
    ELSE
      indexable := false;
      ids := format('agent._allowlist_ids_text(%L, %L)', p_type, p_mode);
      arr := 'text[]';
  END CASE;
  -- Folded at plan time: a non-agent session keeps "true"; an agent session
  -- keeps the id test (its array an InitPlan), or with a custom ACL function
  -- the per-row check.
  expr := format('NOT agent._allowlist_active() OR (NOT agent._allowlist_custom_acl() AND %s)'
                 ' OR (agent._allowlist_custom_acl() AND agent.can_access((SELECT agent.current_agent_id()), %L, (%s)::text, %L))',
                 -- "(SELECT f())::t[]": an array-valued InitPlan, not ANY (subquery)
                 CASE WHEN indexable THEN format('%s = ANY ((SELECT %s)::%s)', col, ids, arr)
                      ELSE format('(%s)::text = ANY ((SELECT %s)::%s)', col, ids, arr) END,
                 p_type, col, p_mode);
END
$$;
COMMENT ON FUNCTION agent._allowlist_expr(regclass, name, text, text) IS
  'Internal: the policy expression "not an agent session, or the id is in the readable set" for a table column and a mode.';

-- The policies of the tables already under the allowlist take the new shape.
DO $upgrade$
DECLARE
  t  record;
  rd record;
  ed record;
BEGIN
  FOR t IN SELECT * FROM agent.allowlist_tables LOOP
    rd := agent._allowlist_expr(t.tbl, t.id_column, t.resource_type, 'read');
    ed := agent._allowlist_expr(t.tbl, t.id_column, t.resource_type, 'edit');
    EXECUTE format('ALTER POLICY pg_agents_allowlist_select ON %s USING (%s)', t.tbl, rd.expr);
    EXECUTE format('ALTER POLICY pg_agents_allowlist_insert ON %s WITH CHECK (%s)', t.tbl, ed.expr);
    EXECUTE format('ALTER POLICY pg_agents_allowlist_update ON %s USING (%s) WITH CHECK (%s)', t.tbl, ed.expr, ed.expr);
    EXECUTE format('ALTER POLICY pg_agents_allowlist_delete ON %s USING (%s)', t.tbl, ed.expr);
  END LOOP;
END
$upgrade$;

-- ===========================================================================
-- Worker throughput (docs/worker.md, "Benchmark"): final answers recorded in
-- batches (agent._worker_finish_replies), the end of runs shared with
-- agent._finish_run (agent._finish_runs_effects), set-based claim audit
-- rows, the run_steps progress trigger per statement for new steps.
-- ===========================================================================

-- The end of runs once their row is updated (status, output, error,
-- finished_at): pending approvals expired, the trigger's last status, audit
-- row, notification.  agent._finish_run calls it for one run; the worker
-- (agent._worker_finish_replies) for a batch of runs, in id order.
CREATE FUNCTION agent._finish_runs_effects(p_rows agent.runs[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
  -- pending approvals of an ended run can no longer be decided
  UPDATE agent.approvals SET status = 'expired', decided_at = now()
   WHERE run_id IN (SELECT u.id FROM unnest(p_rows) u) AND status = 'pending';

  -- the trigger keeps the last run's status and the first run's start (as one by one in id order)
  UPDATE agent.triggers t
     SET last_status = l.status, last_error = l.error, last_run_at = coalesce(t.last_run_at, l.first_created)
    FROM (SELECT DISTINCT ON (u.trigger_id) u.trigger_id, u.status, u.error,
                 (SELECT u2.created_at FROM unnest(p_rows) u2
                   WHERE u2.trigger_id = u.trigger_id ORDER BY u2.id LIMIT 1) AS first_created
            FROM unnest(p_rows) u
           WHERE u.trigger_id IS NOT NULL
           ORDER BY u.trigger_id, u.id DESC) l
   WHERE t.id = l.trigger_id;

  -- one audit row (agent._audit_run) and one notification (agent._runs_notify
  -- of an ended run) per run, in id order
  PERFORM agent._audit_event('run.finish',
                             CASE WHEN u.status IN ('succeeded', 'cancelled') THEN 'success' ELSE 'error' END,
                             'run', u.id::text, u.workspace_id,
                             (SELECT a.owner_id FROM agent.agents a WHERE a.id = u.agent_id),
                             jsonb_build_object('agent_id', u.agent_id, 'status', u.status, 'error', u.error,
                                                'tokens_total', u.tokens_total),
                             format('run %s %s', u.id, u.status),
                             CASE WHEN u.status NOT IN ('succeeded', 'cancelled') THEN u.status END),
          pg_notify('agent_runs', json_build_object('run_id', u.id, 'agent_id', u.agent_id, 'status', u.status)::text)
     FROM unnest(p_rows) u;
END
$$;
REVOKE ALL ON FUNCTION agent._finish_runs_effects(agent.runs[]) FROM PUBLIC;
COMMENT ON FUNCTION agent._finish_runs_effects(agent.runs[]) IS
  'Internal: the end of runs whose row is updated (agent._finish_run, the worker''s batch): pending approvals expired, the trigger''s last status, error and first run time, one run.finish audit row and one agent_runs notification per run, in order.';

CREATE OR REPLACE FUNCTION agent._finish_run(p_run_id bigint, p_status text, p_output jsonb, p_error text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
  r        agent.runs%ROWTYPE;
  p        agent.runs%ROWTYPE;
  v_budget bigint;
  v_child  bigint;
  v_unused bigint;
BEGIN
  -- the caller holds the tree lock
  SELECT * INTO r FROM agent.runs WHERE id = p_run_id FOR UPDATE;
  IF NOT FOUND OR NOT agent._run_is_active(r.status) THEN
    RETURN false;
  END IF;
  UPDATE agent.runs
     SET status = p_status, output = coalesce(p_output, output), error = p_error,
         finished_at = now(), lease_until = NULL
   WHERE id = p_run_id
  RETURNING * INTO r;

  -- children still at work are cancelled (deepest first, through recursion)
  FOR v_child IN SELECT c.id FROM agent.runs c
                  WHERE c.parent_run_id = p_run_id AND agent._run_is_active(c.status) ORDER BY c.id
  LOOP
    PERFORM agent._finish_run(v_child, 'cancelled', NULL,
                              format('cancelled: parent run %s ended %s', p_run_id, p_status));
  END LOOP;

  IF r.parent_run_id IS NOT NULL THEN
    SELECT coalesce(r.token_budget, a.default_token_budget) INTO v_budget
      FROM agent.agents a WHERE a.id = r.agent_id;
    -- the unused part of the reservation goes back to the parent's envelope
    v_unused := greatest(0, v_budget - r.tokens_total);
    UPDATE agent.runs SET tokens_reserved = greatest(0, tokens_reserved - v_unused)
     WHERE id = r.parent_run_id
    RETURNING * INTO p;
    -- the parent sees the child's end as the result of its delegate step
    UPDATE agent.run_steps s
       SET output = jsonb_build_object('child_run_id', r.id, 'agent_id', r.agent_id,
                                       'status', r.status, 'output', r.output, 'error', r.error,
                                       'tokens_total', r.tokens_total),
           status = CASE WHEN r.status = 'succeeded' THEN 'ok' ELSE 'error' END,
           finished_at = clock_timestamp()
     WHERE s.run_id = r.parent_run_id AND s.kind = 'delegate'
       AND s.input ->> 'child_run_id' = r.id::text;
    -- a parent waiting for its children goes back to the queue when the last one ends
    IF p.status = 'waiting_children'
       AND NOT EXISTS (SELECT 1 FROM agent.runs c
                        WHERE c.parent_run_id = p.id AND agent._run_is_active(c.status)) THEN
      UPDATE agent.runs SET status = 'queued' WHERE id = p.id RETURNING * INTO p;
      PERFORM agent._audit_run('run.resume', p, 'success', jsonb_build_object('status', 'queued'),
                               format('run %s re-queued: its child runs have ended', p.id));
      PERFORM agent._runs_notify(p.id, p.agent_id, 'queued');
    END IF;
  END IF;

  -- approvals, trigger, audit row, notification
  PERFORM agent._finish_runs_effects(ARRAY[r]);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION agent._finish_run(bigint, text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._finish_run(bigint, text, jsonb, text) IS
  'Internal: ends an active run (tree lock held): cancels active children, returns unused budget to the parent, records the result on the parent''s delegate step, re-queues a waiting parent, updates the trigger, audits, notifies.';

CREATE OR REPLACE FUNCTION agent.claim_runs(n int) RETURNS SETOF agent.runs
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
ROWS 16   -- a claim returns a few runs: the worker's join on it stays a nested loop
SET search_path = pg_catalog
AS $$
DECLARE
  v_lease interval := current_setting('pg_agents.run_lease')::interval;
  v_rows  agent.runs[];
BEGIN
  IF n IS NULL OR n < 1 THEN
    RAISE EXCEPTION 'number of runs to claim must be positive'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  WITH c AS (
      SELECT q.id FROM agent.runs q
       WHERE q.status = 'queued'
         AND NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.id = q.agent_id AND a.deleted_at IS NOT NULL)
       ORDER BY q.priority DESC, q.id
       LIMIT n
       FOR UPDATE OF q SKIP LOCKED
    ), u AS (
      UPDATE agent.runs x
         SET status = 'running', attempts = x.attempts + 1,
             started_at = coalesce(x.started_at, now()), lease_until = now() + v_lease
        FROM c
       -- by primary key: c locked these rows while they were queued, so no
       -- status test here (with one, a stale estimate of the small partial
       -- queue index made the planner scan every queued run per claim)
       WHERE x.id = c.id
      RETURNING x AS run
    )
  SELECT array_agg(u.run ORDER BY (u.run).priority DESC, (u.run).id) INTO v_rows FROM u;
  IF v_rows IS NULL THEN
    RETURN;
  END IF;
  -- one audit row per claimed run (agent._audit_run), in claim order
  PERFORM agent._audit_event('run.claim', 'success', 'run', r.id::text, r.workspace_id,
                             (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
                             jsonb_build_object('agent_id', r.agent_id, 'status', 'running', 'attempts', r.attempts),
                             format('run %s claimed (attempt %s)', r.id, r.attempts), NULL)
     FROM unnest(v_rows) r;
  RETURN QUERY SELECT * FROM unnest(v_rows);
END
$$;
COMMENT ON FUNCTION agent.claim_runs(int) IS
  'Claims up to n queued runs of agents not deleted (interactive first, then oldest; FOR UPDATE SKIP LOCKED, never the same run twice): running, attempts + 1, started_at on the first claim, lease_until = now() + pg_agents.run_lease.';

-- ---------------------------------------------------------------------------
-- A batch of final answers recorded in one transaction (src/executor.c).
-- For each reply of a root run still running and without active children:
-- the llm step, the usage, then the end of the run (succeeded with
-- {"text"}, or budget_exceeded when its token_budget is used up) and its
-- state forgotten; a run with undelivered messages goes on instead (lease
-- renewed, outcome "continue").  The same rows as one transaction per reply
-- (agent.add_usage, agent.finish_run), in one statement and
-- agent._finish_runs_effects.
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_finish_replies(p_replies jsonb, p_lease_secs integer)
RETURNS TABLE(run_id bigint, outcome text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
  v_rows agent.runs[];
  v_out  text[];
  v_ids  bigint[];
  v_all  bigint[];
BEGIN
  IF EXISTS (SELECT 1 FROM jsonb_to_recordset(p_replies) AS x(tokens_in int, tokens_out int)
              WHERE x.tokens_in IS NULL OR x.tokens_out IS NULL OR x.tokens_in < 0 OR x.tokens_out < 0) THEN
    RAISE EXCEPTION 'token counts must be non-negative' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- One statement.  The update finds the runs among the running ones
  -- (status = 'running': the small partial index runs_lease_idx, whatever
  -- the size of agent.runs), locks them (a root run's row is its tree
  -- lock), adds the usage (agent.add_usage of a root run: no
  -- ancestor) and ends them as agent._finish_run does, unless messages wait
  -- (then the lease is renewed); the steps are written as src/tools.c
  -- ToolsRecordStep does; the state of ended runs is forgotten.
  v_all := ARRAY(SELECT (e ->> 'run_id')::bigint FROM jsonb_array_elements(p_replies) e);
    WITH x AS MATERIALIZED (
      SELECT x.*, agent.redact(x.input) AS step_input, agent.redact(x.output) AS step_output,
             EXISTS (SELECT 1 FROM agent.run_messages m
                      WHERE m.run_id = x.run_id AND m.delivered_at IS NULL) AS waits
        FROM jsonb_to_recordset(p_replies)
          AS x(run_id bigint, model text, input jsonb, output jsonb, tokens integer,
               tokens_in integer, tokens_out integer, started_us bigint, text text)),
    u AS (
      UPDATE agent.runs r
         SET tokens_total = r.tokens_total + x.tokens_in + x.tokens_out,
             tokens_in = r.tokens_in + x.tokens_in, tokens_out = r.tokens_out + x.tokens_out,
             model = coalesce(x.model, r.model),
             -- the live progress of the step (agent._teams_steps_inserted then finds it done)
             current_step = 'llm' || coalesce(':' || x.model, ''),
             preview = agent._teams_step_preview('llm', x.step_output),
             status = CASE WHEN r.token_budget IS NOT NULL
                                AND r.tokens_total + x.tokens_in + x.tokens_out >= r.token_budget THEN 'budget_exceeded'
                           WHEN x.waits THEN r.status ELSE 'succeeded' END,
             output = CASE WHEN r.token_budget IS NOT NULL
                                AND r.tokens_total + x.tokens_in + x.tokens_out >= r.token_budget THEN r.output
                           WHEN x.waits THEN r.output ELSE jsonb_build_object('text', coalesce(x.text, '')) END,
             error = CASE WHEN r.token_budget IS NOT NULL
                               AND r.tokens_total + x.tokens_in + x.tokens_out >= r.token_budget
                            THEN format('token budget of %s exhausted (%s used)', r.token_budget,
                                        r.tokens_total + x.tokens_in + x.tokens_out)
                          WHEN x.waits THEN r.error END,
             finished_at = CASE WHEN r.token_budget IS NOT NULL
                                     AND r.tokens_total + x.tokens_in + x.tokens_out >= r.token_budget THEN now()
                                WHEN x.waits THEN r.finished_at ELSE now() END,
             lease_until = CASE WHEN r.token_budget IS NOT NULL
                                     AND r.tokens_total + x.tokens_in + x.tokens_out >= r.token_budget THEN NULL
                                WHEN x.waits THEN now() + make_interval(secs => p_lease_secs) END
        FROM x
       WHERE r.id = ANY (v_all) AND r.id = x.run_id
         AND r.status = 'running' AND r.parent_run_id IS NULL AND r.root_run_id = r.id
         AND NOT EXISTS (SELECT 1 FROM agent.runs c
                          WHERE c.parent_run_id = r.id AND agent._run_is_active(c.status))
      RETURNING r AS run, r.status <> 'running' AS ended),
    s AS (
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, tokens,
                                   started_at, finished_at)
      SELECT (u.run).workspace_id, x.run_id,
             coalesce((SELECT max(st.seq) FROM agent.run_steps st WHERE st.run_id = x.run_id), 0) + 1,
             'llm', x.model, x.step_input, x.step_output, 'ok', x.tokens,
             timestamptz 'epoch' + x.started_us * interval '1 microsecond', clock_timestamp()
        FROM u JOIN x ON x.run_id = (u.run).id
       ORDER BY x.run_id),
    d AS (
      DELETE FROM agent.run_state st USING u WHERE st.run_id = (u.run).id AND u.ended)
    SELECT array_agg(u.run ORDER BY (u.run).id) FILTER (WHERE u.ended),
           array_agg(CASE WHEN u.ended THEN 'finished' ELSE 'continue' END ORDER BY (u.run).id),
           array_agg((u.run).id ORDER BY (u.run).id)
      INTO v_rows, v_out, v_ids
      FROM u;

  IF v_rows IS NOT NULL THEN
    PERFORM agent._finish_runs_effects(v_rows);
  END IF;

  -- the others: no longer running (gone), or left to the one-reply path (single)
  RETURN QUERY
  SELECT x.run_id,
         coalesce(v_out[array_position(v_ids, x.run_id)],
                  CASE WHEN (SELECT r.status FROM agent.runs r WHERE r.id = x.run_id) IS DISTINCT FROM 'running'
                       THEN 'gone' ELSE 'single' END)
    FROM jsonb_to_recordset(p_replies) AS x(run_id bigint);
END
$$;
REVOKE ALL ON FUNCTION agent._worker_finish_replies(jsonb, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_finish_replies(jsonb, integer) IS
  'Internal (worker): records a batch of final answers [{"run_id","model","input","output","tokens","tokens_in","tokens_out","started_us" (microseconds since 1970),"text"}] in one transaction: llm step, usage, end of the run (succeeded, or budget_exceeded) and its state, for root runs still running without active children; returns each run''s outcome: finished, continue (messages wait: lease renewed, the worker delivers them), gone (no longer running) or single (the worker records it alone).';

-- label and preview of a step (both triggers below)
CREATE FUNCTION agent._teams_step_preview(p_kind text, p_output jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
  -- (plpgsql: the common cases are evaluated without planning a query)
  IF p_kind = 'llm' AND coalesce(p_output->>'text', '') <> '' THEN
    RETURN left(p_output->>'text', 200);
  ELSIF p_kind = 'llm' AND jsonb_typeof(p_output->'tool_calls') = 'array' THEN
    RETURN left('calls ' || (SELECT string_agg(c->>'name', ', ') FROM jsonb_array_elements(p_output->'tool_calls') c), 200);
  END IF;
  RETURN left(p_output::text, 200);
END
$$;
COMMENT ON FUNCTION agent._teams_step_preview(text, jsonb) IS
  'Internal: the preview of a step (runs.preview): the model''s text, "calls <tool names>" for a tool-calling turn, or the step''s output; at most 200 characters.';

CREATE OR REPLACE FUNCTION agent._teams_step_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  v_label   text := NEW.kind || coalesce(':' || NEW.name, '');
  v_root    bigint;
BEGIN
  UPDATE agent.runs x SET current_step = v_label, preview = agent._teams_step_preview(NEW.kind, NEW.output)
   WHERE x.id = NEW.run_id RETURNING coalesce(x.root_run_id, x.id) INTO v_root;
  PERFORM pg_notify('agent_run_steps',
                    json_build_object('run_id', NEW.run_id, 'root_run_id', v_root, 'seq', NEW.seq,
                                      'step', v_label, 'status', NEW.status)::text);
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._teams_step_changed() IS
  'Trigger on agent.run_steps (UPDATE of status, output; new steps: agent._teams_steps_inserted): writes runs.current_step and runs.preview and sends NOTIFY agent_run_steps {run_id, root_run_id, seq, step, status}.';

DROP TRIGGER run_steps_progress ON agent.run_steps;

CREATE TRIGGER run_steps_progress AFTER UPDATE OF status, output ON agent.run_steps
  FOR EACH ROW EXECUTE FUNCTION agent._teams_step_changed();

-- New steps: the same per statement, so that the worker's batch of steps
-- (one INSERT for many runs) costs two statements, not two per step.
CREATE FUNCTION agent._teams_steps_inserted() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  v record;
BEGIN
  -- each run shows its latest new step (as the row trigger would leave it);
  -- a run that shows it already (the worker's batch writes it with its own
  -- update) is left alone.  Key lookups only, whatever the table's size.
  FOR v IN
    SELECT l.* FROM (SELECT DISTINCT ON (s.run_id) s.run_id, s.kind || coalesce(':' || s.name, '') AS label,
                            agent._teams_step_preview(s.kind, s.output) AS preview
                       FROM new_steps s ORDER BY s.run_id, s.seq DESC) l
     WHERE (SELECT x.current_step IS DISTINCT FROM l.label OR x.preview IS DISTINCT FROM l.preview
              FROM agent.runs x WHERE x.id = l.run_id)
  LOOP
    UPDATE agent.runs x SET current_step = v.label, preview = v.preview WHERE x.id = v.run_id;
  END LOOP;
  -- one notification per step, in insertion order
  PERFORM pg_notify('agent_run_steps',
                    json_build_object('run_id', n.run_id,
                                      'root_run_id', (SELECT coalesce(x.root_run_id, x.id) FROM agent.runs x WHERE x.id = n.run_id),
                                      'seq', n.seq, 'step', n.kind || coalesce(':' || n.name, ''),
                                      'status', n.status)::text)
     FROM new_steps n;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._teams_steps_inserted() IS
  'Statement trigger on agent.run_steps (INSERT): what agent._teams_step_changed does for each new step, set-based: current_step and preview of each run from its latest new step, NOTIFY agent_run_steps per step.';
CREATE TRIGGER run_steps_progress_insert AFTER INSERT ON agent.run_steps
  REFERENCING NEW TABLE AS new_steps
  FOR EACH STATEMENT EXECUTE FUNCTION agent._teams_steps_inserted();

-- ===========================================================================
-- The hourly cap of agent._enqueue_run counted once per transaction and agent
-- ===========================================================================

CREATE OR REPLACE FUNCTION agent._enqueue_run(p_agent_id bigint, p_regime text, p_origin text,
                                   p_input jsonb DEFAULT '{}',
                                   p_trigger_id bigint DEFAULT NULL,
                                   p_requested_by text DEFAULT NULL,
                                   p_parent_run_id bigint DEFAULT NULL,
                                   p_token_budget bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  a        agent.agents%ROWTYPE;
  p        agent.runs%ROWTYPE;
  v_cap    integer;
  v_recent bigint;
  v_status text := 'queued';
  v_error  text;
  v_id     bigint;
  v_memo   text;
BEGIN
  SELECT * INTO a FROM agent.agents WHERE id = p_agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF p_parent_run_id IS NOT NULL THEN
    SELECT * INTO p FROM agent.runs WHERE id = p_parent_run_id;
  END IF;
  IF p_regime = 'autonomous' THEN
    v_cap := coalesce(a.hourly_run_cap, current_setting('pg_agents.hourly_run_cap')::integer);
    -- one queue decision at a time per agent, so that concurrent events respect the cap
    PERFORM pg_advisory_xact_lock(hashtext('pg_agents.cap'), hashtext(p_agent_id::text));
    -- Counting stops at the cap: the check costs at most cap rows.  While this
    -- transaction holds the lock no other one queues for the agent, and now()
    -- does not move, so the count only grows by the runs queued here: it is
    -- counted once per transaction and then carried in a transaction-local
    -- setting (undone with a rolled-back subtransaction, like the rows).
    v_memo := 'pg_agents_cap.a' || p_agent_id;
    v_recent := nullif(current_setting(v_memo, true), '')::bigint;
    IF v_recent IS NULL THEN
      SELECT count(*) INTO v_recent FROM (
        SELECT 1 FROM agent.runs r
         WHERE r.agent_id = p_agent_id AND r.regime = 'autonomous'
           AND r.created_at > now() - interval '1 hour' AND r.status <> 'budget_exceeded'
         LIMIT v_cap) s;
    END IF;
    IF v_recent >= v_cap THEN
      v_status := 'budget_exceeded';
      v_error := format('hourly run cap of %s reached', v_cap);
    END IF;
  END IF;
  -- the id is taken first so that a root run is its own root in one INSERT
  v_id := nextval(pg_get_serial_sequence('agent.runs', 'id'));
  INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, parent_run_id, root_run_id, depth, regime,
                          origin, requested_by, status, priority, input, error, token_budget, finished_at)
  VALUES (v_id, a.workspace_id, p_agent_id, p_trigger_id, p_parent_run_id, coalesce(p.root_run_id, v_id),
          coalesce(p.depth + 1, 0), p_regime, p_origin, p_requested_by, v_status,
          CASE WHEN p_regime = 'manual' THEN 10 ELSE 0 END,
          coalesce(p_input, '{}'), v_error, p_token_budget,
          CASE WHEN v_status <> 'queued' THEN now() END);
  IF v_memo IS NOT NULL THEN
    PERFORM set_config(v_memo, (v_recent + CASE WHEN v_status = 'queued' THEN 1 ELSE 0 END)::text, true);
  END IF;
  PERFORM pg_notify('agent_runs', json_build_object('run_id', v_id, 'agent_id', p_agent_id,
                                                    'status', v_status)::text);
  IF v_status = 'queued' THEN
    PERFORM agent._request_wake();  -- sets the worker's latch at commit
  END IF;
  RETURN v_id;
END
$$;
