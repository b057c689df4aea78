-- pg_agents: run bookkeeping, delegation and approvals (docs/runs.md, docs/delegation.md).
--
-- Locking rule: every function that touches more than one run of a
-- delegation tree first locks the tree's root run (FOR UPDATE), then the runs
-- it changes.  Work on one tree is serialised, work on different trees runs
-- in parallel, and no two functions take run locks in opposite orders.
-- agent.claim_runs only locks queued runs, one by one, with SKIP LOCKED.
-- (A run whose root_run_id names no existing run is its own root.)
--
-- Token accounting: a run's effective budget is its token_budget, or its
-- agent's default_token_budget when NULL.  tokens_total is the run's own
-- usage plus all its descendants'.  tokens_reserved is the part of its active
-- children's budgets they have not used yet; the remaining envelope of a run
-- is  budget - tokens_total - tokens_reserved.

-- Levels come from the access module (sql/src/100_access.sql): agent.user_can
-- and agent.activity_scope.

-- ---------------------------------------------------------------------------
-- Internal helpers
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._run_is_active(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT $1 IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children') $$;
COMMENT ON FUNCTION agent._run_is_active(text) IS
  'Internal: whether a run status is not terminal (queued, running, waiting_approval, waiting_input, waiting_children).';

CREATE FUNCTION agent._runs_notify(p_run_id bigint, p_agent_id bigint, p_status text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM pg_notify('agent_runs', json_build_object('run_id', p_run_id, 'agent_id', p_agent_id,
                                                    'status', p_status)::text);
  IF p_status = 'queued' THEN
    PERFORM agent._request_wake();  -- the worker's latch is set at commit (sql/src/400_events.sql)
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._runs_notify(bigint, bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._runs_notify(bigint, bigint, text) IS
  'Internal: NOTIFY agent_runs with {"run_id","agent_id","status"} (delivered at commit); a re-queued run also wakes the worker at commit.';

-- Locks the root run of a tree (the tree mutex).  Returns false when
-- p_skip_locked and the root is locked by someone else.
CREATE FUNCTION agent._lock_tree(p_root_run_id bigint, p_skip_locked boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the workspace of the tree (Citus routes by it): the session's, or, for a
  -- session bound to none (the worker, maintenance) or one working on
  -- another workspace's run (agent.tick), the root run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_root_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_root_run_id;
  END IF;
  IF p_skip_locked THEN
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_root_run_id FOR UPDATE SKIP LOCKED;
    RETURN FOUND;
  END IF;
  PERFORM 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_root_run_id FOR UPDATE;
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION agent._lock_tree(bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._lock_tree(bigint, boolean) IS
  'Internal: locks the root run of a delegation tree (every multi-run change takes it first).';

-- Looks a run up and locks its tree; raises 42704 for an unknown run.
CREATE FUNCTION agent._lock_run(p_run_id bigint) RETURNS agent.runs
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws   text := agent._session_workspace();
  v_root bigint;
  r      agent.runs%ROWTYPE;
BEGIN
  IF p_run_id IS NULL THEN
    RAISE EXCEPTION 'run id must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace (the worker): the run's own
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  -- every statement names the workspace (Citus routes by it; the tree is in one)
  SELECT coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.workspace_id = v_ws AND rt.id = x.root_run_id), x.id)
    INTO v_root
    FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'undefined_object';
  END IF;
  -- the tree lock (agent._lock_tree), then the run
  PERFORM 1 FROM agent.runs rt WHERE rt.workspace_id = v_ws AND rt.id = v_root FOR UPDATE;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id FOR UPDATE;
  RETURN r;
END
$$;
REVOKE ALL ON FUNCTION agent._lock_run(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._lock_run(bigint) IS
  'Internal: locks the tree of a run, then the run, and returns it (42704 when unknown or of another workspace than the session''s).';

-- Appends a step to a run (the caller holds the tree lock).
CREATE FUNCTION agent._runs_add_step(p_run_id bigint, p_kind text, p_name text, p_input jsonb,
                                     p_output jsonb DEFAULT NULL, p_status text DEFAULT NULL,
                                     p_finished boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
  -- the run's workspace (Citus routes by it): the session's, else the run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_at timestamptz := clock_timestamp();
  v_seq integer;
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  -- the next seq read first, then the row as values (Citus plans no
  -- INSERT ... SELECT with a correlated subquery; the time is a value, as
  -- Citus refuses volatile functions in CASE)
  IF NOT EXISTS (SELECT 1 FROM agent.runs r WHERE r.workspace_id = v_ws AND r.id = p_run_id) THEN
    RETURN NULL;
  END IF;
  SELECT coalesce(max(s.seq), 0) + 1 INTO v_seq FROM agent.run_steps s WHERE s.workspace_id = v_ws AND s.run_id = p_run_id;
  INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, finished_at)
  VALUES (v_ws, p_run_id, v_seq, p_kind, p_name, p_input, p_output, p_status, CASE WHEN p_finished THEN v_at END)
  RETURNING id INTO v_id;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._runs_add_step(bigint, text, text, jsonb, jsonb, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._runs_add_step(bigint, text, text, jsonb, jsonb, text, boolean) IS
  'Internal: appends a step (next seq) to a run whose tree the caller has locked.';

CREATE FUNCTION agent._audit_run(p_action text, p_run agent.runs, p_status text DEFAULT 'success',
                                 p_inputs jsonb DEFAULT NULL, p_summary text DEFAULT NULL,
                                 p_error_code text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_owner text;
BEGIN
  IF NOT coalesce(current_setting('pg_agents.audit_enabled', true)::boolean, true) THEN
    RETURN;
  END IF;
  SELECT a.owner_id INTO v_owner FROM agent.agents a
   WHERE a.workspace_id = p_run.workspace_id AND a.id = p_run.agent_id;
  PERFORM agent._audit_event(p_action, p_status, 'run', p_run.id::text, p_run.workspace_id, v_owner,
                             jsonb_build_object('agent_id', p_run.agent_id) || coalesce(p_inputs, '{}'),
                             p_summary, p_error_code);
END
$$;
REVOKE ALL ON FUNCTION agent._audit_run(text, agent.runs, text, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._audit_run(text, agent.runs, text, jsonb, text, text) IS
  'Internal: audits a run state change through agent._audit_event (target_type run).';

-- ---------------------------------------------------------------------------
-- Ending a run (the one path: finish_run, cancel_run, deny, tick)
-- ---------------------------------------------------------------------------

-- The end of runs once their row is updated (status, output, error,
-- finished_at): pending approvals expired, the trigger's last status, audit
-- row, notification.  agent._finish_run calls it for one run; the worker
-- (agent._worker_finish_replies) for a batch of runs, in id order.
CREATE FUNCTION agent._finish_runs_effects(p_rows agent.runs[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws     text;
  v_rows   agent.runs[];
  v_aids   bigint[];
  v_owners text[];
BEGIN
  -- workspace by workspace (every statement names its workspace: Citus
  -- routes by it); a batch of the worker is mostly of one
  FOR v_ws IN SELECT DISTINCT u.workspace_id FROM unnest(p_rows) u ORDER BY 1 LOOP
    v_rows := CASE WHEN pg_catalog.cardinality(p_rows) = 1 THEN p_rows
                   ELSE ARRAY(SELECT u FROM unnest(p_rows) u WHERE u.workspace_id = v_ws ORDER BY u.id) END;

    -- pending approvals of an ended run can no longer be decided
    UPDATE agent.approvals SET status = 'expired', decided_at = now()
     WHERE workspace_id = v_ws AND run_id IN (SELECT u.id FROM unnest(v_rows) u) AND status = 'pending';

    -- the trigger keeps the last run's status and the first run's start (as one by one in id order)
    IF EXISTS (SELECT 1 FROM unnest(v_rows) u WHERE u.trigger_id IS NOT NULL) THEN
      UPDATE agent.triggers t
         SET last_status = l.status, last_error = l.error, last_run_at = coalesce(t.last_run_at, l.first_created)
        FROM (SELECT DISTINCT ON (u.trigger_id) u.trigger_id, u.status, u.error,
                     (SELECT u2.created_at FROM unnest(v_rows) u2
                       WHERE u2.trigger_id = u.trigger_id ORDER BY u2.id LIMIT 1) AS first_created
                FROM unnest(v_rows) u
               WHERE u.trigger_id IS NOT NULL
               ORDER BY u.trigger_id, u.id DESC) l
       WHERE t.workspace_id = v_ws AND t.id = l.trigger_id;
    END IF;

    -- one audit row (agent._audit_run) and one notification (agent._runs_notify
    -- of an ended run) per run, in id order; the owners read first, so that
    -- the statement that audits reads no distributed table (it runs here)
    SELECT array_agg(a.id), array_agg(a.owner_id) INTO v_aids, v_owners
      FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.id IN (SELECT u.agent_id FROM unnest(v_rows) u);
    PERFORM agent._audit_event('run.finish',
                               CASE WHEN u.status IN ('succeeded', 'cancelled') THEN 'success' ELSE 'error' END,
                               'run', u.id::text, u.workspace_id,
                               v_owners[array_position(v_aids, u.agent_id)],
                               jsonb_build_object('agent_id', u.agent_id, 'status', u.status, 'error', u.error,
                                                  'tokens_total', u.tokens_total),
                               format('run %s %s', u.id, u.status),
                               CASE WHEN u.status NOT IN ('succeeded', 'cancelled') THEN u.status END),
            pg_notify('agent_runs', json_build_object('run_id', u.id, 'agent_id', u.agent_id, 'status', u.status)::text)
       FROM unnest(v_rows) u;
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent._finish_runs_effects(agent.runs[]) FROM PUBLIC;
COMMENT ON FUNCTION agent._finish_runs_effects(agent.runs[]) IS
  'Internal: the end of runs whose row is updated (agent._finish_run, the worker''s batch): pending approvals expired, the trigger''s last status, error and first run time, one run.finish audit row and one agent_runs notification per run, in order.';

CREATE FUNCTION agent._finish_run(p_run_id bigint, p_status text, p_output jsonb, p_error text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r        agent.runs%ROWTYPE;
  p        agent.runs%ROWTYPE;
  v_budget bigint;
  v_child  bigint;
  v_unused bigint;
  v_at     timestamptz;
  -- the workspace of the tree, named by every statement (Citus routes by
  -- it): the session's, else (a session bound to none, or agent.tick on
  -- another workspace's run) the run's own
  v_ws     text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  -- the caller holds the tree lock
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id FOR UPDATE;
  IF NOT FOUND OR NOT agent._run_is_active(r.status) THEN
    RETURN false;
  END IF;
  UPDATE agent.runs x
     SET status = p_status, output = coalesce(p_output, x.output), error = p_error,
         finished_at = now(), lease_until = NULL
   WHERE x.workspace_id = v_ws AND x.id = p_run_id
  RETURNING * INTO r;

  -- children still at work are cancelled (deepest first, through recursion)
  FOR v_child IN SELECT c.id FROM agent.runs c
                  WHERE c.workspace_id = v_ws AND c.parent_run_id = p_run_id AND agent._run_is_active(c.status)
                  ORDER BY c.id
  LOOP
    PERFORM agent._finish_run(v_child, 'cancelled', NULL,
                              format('cancelled: parent run %s ended %s', p_run_id, p_status));
  END LOOP;

  IF r.parent_run_id IS NOT NULL THEN
    SELECT coalesce(r.token_budget, a.default_token_budget) INTO v_budget
      FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = r.agent_id;
    -- the unused part of the reservation goes back to the parent's envelope
    v_unused := greatest(0, v_budget - r.tokens_total);
    UPDATE agent.runs x SET tokens_reserved = greatest(0, x.tokens_reserved - v_unused)
     WHERE x.workspace_id = v_ws AND x.id = r.parent_run_id
    RETURNING * INTO p;
    -- the parent sees the child's end as the result of its delegate step
    -- (the time as a value: Citus refuses volatile functions in an UPDATE)
    v_at := clock_timestamp();
    UPDATE agent.run_steps s
       SET output = jsonb_build_object('child_run_id', r.id, 'agent_id', r.agent_id,
                                       'status', r.status, 'output', r.output, 'error', r.error,
                                       'tokens_total', r.tokens_total),
           status = CASE WHEN r.status = 'succeeded' THEN 'ok' ELSE 'error' END,
           finished_at = v_at
     WHERE s.workspace_id = v_ws AND s.run_id = r.parent_run_id AND s.kind = 'delegate'
       AND s.input ->> 'child_run_id' = r.id::text;
    -- a parent waiting for its children goes back to the queue when the last one ends
    IF p.status = 'waiting_children'
       AND NOT EXISTS (SELECT 1 FROM agent.runs c
                        WHERE c.workspace_id = v_ws AND c.parent_run_id = p.id AND agent._run_is_active(c.status)) THEN
      UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = v_ws AND x.id = p.id RETURNING * INTO p;
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



-- ---------------------------------------------------------------------------
-- Starting, claiming, leasing
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.start_run(agent_id bigint, requested_by text, input jsonb DEFAULT '{}',
                                regime text DEFAULT 'manual', origin text DEFAULT 'chat')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  a    agent.agents%ROWTYPE;
  v_id bigint;
  r    agent.runs%ROWTYPE;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws text := agent._session_workspace();
BEGIN
  IF regime IS NULL OR regime NOT IN ('manual', 'autonomous') THEN
    RAISE EXCEPTION 'invalid regime "%"', regime
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A regime is manual or autonomous.';
  END IF;
  IF origin IN ('delegation', 'rerun') THEN
    RAISE EXCEPTION 'origin "%" cannot be given to agent.start_run', origin
      USING ERRCODE = 'invalid_parameter_value',
            HINT = CASE origin WHEN 'delegation' THEN 'Use agent.delegate().' ELSE 'Use agent.rerun().' END;
  END IF;
  IF origin IS NULL
     OR (regime = 'manual' AND origin NOT IN ('chat', 'api', 'draft'))
     OR (regime = 'autonomous' AND origin NOT IN ('api', 'schedule', 'event', 'mention')) THEN
    RAISE EXCEPTION 'invalid origin "%" for the % regime', origin, regime
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A manual run comes from chat, api or draft; an autonomous run from api, schedule, event or mention.';
  END IF;
  IF input IS NOT NULL AND jsonb_typeof(input) <> 'object' THEN
    RAISE EXCEPTION 'run input must be a json object'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the agent's own
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF regime = 'manual' THEN
    IF requested_by IS NULL OR requested_by = '' THEN
      RAISE EXCEPTION 'a manual run needs the requesting user'
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'A manual run acts as the user who asked for it (requested_by).';
    END IF;
    IF NOT coalesce(agent.user_can(requested_by, agent_id, 'chat'), false) THEN
      RAISE EXCEPTION 'user "%" may not chat with agent %', requested_by, agent_id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A manual run requires the interact level or higher on the agent.';
    END IF;
  ELSIF a.status = 'suspended' THEN
    RAISE EXCEPTION 'agent % is suspended', agent_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'A suspended agent starts no autonomous run; chat still works.';
  END IF;
  v_id := agent._enqueue_run(agent_id, regime, origin, coalesce(input, '{}'), NULL, requested_by);
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = a.workspace_id AND x.id = v_id;
  PERFORM agent._audit_run('run.start', r, 'success',
                           jsonb_build_object('regime', regime, 'origin', origin, 'status', r.status),
                           format('run %s queued (%s, %s)', v_id, regime, origin));
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent.start_run(bigint, text, jsonb, text, text) IS
  'Queues a run of an agent: manual runs (chat, api, draft) require the chat level of requested_by; autonomous runs (api, schedule, event, mention) are refused for a suspended agent. Returns the run id.';

-- Queue marks (docs/runs.md, "The queue and long transactions").  Runs are
-- queued in id order, so the index entries of claimed runs pile up at the
-- low end of each workspace's queue of one priority; while a snapshot held
-- open elsewhere keeps them, a claim that reads the queue from its head
-- walks them all.  agent.run_queue_marks keeps, per workspace and
-- priority, an id below which that queue has no queued run: a claim starts
-- its scan there (one B-tree descent), past the dead prefix.
--
-- Raising a mark must never pass a run that is or may become queued:
--   - a run queued again below its mark or candidate (lease recovery,
--     resume, requeue, retry, an UPDATE by hand) is noted in
--     agent.run_queue_returns in the same transaction (trigger
--     runs_queue_mark, agent._queue_mark_lower): a claim reads its queue
--     from the lowest of the mark and the runs noted there, and a step
--     folds them into the mark (an INSERT: the trigger never waits for a
--     claimer);
--   - a mark is raised in two steps (agent._queue_advance): first a
--     candidate is taken (the first queued run in view, or the next run id
--     when none is), with the transactions that hold agent.runs or its id
--     sequence open for writing at that moment (pg_locks: a transaction
--     that took a run id, or claimed runs that may come back if it rolls
--     back, holds RowExclusiveLock on one of them until it ends); the mark
--     becomes the candidate (or the first queued run then in view, if
--     lower) only once all of those have ended, so that what they queued
--     is in view by then.
-- A claim takes a step when it has walked about 256 ids past the mark or
-- its candidate, so the marks are written once per 256 runs or so (each
-- write a row version that a held snapshot keeps too).
CREATE TABLE agent.run_queue_marks (
    workspace_id text NOT NULL,
    priority     smallint NOT NULL,
    low_id       bigint NOT NULL,
    next_id      bigint,
    next_wait    text[],
    PRIMARY KEY (workspace_id, priority)
);
COMMENT ON TABLE agent.run_queue_marks IS
  'Internal (agent.claim_runs): per workspace and priority, an id below which no run of that queue is queued, so that a claim starts its scan past the entries of claimed runs that a held snapshot keeps. Raised in two steps by agent._queue_advance, lowered by the trigger runs_queue_mark when a run is queued again.';
COMMENT ON COLUMN agent.run_queue_marks.workspace_id IS 'Workspace of the queue.';
COMMENT ON COLUMN agent.run_queue_marks.priority IS 'Priority of the queue.';
COMMENT ON COLUMN agent.run_queue_marks.low_id IS 'No run of this workspace and priority with a smaller id is queued.';
COMMENT ON COLUMN agent.run_queue_marks.next_id IS 'Candidate for low_id, taken when the transactions of next_wait were open.';
COMMENT ON COLUMN agent.run_queue_marks.next_wait IS 'Virtual transaction ids (pg_locks.virtualtransaction) that held agent.runs or its id sequence for writing when next_id was taken; next_id becomes low_id once they have all ended.';

CREATE TABLE agent.run_queue_returns (
    workspace_id text NOT NULL,
    priority     smallint NOT NULL,
    run_id       bigint NOT NULL
);
CREATE INDEX run_queue_returns_idx ON agent.run_queue_returns (workspace_id, priority, run_id);
COMMENT ON TABLE agent.run_queue_returns IS
  'Internal (agent.claim_runs): runs queued again below the mark (or candidate) of their queue in agent.run_queue_marks; a claim reads the queue from the lowest of the mark and these, and agent._queue_advance folds them into the mark.';
COMMENT ON COLUMN agent.run_queue_returns.workspace_id IS 'Workspace of the queue.';
COMMENT ON COLUMN agent.run_queue_returns.priority IS 'Priority of the queue.';
COMMENT ON COLUMN agent.run_queue_returns.run_id IS 'The run queued again.';

-- A run queued again below its queue's mark or candidate: noted for the
-- claims (an INSERT, which waits for no one).  A step that takes a new
-- candidate while this transaction is open waits for it (it holds
-- agent.runs for writing); one already taken at or below this run's id, or
-- a mark raised to at most that candidate, never passes the run.
CREATE FUNCTION agent._queue_mark_lower() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM agent.run_queue_marks m
              WHERE m.workspace_id = NEW.workspace_id AND m.priority = NEW.priority
                AND (m.low_id > NEW.id OR m.next_id > NEW.id)) THEN
    INSERT INTO agent.run_queue_returns (workspace_id, priority, run_id) VALUES (NEW.workspace_id, NEW.priority, NEW.id);
  END IF;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION agent._queue_mark_lower() FROM PUBLIC;
COMMENT ON FUNCTION agent._queue_mark_lower() IS
  'Internal (trigger runs_queue_mark on agent.runs): a run that becomes queued again (or changes queue) below the mark or candidate of its workspace and priority is noted in agent.run_queue_returns, where the claims find it.';
CREATE TRIGGER runs_queue_mark AFTER UPDATE OF status, priority, workspace_id ON agent.runs
  FOR EACH ROW WHEN (NEW.status = 'queued' AND (OLD.status <> 'queued' OR OLD.priority <> NEW.priority
                                                OR OLD.workspace_id <> NEW.workspace_id))
  EXECUTE FUNCTION agent._queue_mark_lower();

-- One step of the marks of a workspace (see above); p_prios: priorities of
-- runs just claimed, whose marks are made if missing.  A mark locked by
-- another transaction is left alone.
CREATE FUNCTION agent._queue_advance(p_ws text, p_prios smallint[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_bitmapscan = off
SET jit = off
AS $$
DECLARE
  m      record;
  v_seq  regclass := pg_catalog.pg_get_serial_sequence('agent.runs', 'id')::regclass;
  v_low  bigint;
  v_next bigint;
  v_last bigint;
  v_wait text[];
  v_ret  bigint;
  v_seen tid[];
BEGIN
  -- (only those not in view: an INSERT that meets a mark another step is
  -- updating would wait for that step's transaction)
  INSERT INTO agent.run_queue_marks (workspace_id, priority, low_id)
  SELECT p_ws, p, '-9223372036854775808'::bigint FROM pg_catalog.unnest(p_prios) p
   WHERE NOT EXISTS (SELECT 1 FROM agent.run_queue_marks k WHERE k.workspace_id = p_ws AND k.priority = p)
  ON CONFLICT DO NOTHING;
  FOR m IN SELECT * FROM agent.run_queue_marks k WHERE k.workspace_id = p_ws
            ORDER BY k.priority FOR UPDATE SKIP LOCKED
  LOOP
    v_low := m.low_id;
    IF m.next_id IS NOT NULL THEN
      -- the candidate stands once the writers open when it was taken ended
      CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.virtualtransaction = ANY (m.next_wait));
      -- the runs noted as queued again, read before the queue below
      v_seen := ARRAY(SELECT r.ctid FROM agent.run_queue_returns r
                       WHERE r.workspace_id = p_ws AND r.priority = m.priority);
      v_ret := least(m.low_id, (SELECT pg_catalog.min(r.run_id) FROM agent.run_queue_returns r
                                 WHERE r.workspace_id = p_ws AND r.priority = m.priority AND r.ctid = ANY (v_seen)));
      v_low := m.next_id;
      SELECT q.id INTO v_next FROM agent.runs q
       WHERE q.status = 'queued' AND q.workspace_id = p_ws AND q.priority = m.priority AND q.id >= v_ret
       ORDER BY q.workspace_id, q.priority DESC, q.id LIMIT 1;
      IF v_next < v_low THEN
        v_low := v_next;
      END IF;
      -- those read above are in the new mark (queued: at or above it; or
      -- claimed since), as are any noted since at or above it; the others
      -- noted since stay for the claims
      DELETE FROM agent.run_queue_returns r
       WHERE r.workspace_id = p_ws AND r.priority = m.priority AND (r.ctid = ANY (v_seen) OR r.run_id >= v_low);
    END IF;
    -- a new candidate: the first queued run in view, or the next id
    SELECT q.id INTO v_next FROM agent.runs q
     WHERE q.status = 'queued' AND q.workspace_id = p_ws AND q.priority = m.priority AND q.id >= v_low
     ORDER BY q.workspace_id, q.priority DESC, q.id LIMIT 1;
    v_last := pg_catalog.pg_sequence_last_value(v_seq);
    v_next := least(coalesce(v_next, v_last + 1), v_last + 1);
    v_wait := NULL;
    IF v_next > v_low THEN
      -- after the reads above: whoever took a run id up to v_last, or
      -- claimed runs, and has not ended yet, holds one of these locks
      v_wait := ARRAY(SELECT DISTINCT l.virtualtransaction FROM pg_catalog.pg_locks l
                       WHERE l.locktype = 'relation' AND l.relation IN ('agent.runs'::regclass, v_seq)
                         AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                            WHERE d.datname = pg_catalog.current_database())
                         AND l.mode IN ('RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock',
                                        'AccessExclusiveLock'));
    ELSE
      v_next := NULL;
    END IF;
    IF (v_low, v_next) IS DISTINCT FROM (m.low_id, m.next_id) THEN
      UPDATE agent.run_queue_marks k SET low_id = v_low, next_id = v_next, next_wait = v_wait
       WHERE k.workspace_id = m.workspace_id AND k.priority = m.priority;
    END IF;
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent._queue_advance(text, smallint[]) FROM PUBLIC;
COMMENT ON FUNCTION agent._queue_advance(text, smallint[]) IS
  'Internal (agent.claim_runs): one step of the queue marks of a workspace: a candidate whose writers have all ended becomes the mark (or the first queued run in view, if lower); then a new candidate (the first queued run in view, or the next run id) is taken with the virtual transactions holding agent.runs or its id sequence for writing. Makes the marks of p_prios if missing; skips marks locked by others.';

-- Fair claiming (docs/runs.md, "Fair claiming").  Each workspace has its
-- own queue, interactive runs first (priority), then oldest (id); a claim
-- serves the workspaces in turn:
--   - interactive runs before autonomous ones, whatever their workspace;
--   - then the run whose turn comes first: its workspace's runs running
--     now plus its place in the workspace's queue of that priority, so that
--     the workspace with the fewest runs in flight is served first and a
--     claim takes every workspace's next run before anyone's second;
--   - then the oldest.
-- The lone run of a workspace with nothing running waits only for
-- interactive runs and for the older next runs of other workspaces with
-- nothing running (one each), never behind a backlog.  pg_agents.max_runs_per_workspace (0: no cap) caps the runs
-- of a workspace that are running (waiting runs hold no slot): a workspace
-- at its cap is skipped, not waited for.
--
-- A session bound to a workspace (pg_agents.workspace) claims only that
-- workspace's runs.
--
-- When one workspace has queued runs, its queue is claimed in one statement
-- (interactive first, then oldest, LIMIT n FOR UPDATE SKIP LOCKED).  With
-- several, the claim runs in passes.  One pass:
--   1. the workspaces with queued runs, by a skip scan of runs_queue_ws_idx
--      (one index descent per workspace, however many runs each has queued),
--      and how many runs each has running (runs_lease_idx);
--   2. the first k queued runs of each workspace with room, k = n - W + 1
--      for W such workspaces (at least 1; less when the cap leaves less
--      room): never more than that from one workspace in one claim, and
--      n candidates whenever n runs can be claimed;
--   3. the candidates in that order, each locked by primary key with SKIP
--      LOCKED until n are locked, and claimed.
-- A candidate locked by a concurrent claimer (or claimed by one since the
-- candidates were read) is skipped: when a pass ends short because of that,
-- another pass runs without those candidates, so that a claim never comes
-- back short while claimable runs remain (each such pass excludes at least
-- one more run).  With the cap on, claims are serialised (the row of
-- agent.locks of purpose claim, locked until the transaction ends) so that
-- two claimers never both fill the same room; the running runs are then
-- counted by a statement that starts after the lock.
CREATE FUNCTION agent.claim_runs(n int) RETURNS SETOF agent.runs
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
ROWS 16   -- a claim returns a few runs: the worker's join on it stays a nested loop
SET search_path = pg_catalog, pg_temp
-- the first runs of a workspace are read in index order and no further: a
-- bitmap scan (chosen while the LIMIT is unknown to the plan) read all of
-- a workspace's queued runs at each claim
SET enable_bitmapscan = off
-- and the cost estimates of the plan, inflated by that unknown LIMIT, must
-- not make it JIT-compiled at every claim (40 ms for a claim of 1 ms)
SET jit = off
AS $$
DECLARE
  v_lease interval := pg_catalog.current_setting('pg_agents.run_lease')::interval;
  -- now() as a value (Citus refuses volatile functions in COALESCE or CASE)
  v_now   timestamptz := pg_catalog.now();
  v_cap   integer := coalesce(nullif(pg_catalog.current_setting('pg_agents.max_runs_per_workspace', true), '')::integer, 0);
  -- the tenant boundary: a session bound to a workspace claims only its
  -- runs (42501 for a non-superuser session bound to none); a superuser
  -- session that sets none, such as the worker's, claims for all
  v_ws    text := agent._session_workspace();
  v_skip  bigint[] := '{}';
  v_rows  agent.runs[] := '{}';
  v_pass  agent.runs[];
  v_cand  bigint[];
  v_more  boolean;
  v_want  integer;
  v_one   text;
  v_room  integer;
  -- the queue marks of a one-workspace claim: priorities, marks and
  -- candidates (highest priority first), and the scan's segments
  v_mp    smallint[];
  v_ml    bigint[];
  v_mn    bigint[];
  v_mk    bigint[];
  v_plo   integer[] := '{}';
  v_phi   integer[] := '{}';
  v_low   bigint[] := '{}';
  v_top   integer := 32767;
  -- a claim of several workspaces: the workspaces with queued runs (and
  -- with room), their runs running, the candidates (workspace, id,
  -- priority, turn) and the ones tried this pass, in the fair order
  v_dist  boolean;
  v_wss   text[];
  v_wrun  integer[];
  v_wroom integer[];
  v_k     integer;
  v_x     text;
  v_r     integer;
  v_cw    text[];
  v_cid   bigint[];
  v_cpri  smallint[];
  v_cturn bigint[];
  v_try   bigint[];
  v_tw    text[];
  v_got   agent.runs[];
  v_aids  bigint[];
  v_owners text[];
  -- the head walk of a claim of many workspaces: the workspaces with runs
  -- running and their count, the walk's length, and how many of the heads
  -- met are of workspaces with none running
  v_sw    text[];
  v_sn    integer[];
  v_lim   integer;
  v_hn    integer;
BEGIN
  IF n IS NULL OR n < 1 THEN
    RAISE EXCEPTION 'number of runs to claim must be positive'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_cap > 0 THEN
    -- (the row of agent.locks the install made; agent._lock makes it again)
    PERFORM FROM agent.locks l WHERE l.purpose = 'claim' AND l.key = '' FOR UPDATE;
    IF NOT FOUND THEN
      PERFORM agent._lock('claim');
    END IF;
  END IF;

  -- One workspace with queued runs (or a session bound to one): its own
  -- queue order is the fair order, claimed as the first-come queue was, in
  -- one statement (the whole machinery below costs about 0.3 ms a claim).
  v_one := v_ws;
  IF v_one IS NULL THEN
    -- The workspaces of the agents (a small table, rarely updated) hold
    -- those of the queued runs: a database of one workspace claims with no
    -- probe of the queue.  (A probe of the queue walks the index entries of
    -- the runs claimed since VACUUM last ran, dead ones that a snapshot held
    -- open elsewhere keeps; the claim below walks them once more.)
    SELECT a.workspace_id INTO v_one FROM agent.agents a ORDER BY a.workspace_id LIMIT 1;
    IF v_one IS NULL THEN
      RETURN;
    END IF;
    IF (SELECT a.workspace_id FROM agent.agents a
         WHERE a.workspace_id > v_one ORDER BY a.workspace_id LIMIT 1) IS NOT NULL THEN
      SELECT q.workspace_id INTO v_one FROM agent.runs q
       WHERE q.status = 'queued' ORDER BY q.workspace_id LIMIT 1;
      IF v_one IS NULL THEN
        RETURN;
      END IF;
      -- (ORDER BY ... LIMIT 1, as the skip scan below: as an EXISTS, the
      -- generic plan scanned the whole table)
      IF (SELECT q.workspace_id FROM agent.runs q
           WHERE q.status = 'queued' AND q.workspace_id > v_one ORDER BY q.workspace_id LIMIT 1) IS NOT NULL THEN
        v_one := NULL;
      END IF;
    END IF;
  END IF;
  IF v_one IS NOT NULL THEN
    v_room := n;
    IF v_cap > 0 THEN
      -- a statement after the lock: the runs of the claimer before are seen running
      SELECT v_cap - pg_catalog.count(*)::integer INTO v_room FROM agent.runs r
       WHERE r.status = 'running' AND r.workspace_id = v_one;
      IF v_room <= 0 THEN
        RETURN;
      END IF;
    END IF;
    -- The queue in segments, highest priority first: each priority with a
    -- mark from its mark on (past the entries of its claimed runs), the
    -- priorities between them from their start.
    -- (a mark's scan starts at the lowest of the mark and its runs queued again)
    SELECT pg_catalog.array_agg(m.priority ORDER BY m.priority DESC), pg_catalog.array_agg(m.low ORDER BY m.priority DESC),
           pg_catalog.array_agg(m.next ORDER BY m.priority DESC), pg_catalog.array_agg(m.low_id ORDER BY m.priority DESC)
      INTO v_mp, v_ml, v_mn, v_mk
      FROM (SELECT k.priority, k.low_id, coalesce(k.next_id, k.low_id) AS next,
                   least(k.low_id, (SELECT pg_catalog.min(r.run_id) FROM agent.run_queue_returns r
                                     WHERE r.workspace_id = v_one AND r.priority = k.priority)) AS low
              FROM agent.run_queue_marks k WHERE k.workspace_id = v_one) m;
    FOR i IN 1 .. coalesce(pg_catalog.cardinality(v_mp), 0) LOOP
      IF v_mp[i] < v_top THEN
        v_plo := v_plo || (v_mp[i] + 1); v_phi := v_phi || v_top; v_low := v_low || '-9223372036854775808'::bigint;
      END IF;
      v_plo := v_plo || v_mp[i]::integer; v_phi := v_phi || v_mp[i]::integer; v_low := v_low || v_ml[i];
      v_top := v_mp[i] - 1;
    END LOOP;
    IF v_top >= -32768 THEN
      v_plo := v_plo || -32768; v_phi := v_phi || v_top; v_low := v_low || '-9223372036854775808'::bigint;
    END IF;
    WITH c AS (
        -- the segments in order (a nested loop: each segment's runs until
        -- enough are locked, no further)
        SELECT l.id FROM ROWS FROM (pg_catalog.unnest(v_plo), pg_catalog.unnest(v_phi), pg_catalog.unnest(v_low)) WITH ORDINALITY s(plo, phi, low, ord)
         CROSS JOIN LATERAL (
               SELECT q.id FROM agent.runs q
                WHERE q.status = 'queued' AND q.workspace_id = v_one
                  AND q.priority BETWEEN s.plo AND s.phi AND q.id >= s.low
                  AND (SELECT a.deleted_at FROM agent.agents a WHERE a.workspace_id = v_one AND a.id = q.agent_id) IS NULL
                -- workspace_id first (constant here): the order of runs_queue_ws_idx,
                -- so that the plan never reads runs_queue_idx through the other
                -- workspaces' runs
                ORDER BY q.workspace_id, q.priority DESC, q.id
                LIMIT least(n, v_room)
                FOR UPDATE OF q SKIP LOCKED) l
         LIMIT least(n, v_room)
      ), u AS (
        UPDATE agent.runs x
           SET status = 'running', attempts = x.attempts + 1,
               started_at = coalesce(x.started_at, v_now), lease_until = v_now + v_lease
          FROM c
         WHERE x.workspace_id = v_one AND x.id = c.id   -- by primary key (see below)
        RETURNING x AS run
      )
    SELECT pg_catalog.array_agg(u.run ORDER BY (u.run).priority DESC, (u.run).id) INTO v_pass FROM u;
    v_rows := coalesce(v_pass, '{}');
    -- a step of the marks when this claim went 256 ids past a mark (or its
    -- candidate), or came back short with 256 ids taken since the lowest,
    -- or read a queue from below its mark (runs noted as queued again: the
    -- step folds them in once it can)
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(v_rows) r
                 LEFT JOIN ROWS FROM (pg_catalog.unnest(v_mp), pg_catalog.unnest(v_mn)) m(p, low) ON m.p = r.priority
                WHERE m.p IS NULL OR r.id - m.low >= 256)
       OR EXISTS (SELECT 1 FROM ROWS FROM (pg_catalog.unnest(v_ml), pg_catalog.unnest(v_mk)) x(l, k) WHERE x.l < x.k)
       OR (pg_catalog.cardinality(v_rows) < least(n, v_room) AND v_mp IS NOT NULL
           AND pg_catalog.pg_sequence_last_value(pg_catalog.pg_get_serial_sequence('agent.runs', 'id')::regclass)
               - (SELECT pg_catalog.min(x) FROM pg_catalog.unnest(v_mn) x) >= 256) THEN
      PERFORM agent._queue_advance(v_one, ARRAY(SELECT DISTINCT r.priority FROM pg_catalog.unnest(v_rows) r));
    END IF;
  END IF;

  -- Several workspaces (and a session bound to none): passes as described
  -- above, each statement on one workspace (Citus routes by it) but the
  -- workspaces' list and their running runs.
  WHILE v_one IS NULL LOOP
    v_want := n - pg_catalog.cardinality(v_rows);
    IF v_dist IS NULL THEN
      v_dist := pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
      IF v_dist THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
                                 WHERE p.logicalrelid = ''agent.runs''::pg_catalog.regclass)' INTO v_dist;
      END IF;
    END IF;
    -- The head walk (not on Citus): the queue in its global order (priority,
    -- then id: runs_queue_idx) from its start, each workspace's first run
    -- met being its head (its candidate at k = 1), until the walk has met
    -- v_want workspaces with no run running.  The v_want first candidates
    -- in the fair order are then all heads met: a workspace not met has its
    -- head after all of those (a lower priority; or the same, with turn 1
    -- and a larger id; or a later turn, behind v_want of turn 1), and there
    -- are at least v_want workspaces with queued runs (k = 1).  So the pass
    -- reads about v_want + (workspaces with runs running) heads, however
    -- many workspaces have queued runs, and claims them in one statement.
    -- A walk that meets fewer (a few workspaces' backlogs ahead of the
    -- others' heads, or few workspaces) falls back to the pass below.
    IF NOT v_dist THEN
      SELECT pg_catalog.array_agg(b.workspace_id), pg_catalog.array_agg(b.running)
        INTO v_sw, v_sn
        FROM (SELECT r.workspace_id, pg_catalog.count(*)::integer AS running FROM agent.runs r
               WHERE r.status = 'running' GROUP BY r.workspace_id) b;
      v_sw := coalesce(v_sw, '{}'); v_sn := coalesce(v_sn, '{}');
      v_lim := 4 * (v_want + pg_catalog.cardinality(v_sw)) + 64;
      -- (the runs of deleted agents dropped after the LIMIT, which then
      -- stays a prefix of the queue's order: before it, an unknown LIMIT
      -- made the plan test every queued run)
      WITH walk AS (
          SELECT q.workspace_id AS w, q.priority AS pri, q.id, q.agent_id FROM agent.runs q
           WHERE q.status = 'queued' AND q.id <> ALL (v_skip)
           ORDER BY q.priority DESC, q.id   -- runs_queue_idx
           LIMIT v_lim
        ), heads AS (
          SELECT DISTINCT ON (k.w) k.w, k.pri, k.id FROM walk k
           WHERE (SELECT a.deleted_at FROM agent.agents a WHERE a.workspace_id = k.w AND a.id = k.agent_id) IS NULL
           ORDER BY k.w, k.pri DESC, k.id
        ), cand AS (
          SELECT h.w, h.pri, h.id, coalesce(s.running, 0) AS running
            FROM heads h
            LEFT JOIN ROWS FROM (pg_catalog.unnest(v_sw), pg_catalog.unnest(v_sn)) s(w, running) ON s.w = h.w
           WHERE v_cap = 0 OR coalesce(s.running, 0) < v_cap
        )
      SELECT (SELECT pg_catalog.count(*)::integer FROM cand c WHERE c.running = 0),
             ARRAY(SELECT c.id FROM cand c ORDER BY c.pri DESC, c.running, c.id LIMIT v_want),
             ARRAY(SELECT DISTINCT c.w FROM cand c)
        INTO v_hn, v_try, v_tw;
      IF v_hn >= v_want THEN
        -- the candidates locked by primary key with SKIP LOCKED (the status
        -- re-checked on the newest version, as below) and claimed
        WITH c AS (
            SELECT q.id FROM agent.runs q
             WHERE q.workspace_id = ANY (v_tw) AND q.id = ANY (v_try) AND pg_catalog.texteq(q.status, 'queued')
             FOR UPDATE OF q SKIP LOCKED
          ), u AS (
          UPDATE agent.runs x
             SET status = 'running', attempts = x.attempts + 1,
                 started_at = coalesce(x.started_at, v_now), lease_until = v_now + v_lease
            FROM c
           WHERE x.id = c.id
          RETURNING x AS run
        )
        SELECT pg_catalog.array_agg(u.run ORDER BY pg_catalog.array_position(v_try, (u.run).id)) INTO v_got FROM u;
        v_rows := v_rows || coalesce(v_got, '{}');
        EXIT WHEN pg_catalog.cardinality(v_rows) >= n;
        -- some taken by concurrent claimers: look past them
        v_skip := v_skip || ARRAY(SELECT x FROM pg_catalog.unnest(v_try) x
                                   WHERE x <> ALL (ARRAY(SELECT p.id FROM pg_catalog.unnest(coalesce(v_got, '{}')) p)));
        CONTINUE;
      END IF;
    END IF;
    -- 1. the workspaces with queued runs: a skip scan of runs_queue_ws_idx
    -- (one index descent per workspace, however many runs each has queued);
    -- on Citus, where a recursive query of a distributed table is refused,
    -- each shard's own
    IF v_dist THEN
      v_wss := ARRAY(SELECT DISTINCT q.workspace_id FROM agent.runs q WHERE q.status = 'queued' ORDER BY 1);
    ELSE
      v_wss := ARRAY(
        WITH RECURSIVE ws(w) AS (
            SELECT (SELECT q.workspace_id FROM agent.runs q
                     WHERE q.status = 'queued' ORDER BY q.workspace_id LIMIT 1)
          UNION ALL
            SELECT (SELECT q.workspace_id FROM agent.runs q
                     WHERE q.status = 'queued' AND q.workspace_id > ws.w ORDER BY q.workspace_id LIMIT 1)
              FROM ws WHERE ws.w IS NOT NULL)
        SELECT ws.w FROM ws WHERE ws.w IS NOT NULL);
    END IF;
    EXIT WHEN pg_catalog.cardinality(v_wss) = 0;
    -- and how many runs each has running (runs_lease_idx; runs claimed by
    -- an earlier pass of this claim count too); those with room
    SELECT pg_catalog.array_agg(x.w ORDER BY x.w), pg_catalog.array_agg(x.running ORDER BY x.w),
           pg_catalog.array_agg(CASE WHEN v_cap > 0 THEN v_cap - x.running ELSE v_want END ORDER BY x.w)
      INTO v_wss, v_wrun, v_wroom
      FROM (SELECT w.w, coalesce(b.running, 0) AS running
              FROM pg_catalog.unnest(v_wss) w(w)
              LEFT JOIN (SELECT r.workspace_id, pg_catalog.count(*)::integer AS running FROM agent.runs r
                          WHERE r.status = 'running' AND r.workspace_id = ANY (v_wss)
                          GROUP BY r.workspace_id) b ON b.workspace_id = w.w) x
     WHERE v_cap = 0 OR x.running < v_cap;
    EXIT WHEN v_wss IS NULL;
    -- 2. the first k queued runs of each workspace with room, k = n - W + 1
    v_k := greatest(1, v_want - pg_catalog.cardinality(v_wss) + 1);
    v_cw := '{}'; v_cid := '{}'; v_cpri := '{}'; v_cturn := '{}'; v_more := false;
    FOR i IN 1 .. pg_catalog.cardinality(v_wss) LOOP
      v_x := v_wss[i];
      SELECT v_cw || pg_catalog.array_agg(v_x), v_cid || pg_catalog.array_agg(l.id ORDER BY l.priority DESC, l.id),
             v_cpri || pg_catalog.array_agg(l.priority ORDER BY l.priority DESC, l.id),
             v_cturn || pg_catalog.array_agg(l.turn ORDER BY l.priority DESC, l.id), pg_catalog.count(*)::integer
        INTO v_cw, v_cid, v_cpri, v_cturn, v_r
        FROM (SELECT q.id, q.priority,
                     v_wrun[i] + pg_catalog.row_number() OVER (PARTITION BY q.priority ORDER BY q.id) AS turn
                FROM (SELECT q.id, q.priority FROM agent.runs q
                       WHERE q.status = 'queued' AND q.workspace_id = v_x AND q.id <> ALL (v_skip)
                         AND (SELECT a.deleted_at FROM agent.agents a WHERE a.workspace_id = v_x AND a.id = q.agent_id) IS NULL
                       ORDER BY q.workspace_id, q.priority DESC, q.id   -- runs_queue_ws_idx (as above)
                       LIMIT least(v_k, v_wroom[i])) q) l;
      -- a workspace cut at k candidates (W also counts workspaces whose
      -- queued runs all belong to deleted agents: then k was too small)
      v_more := v_more OR (v_k < v_wroom[i] AND v_r >= v_k);
    END LOOP;
    EXIT WHEN pg_catalog.cardinality(v_cid) = 0;
    -- 3. the candidates in the fair order, the first v_want of them tried
    SELECT pg_catalog.array_agg(c.id ORDER BY c.ord), pg_catalog.array_agg(c.w ORDER BY c.ord)
      INTO v_try, v_tw
      FROM (SELECT c.id, c.w, pg_catalog.row_number() OVER (ORDER BY c.pri DESC, c.turn, c.id) AS ord
              FROM ROWS FROM (pg_catalog.unnest(v_cid), pg_catalog.unnest(v_cw), pg_catalog.unnest(v_cpri),
                              pg_catalog.unnest(v_cturn)) c(id, w, pri, turn)) c
     WHERE c.ord <= v_want;
    -- each workspace's tried candidates locked by primary key with SKIP
    -- LOCKED and claimed (texteq rather than =, so that the partial queue
    -- indexes, whose estimates lag behind bursts, never drive it; the
    -- status is re-checked on the newest version of a run that a concurrent
    -- claimer updated)
    v_pass := '{}';
    FOR v_x IN SELECT DISTINCT t.w FROM pg_catalog.unnest(v_tw) t(w) LOOP
      WITH c AS (
          SELECT q.id FROM agent.runs q
           WHERE q.workspace_id = v_x
             AND q.id = ANY (ARRAY(SELECT t.id FROM ROWS FROM (pg_catalog.unnest(v_try), pg_catalog.unnest(v_tw)) t(id, w)
                                    WHERE t.w = v_x))
             AND pg_catalog.texteq(q.status, 'queued')
           FOR UPDATE OF q SKIP LOCKED
        ), u AS (
        UPDATE agent.runs x
           SET status = 'running', attempts = x.attempts + 1,
               started_at = coalesce(x.started_at, v_now), lease_until = v_now + v_lease
          FROM c
         -- by primary key: c locked these rows while they were queued, so no
         -- status test here (with one, a stale estimate of the small partial
         -- queue index made the planner scan every queued run per claim)
         WHERE x.workspace_id = v_x AND x.id = c.id
        RETURNING x AS run
      )
      SELECT pg_catalog.array_agg(u.run) INTO v_got FROM u;
      v_pass := v_pass || coalesce(v_got, '{}');
    END LOOP;
    -- in the fair order
    v_pass := ARRAY(SELECT p FROM pg_catalog.unnest(v_pass) p ORDER BY pg_catalog.array_position(v_try, p.id));
    v_rows := v_rows || v_pass;
    -- done: n claimed, or every candidate claimed and none of the
    -- workspaces cut at k candidates
    EXIT WHEN pg_catalog.cardinality(v_rows) >= n
           OR (pg_catalog.cardinality(v_cid) = pg_catalog.cardinality(v_pass) AND NOT v_more);
    -- some candidates were taken by concurrent claimers: look past them
    v_skip := v_skip || ARRAY(SELECT x FROM pg_catalog.unnest(v_try) x
                               WHERE x <> ALL (ARRAY(SELECT p.id FROM pg_catalog.unnest(v_pass) p)));
  END LOOP;
  IF pg_catalog.cardinality(v_rows) = 0 THEN
    RETURN;
  END IF;
  -- one audit row per claimed run (agent._audit_run), in claim order; the
  -- owners read first, so that the statement that audits reads no
  -- distributed table (it runs here)
  SELECT pg_catalog.array_agg(a.id), pg_catalog.array_agg(a.owner_id) INTO v_aids, v_owners
    FROM agent.agents a
   WHERE a.workspace_id = ANY (ARRAY(SELECT DISTINCT r.workspace_id FROM pg_catalog.unnest(v_rows) r))
     AND a.id = ANY (ARRAY(SELECT r.agent_id FROM pg_catalog.unnest(v_rows) r));
  PERFORM agent._audit_event('run.claim', 'success', 'run', r.id::text, r.workspace_id,
                             v_owners[pg_catalog.array_position(v_aids, r.agent_id)],
                             pg_catalog.jsonb_build_object('agent_id', r.agent_id, 'status', 'running', 'attempts', r.attempts),
                             pg_catalog.format('run %s claimed (attempt %s)', r.id, r.attempts), NULL)
     FROM pg_catalog.unnest(v_rows) r;
  RETURN QUERY SELECT * FROM pg_catalog.unnest(v_rows);
END
$$;
COMMENT ON FUNCTION agent.claim_runs(int) IS
  'Claims up to n queued runs of agents not deleted, serving workspaces in turn: interactive runs first, then the run whose workspace has the fewest runs running counting those ahead of it in its queue, then the oldest; at most n - W + 1 runs of one workspace when W workspaces have queued runs; workspaces with pg_agents.max_runs_per_workspace runs running are skipped (0: no cap); a session bound to a workspace (pg_agents.workspace) claims only its runs. A one-workspace claim reads each priority''s queue from its mark (agent.run_queue_marks), past the claimed runs a held snapshot keeps. FOR UPDATE SKIP LOCKED, never the same run twice: running, attempts + 1, started_at on the first claim, lease_until = now() + pg_agents.run_lease. Returns the runs in claim order.';

CREATE FUNCTION agent.renew_lease(run_id bigint) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_until timestamptz;
  v_status text;
  -- the session's workspace, or the run's own for a session bound to none
  v_ws text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    SELECT r.workspace_id INTO v_ws FROM agent.runs r WHERE r.id = renew_lease.run_id;
  END IF;
  UPDATE agent.runs r
     SET lease_until = now() + current_setting('pg_agents.run_lease')::interval
   WHERE r.workspace_id = v_ws AND r.id = renew_lease.run_id AND r.status = 'running'
  RETURNING r.lease_until INTO v_until;
  IF NOT FOUND THEN
    SELECT r.status INTO v_status FROM agent.runs r WHERE r.workspace_id = v_ws AND r.id = renew_lease.run_id;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'run % does not exist', renew_lease.run_id USING ERRCODE = 'undefined_object';
    END IF;
    RAISE EXCEPTION 'run % is not running', renew_lease.run_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run holds a lease.', v_status);
  END IF;
  RETURN v_until;
END
$$;
COMMENT ON FUNCTION agent.renew_lease(bigint) IS
  'Extends the lease of a running run to now() + pg_agents.run_lease (long runs call it before the lease ends); returns the new lease end.';

CREATE FUNCTION agent.wait_for_children(run_id bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
BEGIN
  r := agent._lock_run(wait_for_children.run_id);
  IF r.status <> 'running' THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run may wait for its children.', r.status);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.runs c
                  WHERE c.workspace_id = r.workspace_id AND c.parent_run_id = r.id AND agent._run_is_active(c.status)) THEN
    RETURN false;
  END IF;
  UPDATE agent.runs x SET status = 'waiting_children', lease_until = NULL
   WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
  PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_children'),
                           format('run %s waits for its child runs', r.id));
  PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_children');
  RETURN true;
END
$$;
COMMENT ON FUNCTION agent.wait_for_children(bigint) IS
  'The executor of a running run that has delegated parks it in waiting_children (lease released; returns true) until its last active child ends, which re-queues it; returns false (run stays running) when no child is active.';

-- ---------------------------------------------------------------------------
-- Usage and the end of a run
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.add_usage(run_id bigint, tokens_in int, tokens_out int, model text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  r         agent.runs%ROWTYPE;
  v_t       bigint;
  v_left    bigint;
  v_cur     bigint;
  v_n       integer := 0;
  v_release bigint := 0;
  v_parent  bigint;
  v_active  boolean;
  v_total   bigint;
  v_reserved bigint;
  v_budget  bigint;
BEGIN
  IF add_usage.tokens_in IS NULL OR add_usage.tokens_out IS NULL
     OR add_usage.tokens_in < 0 OR add_usage.tokens_out < 0 THEN
    RAISE EXCEPTION 'token counts must be non-negative'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  r := agent._lock_run(add_usage.run_id);
  v_t := add_usage.tokens_in::bigint + add_usage.tokens_out;
  -- walk up the chain (the tree is locked), one indexed UPDATE per run: every
  -- run on it adds the tokens to tokens_total; a parent's reservation for its
  -- active child on the chain shrinks by what the child used of its budget
  -- (at most 16 ancestors)
  v_cur := r.id;
  LOOP
    UPDATE agent.runs x
       SET tokens_total = x.tokens_total + v_t,
           tokens_reserved = greatest(0, x.tokens_reserved - v_release),
           tokens_in = x.tokens_in + CASE WHEN v_n = 0 THEN add_usage.tokens_in ELSE 0 END,
           tokens_out = x.tokens_out + CASE WHEN v_n = 0 THEN add_usage.tokens_out ELSE 0 END,
           model = CASE WHEN v_n = 0 THEN coalesce(add_usage.model, x.model) ELSE x.model END
      FROM agent.agents a
     WHERE x.workspace_id = r.workspace_id AND x.id = v_cur AND a.workspace_id = r.workspace_id AND a.id = x.agent_id
    RETURNING x.parent_run_id, agent._run_is_active(x.status), x.tokens_total, x.tokens_reserved,
              coalesce(x.token_budget, a.default_token_budget)
      INTO v_parent, v_active, v_total, v_reserved, v_budget;
    EXIT WHEN NOT FOUND;
    IF v_n = 0 THEN
      v_left := v_budget - v_total - v_reserved;
    END IF;
    EXIT WHEN v_parent IS NULL OR v_n >= 16;
    v_release := CASE WHEN v_active THEN least(v_t, greatest(0, v_budget - (v_total - v_t))) ELSE 0 END;
    v_cur := v_parent;
    v_n := v_n + 1;
  END LOOP;
  RETURN v_left;
END
$$;
COMMENT ON FUNCTION agent.add_usage(bigint, int, int, text) IS
  'Adds token usage to a run and rolls it up to every ancestor''s tokens_total (same transaction). Returns the run''s remaining budget (budget - tokens_total - tokens_reserved): at 0 or below the executor makes no further model call and ends the run budget_exceeded.';

CREATE FUNCTION agent.finish_run(run_id bigint, status text, output jsonb DEFAULT NULL, error text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r agent.runs%ROWTYPE;
BEGIN
  IF status IS NULL OR status NOT IN ('succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired') THEN
    RAISE EXCEPTION 'invalid final status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A run ends succeeded, failed, budget_exceeded, cancelled or expired.';
  END IF;
  r := agent._lock_run(run_id);
  IF NOT agent._run_is_active(r.status) THEN
    RAISE EXCEPTION 'run % has already ended', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run ended %s.', r.status);
  END IF;
  PERFORM agent._finish_run(r.id, status, output, error);
END
$$;
COMMENT ON FUNCTION agent.finish_run(bigint, text, jsonb, text) IS
  'Ends an active run with a terminal status (succeeded, failed, budget_exceeded, cancelled, expired): unused reserved budget returns to the parent, the parent''s delegate step gets the result, a parent waiting for its children is re-queued when the last one ends, active children are cancelled, the trigger''s last_status/last_error/last_run_at are written; audited and notified.';

-- ---------------------------------------------------------------------------
-- Re-run and cancel
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.rerun(run_id bigint, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  o    agent.runs%ROWTYPE;
  a    agent.agents%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(rerun.by_user, ''), true);
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = rerun.run_id;
  END IF;
  SELECT * INTO o FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = rerun.run_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', rerun.run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = o.agent_id;
  IF a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', o.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF o.regime = 'manual' THEN
    IF NOT coalesce(agent.user_can(by_user, o.agent_id, 'chat'), false)
       OR (o.requested_by IS DISTINCT FROM by_user
           AND agent.activity_scope(by_user, o.agent_id) IS DISTINCT FROM 'all') THEN
      RAISE EXCEPTION 'user "%" may not re-run run %', by_user, o.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Re-running a manual run requires the chat level and seeing the run (one''s own run, or the full level).';
    END IF;
  ELSE
    IF NOT coalesce(agent.user_can(by_user, o.agent_id, 'edit_settings'), false) THEN
      RAISE EXCEPTION 'user "%" may not re-run run %', by_user, o.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Re-running an autonomous run requires the edit level on the agent.';
    END IF;
    IF a.status = 'suspended' THEN
      RAISE EXCEPTION 'agent % is suspended', a.id
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = 'A suspended agent starts no autonomous run; chat still works.';
    END IF;
  END IF;
  v_id := agent._enqueue_run(o.agent_id, o.regime, 'rerun',
                             o.input || jsonb_build_object('rerun_of', o.id), NULL,
                             CASE WHEN o.regime = 'manual' THEN by_user ELSE coalesce(by_user, o.requested_by) END);
  SELECT * INTO n FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_id;
  PERFORM agent._audit_run('run.rerun', n, 'success',
                           jsonb_build_object('rerun_of', o.id, 'by_user', by_user, 'status', n.status),
                           format('run %s re-runs run %s', v_id, o.id));
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent.rerun(bigint, text) IS
  'Queues a new run of the same agent with the same input plus input.rerun_of, origin rerun, the original''s regime. Manual runs need the chat level (and, for another user''s run, seeing it: agent.activity_scope = all); autonomous runs need edit_settings. Returns the new run id.';

CREATE FUNCTION agent.cancel_run(run_id bigint, by_user text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  r      agent.runs%ROWTYPE;
  v_need text;
  v_n    integer;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(cancel_run.by_user, ''), true);
  r := agent._lock_run(cancel_run.run_id);
  v_need := CASE WHEN r.regime = 'manual' AND r.requested_by = by_user THEN 'chat' ELSE 'edit_settings' END;
  IF NOT coalesce(agent.user_can(by_user, r.agent_id, v_need), false) THEN
    RAISE EXCEPTION 'user "%" may not cancel run %', by_user, r.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Cancelling one''s own manual run requires the chat level; any other run the edit level.';
  END IF;
  IF NOT agent._run_is_active(r.status) THEN
    RETURN 0;
  END IF;
  SELECT count(*) INTO v_n
    FROM agent.runs d
   WHERE d.workspace_id = r.workspace_id AND d.root_run_id = r.root_run_id AND agent._run_is_active(d.status)
     AND (d.id = r.id OR d.id IN (WITH RECURSIVE t(id) AS (
                                    SELECT c.id FROM agent.runs c
                                     WHERE c.workspace_id = r.workspace_id AND c.parent_run_id = r.id
                                    UNION ALL
                                    SELECT c.id FROM agent.runs c JOIN t ON c.parent_run_id = t.id
                                     WHERE c.workspace_id = r.workspace_id)
                                  SELECT t.id FROM t));
  PERFORM agent._finish_run(r.id, 'cancelled', NULL, format('cancelled by %s', by_user));
  RETURN v_n;
END
$$;
COMMENT ON FUNCTION agent.cancel_run(bigint, text) IS
  'Cancels an active run and its active descendants (one''s own manual run: chat level; otherwise edit level). Returns how many runs were cancelled (0 when it had already ended).';

-- ---------------------------------------------------------------------------
-- Maintenance, called by agent.tick()
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._tick_runs(p_now timestamptz DEFAULT now()) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_max       int := current_setting('pg_agents.max_attempts')::int;
  c           record;
  r           agent.runs%ROWTYPE;
  ap          agent.approvals%ROWTYPE;
  v_reclaimed int := 0;
  v_abandoned int := 0;
  v_expired   int := 0;
  v_cancelled int := 0;
  v_owner     text;
BEGIN
  -- runs whose executor's lease has passed
  -- (each run's workspace named in every statement after the first: Citus
  -- routes by it; the tree lock as agent._lock_tree's)
  FOR c IN SELECT x.workspace_id, x.id, coalesce(rt.id, x.id) AS root
             FROM agent.runs x LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
            WHERE x.status = 'running' AND x.lease_until < p_now ORDER BY x.id
  LOOP
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.root FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.id FOR UPDATE;
    CONTINUE WHEN r.status <> 'running' OR NOT r.lease_until < p_now;
    IF r.attempts >= v_max THEN
      PERFORM agent._finish_run(r.id, 'failed', NULL, format('run abandoned after %s attempts', r.attempts));
      v_abandoned := v_abandoned + 1;
    ELSE
      UPDATE agent.runs x SET status = 'queued', lease_until = NULL
       WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
      PERFORM agent._audit_run('run.reclaim', r, 'success',
                               jsonb_build_object('status', 'queued', 'attempts', r.attempts),
                               format('run %s re-queued: its lease expired (attempt %s of %s)', r.id, r.attempts, v_max));
      PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
      v_reclaimed := v_reclaimed + 1;
    END IF;
  END LOOP;

  -- runs of deleted agents never start (agent.claim_runs skips them); from
  -- the few deleted agents (agents_deleted_idx) to their runs (runs_agent_idx),
  -- never through every active run (the tick's own queued runs included)
  FOR c IN SELECT x.workspace_id, x.id, coalesce(rt.id, x.id) AS root, x.agent_id
             FROM agent.agents a
             CROSS JOIN LATERAL (
                   SELECT y.workspace_id, y.id, y.root_run_id, y.agent_id FROM agent.runs y
                    WHERE y.workspace_id = a.workspace_id AND y.agent_id = a.id
                      AND y.status IN ('queued', 'waiting_approval', 'waiting_input', 'waiting_children')) x
             LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
            WHERE a.deleted_at IS NOT NULL
            ORDER BY x.id
  LOOP
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.root FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    IF agent._finish_run(c.id, 'cancelled', NULL, format('agent %s was deleted', c.agent_id)) THEN
      v_cancelled := v_cancelled + 1;
    END IF;
  END LOOP;

  -- pending approvals past their time-to-live
  FOR c IN SELECT p.workspace_id, p.id, coalesce(rt.id, x.id) AS root FROM agent.approvals p
             JOIN agent.runs x ON x.workspace_id = p.workspace_id AND x.id = p.run_id
             LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
            WHERE p.status = 'pending' AND p.expires_at <= p_now ORDER BY p.id
  LOOP
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.root FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    SELECT * INTO ap FROM agent.approvals p WHERE p.workspace_id = c.workspace_id AND p.id = c.id FOR UPDATE;
    CONTINUE WHEN ap.status <> 'pending';
    UPDATE agent.approvals p SET status = 'expired', decided_at = p_now
     WHERE p.workspace_id = ap.workspace_id AND p.id = ap.id;
    SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id;
    SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id;
    PERFORM agent._audit_event('approval.expire', 'success', 'approval', ap.id::text, ap.workspace_id,
                               v_owner,
                               jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool, 'approval_key', ap.approval_key),
                               format('approval of %s on run %s expired', ap.tool, ap.run_id));
    v_expired := v_expired + 1;
    IF r.status = 'waiting_approval' THEN
      PERFORM agent._finish_run(r.id, 'expired', NULL,
                                format('approval of tool "%s" expired at %s', ap.tool, ap.expires_at));
    END IF;
  END LOOP;

  RETURN jsonb_build_object('reclaimed', v_reclaimed, 'abandoned', v_abandoned,
                            'approvals_expired', v_expired, 'cancelled_deleted', v_cancelled);
END
$$;
REVOKE ALL ON FUNCTION agent._tick_runs(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._tick_runs(timestamptz) IS
  'Internal (called by agent.tick): re-queues running runs whose lease ended before p_now, fails them ("run abandoned after N attempts") at pg_agents.max_attempts, cancels the waiting runs of deleted agents, expires pending approvals past expires_at (their waiting runs end expired). Trees locked by others are left for the next tick. Returns {"reclaimed","abandoned","approvals_expired","cancelled_deleted"}.';

-- ---------------------------------------------------------------------------
-- Delegation (checks in C: src/delegation.c)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.delegation_depth_limit() RETURNS integer
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_delegation_depth_limit';
COMMENT ON FUNCTION agent.delegation_depth_limit() IS
  'The delegation depth in force: pg_agents.max_delegation_depth, negative values falling back to 3 and values above 5 clamped to 5 (0: no delegation).';

CREATE FUNCTION agent._delegate(p_parent_run_id bigint, p_child_agent_id bigint, p_task text,
                                p_attachments jsonb, p_token_budget bigint, p_raise boolean)
RETURNS jsonb
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_delegate';
REVOKE ALL ON FUNCTION agent._delegate(bigint, bigint, text, jsonb, bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegate(bigint, bigint, text, jsonb, bigint, boolean) IS
  'Internal: checks and creates a child run (src/delegation.c); p_raise chooses between raising a refusal and returning it.';

CREATE FUNCTION agent.delegate(parent_run_id bigint, child_agent_id bigint, task text,
                               attachments jsonb DEFAULT '[]', token_budget int DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT (agent._delegate($1, $2, $3, coalesce($4, '[]'::jsonb), $5, true) ->> 'child_run_id')::bigint
$$;
COMMENT ON FUNCTION agent.delegate(bigint, bigint, text, jsonb, int) IS
  'Queues a child run of a running run (of the session''s workspace: another workspace''s run is unknown, 42704) for an agent in the parent agent''s delegation list (active, same workspace): autonomous, origin delegation, depth + 1, input {task, attachments, parent_run_id} (an attachment naming a resource the child may not read is replaced by {resource_type, resource_id, withheld}), budget reserved from the parent''s envelope, audited. Refusals raise (depth 54000, cycle 42P19, budget 54000, unlisted 42501, ...). Writes no step on the parent (the caller records its tool step). Returns the child run id.';

CREATE FUNCTION agent.try_delegate(parent_run_id bigint, child_agent_id bigint, task text,
                                   attachments jsonb DEFAULT '[]', token_budget int DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT agent._delegate($1, $2, $3, coalesce($4, '[]'::jsonb), $5, false)
$$;
COMMENT ON FUNCTION agent.try_delegate(bigint, bigint, text, jsonb, int) IS
  'Like agent.delegate, for executors, with the step bookkeeping: an accepted delegation gets a delegate step on the parent whose output becomes the child''s result when it ends; a refusal is returned ({"ok": false, "reason", "error", "detail", "sqlstate"}) instead of raised, and its denied audit row and denied step on the parent are kept. Success: {"ok": true, "child_run_id", "token_budget", "depth", "status"}.';

CREATE FUNCTION agent.delegation_context(run_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  a       agent.agents%ROWTYPE;
  v_max   int := agent.delegation_depth_limit();
  v_chain bigint[];
  v_to    jsonb;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = delegation_context.run_id;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = delegation_context.run_id;
  -- a run of another workspace is an unknown run
  IF r.id IS NULL THEN
    RAISE EXCEPTION 'run % does not exist', delegation_context.run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = r.agent_id;
  WITH RECURSIVE c(id, parent, agent_id, n) AS (
    SELECT x.id, x.parent_run_id, x.agent_id, 0 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = r.id
    UNION ALL
    SELECT x.id, x.parent_run_id, x.agent_id, c.n + 1 FROM agent.runs x JOIN c ON x.id = c.parent
     WHERE x.workspace_id = v_ws AND c.n < 16)
  SELECT array_agg(c.agent_id ORDER BY c.n DESC) INTO v_chain FROM c;
  SELECT coalesce(jsonb_agg(jsonb_build_object('agent_id', d.id, 'name', d.name) ORDER BY d.id), '[]')
    INTO v_to
    FROM agent.agents d
   WHERE d.workspace_id = v_ws
     AND d.id IN (SELECT (e #>> '{}')::bigint FROM jsonb_array_elements(a.delegation) e
                   WHERE (e #>> '{}') ~ '^[0-9]{1,18}$')
     AND d.deleted_at IS NULL AND d.status = 'active'
     AND d.id <> ALL (v_chain);
  RETURN jsonb_build_object(
    'depth', r.depth, 'max_depth', v_max, 'chain', to_jsonb(v_chain),
    'can_delegate', r.depth < v_max AND jsonb_array_length(v_to) > 0,
    'delegates', CASE WHEN r.depth < v_max THEN v_to ELSE '[]'::jsonb END,
    'remaining_budget', coalesce(r.token_budget, a.default_token_budget) - r.tokens_total - r.tokens_reserved);
END
$$;
REVOKE ALL ON FUNCTION agent.delegation_context(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.delegation_context(bigint) IS
  'For the executor: where a run stands in its delegation tree: {"depth", "max_depth", "chain" (agent ids from the root), "can_delegate", "delegates" (agents it may hand work to now: listed, active, same workspace, not on the chain, and only below the depth limit), "remaining_budget"}. The delegate_to_agent tool is offered only when can_delegate. A run of another workspace than the session''s is unknown (42704).';

-- ---------------------------------------------------------------------------
-- Approvals (keys in C: src/approval.c)
-- ---------------------------------------------------------------------------

ALTER TABLE agent.approvals ADD COLUMN reason text;
COMMENT ON COLUMN agent.approvals.reason IS
  'Why the call was denied, as the denying user gave it (agent.deny); the model is told it with the refusal.';

CREATE FUNCTION agent.canonical_json(input jsonb) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_canonical_json';
COMMENT ON FUNCTION agent.canonical_json(jsonb) IS
  'Canonical JSON text of a jsonb value: object keys sorted by bytes at every depth, arrays in order, numbers normalised (1.0 = 1), no white space.';

CREATE FUNCTION agent.approval_key(tool text, input jsonb) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_approval_key';
COMMENT ON FUNCTION agent.approval_key(text, jsonb) IS
  'Deterministic approval key of a tool call: lowercase hex SHA-256 of the canonical JSON of [tool, input]; the same for the same logical input whatever the key order.';

CREATE FUNCTION agent.request_approval(run_id bigint, tool text, input jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r     agent.runs%ROWTYPE;
  v_in  jsonb := coalesce(request_approval.input, '{}');
  v_key text;
  v_id  bigint;
  v_len bigint;
  v_max bigint;
  v_owner text;
BEGIN
  IF tool IS NULL THEN
    RAISE EXCEPTION 'tool name must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the approver sees exactly what will run: the whole input, or no approval
  v_len := pg_catalog.octet_length(v_in::text);
  v_max := pg_catalog.pg_size_bytes(pg_catalog.current_setting('pg_agents.approval_max_input'));
  IF v_len > v_max THEN
    RAISE EXCEPTION 'tool input of % bytes is too large to be approved', v_len
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = pg_catalog.format('An approval shows the whole input of the call it authorises, up to pg_agents.approval_max_input (%s bytes).', v_max),
            HINT = 'Make the change in smaller calls, or ask a superuser to raise pg_agents.approval_max_input.';
  END IF;
  IF agent._has_credential(v_in) THEN
    RAISE EXCEPTION 'tool input holds a credential-shaped value'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An approval stores the input exactly as it will run, and a credential is never stored: the call is refused.',
            HINT = 'Refer to the secret (e.g. by the name of a configured connection) instead of passing it.';
  END IF;
  v_key := agent.approval_key(tool, v_in);
  r := agent._lock_run(request_approval.run_id);
  IF r.status NOT IN ('running', 'waiting_approval') THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run asks for an approval.', r.status);
  END IF;
  SELECT p.id INTO v_id FROM agent.approvals p
   WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.approval_key = v_key AND p.status = 'pending';
  IF NOT FOUND THEN
    INSERT INTO agent.approvals (workspace_id, run_id, approval_key, tool, input, status, expires_at)
    VALUES (r.workspace_id, r.id, v_key, tool, v_in, 'pending',
            now() + current_setting('pg_agents.approval_ttl')::interval)
    RETURNING id INTO v_id;
    SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id;
    PERFORM agent._audit_event('approval.request', 'success', 'approval', v_id::text, r.workspace_id, v_owner,
                               jsonb_build_object('run_id', r.id, 'tool', tool, 'approval_key', v_key,
                                                  'input', agent.redact(v_in)),
                               format('run %s asks approval for %s', r.id, tool));
  END IF;
  IF r.status <> 'waiting_approval' THEN
    UPDATE agent.runs x SET status = 'waiting_approval', lease_until = NULL
     WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_approval'),
                             format('run %s waits for approval of %s', r.id, tool));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_approval');
  END IF;
  RETURN v_key;
END
$$;
COMMENT ON FUNCTION agent.request_approval(bigint, text, jsonb) IS
  'Pauses a running run on a tool call that needs approval: stores a pending approval (key, the input exactly as it will run, expires_at = now() + pg_agents.approval_ttl), the run goes to waiting_approval. An input larger than pg_agents.approval_max_input (54000) or holding a credential-shaped value (22023) is refused. Asking twice for the same call reuses the pending approval. Returns the approval key.';

-- Finds the one pending approval a user decides (shared by approve and deny).
CREATE FUNCTION agent._approval_to_decide(p_key text, p_by_user text, p_run_id bigint)
RETURNS agent.approvals
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ids   bigint[];
  v_any   boolean;
  v_state text;
  ap      agent.approvals%ROWTYPE;
  v_root  bigint;
  v_agents bigint[];
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
  v_now   timestamptz := now();
BEGIN
  IF p_key IS NULL OR p_by_user IS NULL OR p_by_user = '' THEN
    RAISE EXCEPTION 'approval key and deciding user are required'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: that of the key's latest
    -- approval (a pending one first)
    SELECT p.workspace_id INTO v_ws FROM agent.approvals p
     WHERE p.approval_key = p_key AND (p_run_id IS NULL OR p.run_id = p_run_id)
     ORDER BY p.status = 'pending' DESC, p.id DESC LIMIT 1;
  END IF;
  -- every statement names the workspace (Citus routes by it); the levels
  -- are checked after the read (agent.user_can reads distributed tables)
  SELECT array_agg(p.id ORDER BY p.id), array_agg(x.agent_id ORDER BY p.id), count(*) > 0
    INTO v_ids, v_agents, v_any
    FROM agent.approvals p JOIN agent.runs x ON x.workspace_id = p.workspace_id AND x.id = p.run_id
   WHERE p.workspace_id = v_ws AND p.approval_key = p_key AND p.status = 'pending' AND p.expires_at > v_now
     AND (p_run_id IS NULL OR p.run_id = p_run_id);
  IF v_any THEN
    v_ids := ARRAY(SELECT u.id FROM unnest(v_ids, v_agents) u(id, agent_id)
                    WHERE coalesce(agent.user_can(p_by_user, u.agent_id, 'edit_settings'), false) ORDER BY u.id);
    IF cardinality(v_ids) = 0 THEN
      v_ids := NULL;
    END IF;
  END IF;
  IF NOT v_any THEN
    SELECT p.status INTO v_state FROM agent.approvals p
     WHERE p.workspace_id = v_ws AND p.approval_key = p_key AND (p_run_id IS NULL OR p.run_id = p_run_id)
     ORDER BY p.id DESC LIMIT 1;
    IF v_state IS NULL THEN
      RAISE EXCEPTION 'no pending approval with key "%"', p_key
        USING ERRCODE = 'undefined_object';
    END IF;
    RAISE EXCEPTION 'approval "%" is no longer pending', p_key
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('It is %s.', CASE WHEN v_state = 'pending' THEN 'past its expiry time' ELSE v_state END);
  END IF;
  IF v_ids IS NULL THEN
    RAISE EXCEPTION 'user "%" may not decide approval "%"', p_by_user, p_key
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Deciding an approval requires the edit level on the agent.';
  END IF;
  IF cardinality(v_ids) > 1 THEN
    RAISE EXCEPTION 'approval key "%" is pending on % runs', p_key, cardinality(v_ids)
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The same tool call waits for approval in several runs; a decision applies to one.',
            HINT = 'Pass the run id as the third argument.';
  END IF;
  SELECT coalesce(rt.id, x.id) INTO v_root
    FROM agent.approvals p JOIN agent.runs x ON x.workspace_id = p.workspace_id AND x.id = p.run_id
    LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
   WHERE p.workspace_id = v_ws AND p.id = v_ids[1];
  -- the tree lock (agent._lock_tree), then the approval
  PERFORM 1 FROM agent.runs rt WHERE rt.workspace_id = v_ws AND rt.id = v_root FOR UPDATE;
  SELECT * INTO ap FROM agent.approvals p WHERE p.workspace_id = v_ws AND p.id = v_ids[1] FOR UPDATE;
  IF ap.status <> 'pending' THEN
    RAISE EXCEPTION 'approval "%" is no longer pending', p_key
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('It is %s.', ap.status);
  END IF;
  RETURN ap;
END
$$;
REVOKE ALL ON FUNCTION agent._approval_to_decide(text, text, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._approval_to_decide(text, text, bigint) IS
  'Internal: the single pending approval with that key (and run) the user may decide, locked; explains every other case.';

CREATE FUNCTION agent._record_decision(ap agent.approvals, p_by_user text, p_decision text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_owner text;
BEGIN
  UPDATE agent.approvals p SET status = p_decision, decided_by = p_by_user, decided_at = now()
   WHERE p.workspace_id = ap.workspace_id AND p.id = ap.id;
  SELECT a.owner_id INTO v_owner
    FROM agent.agents a JOIN agent.runs x ON x.workspace_id = a.workspace_id AND x.agent_id = a.id
   WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id;
  PERFORM agent._audit_event(CASE p_decision WHEN 'approved' THEN 'approval.approve' ELSE 'approval.deny' END,
                             CASE p_decision WHEN 'approved' THEN 'success' ELSE 'denied' END,
                             'approval', ap.id::text, ap.workspace_id, v_owner,
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool,
                                                'approval_key', ap.approval_key, 'by_user', p_by_user)
                               || CASE WHEN ap.reason IS NOT NULL THEN jsonb_build_object('reason', ap.reason)
                                       ELSE '{}'::jsonb END,
                             format('%s %s %s on run %s', p_by_user, p_decision, ap.tool, ap.run_id),
                             CASE p_decision WHEN 'denied' THEN 'denied' END);
END
$$;
REVOKE ALL ON FUNCTION agent._record_decision(agent.approvals, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._record_decision(agent.approvals, text, text) IS
  'Internal: records an approve or deny decision on one approval and its audit row.';

CREATE FUNCTION agent.approve(approval_key text, by_user text, run_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  ap agent.approvals%ROWTYPE;
  r  agent.runs%ROWTYPE;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(approve.by_user, ''), true);
  ap := agent._approval_to_decide(approve.approval_key, by_user, approve.run_id);
  PERFORM agent._record_decision(ap, by_user, 'approved');
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id FOR UPDATE;
  IF r.status = 'waiting_approval'
     AND NOT EXISTS (SELECT 1 FROM agent.approvals p
                      WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.status = 'pending') THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.resume', r, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: approved by %s', r.id, by_user));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
  END IF;
  RETURN ap.run_id;
END
$$;
COMMENT ON FUNCTION agent.approve(text, text, bigint) IS
  'Approves one pending tool call (edit level on the agent required); run_id may be NULL unless the key is pending on several runs the user may decide. The run goes back to queued once none of its approvals is pending; the approval authorises that one call once (agent.consume_approval). Returns the run id.';

-- A denied call is refused to the model and the run goes on (the human
-- approval page: the model hears that the person said no); an agent whose
-- scope says "deny_ends_run": true keeps the 0.3.0 behaviour (the run fails).
CREATE FUNCTION agent.deny(approval_key text, by_user text, run_id bigint, reason text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  ap     agent.approvals%ROWTYPE;
  r      agent.runs%ROWTYPE;
  v_why  text := nullif(pg_catalog.btrim(deny.reason), '');
  v_ends boolean;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(deny.by_user, ''), true);
  IF pg_catalog.char_length(v_why) > 1000 THEN
    RAISE EXCEPTION 'reason of a denial is too long'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('A reason has at most 1000 characters; this one has %s.', pg_catalog.char_length(v_why));
  END IF;
  ap := agent._approval_to_decide(deny.approval_key, by_user, deny.run_id);
  UPDATE agent.approvals p SET reason = v_why WHERE p.workspace_id = ap.workspace_id AND p.id = ap.id;
  ap.reason := v_why;
  PERFORM agent._record_decision(ap, by_user, 'denied');
  SELECT a.scope -> 'deny_ends_run' = 'true'::jsonb INTO v_ends
    FROM agent.agents a JOIN agent.runs x ON x.workspace_id = a.workspace_id AND x.agent_id = a.id
   WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id;
  IF coalesce(v_ends, false) THEN
    PERFORM agent._finish_run(ap.run_id, 'failed', NULL, format('denied by %s', by_user));
    RETURN ap.run_id;
  END IF;
  -- the run resumes: the worker hands the model a refusal for this call
  -- (agent.consume_refusal) and goes on from there
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id FOR UPDATE;
  IF r.status = 'waiting_approval'
     AND NOT EXISTS (SELECT 1 FROM agent.approvals p
                      WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.status = 'pending') THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.resume', r, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: %s declined %s', r.id, by_user, ap.tool));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
  END IF;
  RETURN ap.run_id;
END
$$;
COMMENT ON FUNCTION agent.deny(text, text, bigint, text) IS
  'Denies one pending tool call (edit level on the agent required; run_id may be NULL unless the key is pending on several runs the user may decide), with an optional reason (at most 1000 characters) the model is told. The call never runs; the run goes back to queued once none of its approvals is pending and the model receives "the person declined this call" (with the reason) as the call''s result. An agent whose scope has "deny_ends_run": true fails the run with "denied by <user>" instead. Returns the run id.';

CREATE FUNCTION agent.deny(approval_key text, by_user text, run_id bigint) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT agent.deny($1, $2, $3, NULL::text) $$;
COMMENT ON FUNCTION agent.deny(text, text, bigint) IS
  'Denies one pending tool call without a reason; see agent.deny(text, text, bigint, text). Returns the run id.';

-- The SPEC's two-argument forms (the run id is needed only when a key is
-- pending on several runs the user may decide).
CREATE FUNCTION agent.approve(approval_key text, by_user text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT agent.approve($1, $2, NULL::bigint) $$;
COMMENT ON FUNCTION agent.approve(text, text) IS
  'Approves the one pending tool call with that key the user may decide (edit level); see agent.approve(text, text, bigint). Returns the run id.';

CREATE FUNCTION agent.deny(approval_key text, by_user text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT agent.deny($1, $2, NULL::bigint) $$;
COMMENT ON FUNCTION agent.deny(text, text) IS
  'Denies the one pending tool call with that key the user may decide (edit level): the model is told the person declined it and the run goes on (or fails "denied by <user>" when the agent''s scope has "deny_ends_run": true); see agent.deny(text, text, bigint, text). Returns the run id.';

CREATE FUNCTION agent.consume_approval(run_id bigint, tool text, input jsonb) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_key text := agent.approval_key(tool, coalesce(consume_approval.input, '{}'));
  ap    agent.approvals%ROWTYPE;
  v_at  timestamptz;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws  text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = consume_approval.run_id;
  END IF;
  -- (the time as a value: Citus refuses volatile functions in an UPDATE)
  v_at := clock_timestamp();
  UPDATE agent.approvals p SET consumed_at = v_at
   WHERE p.workspace_id = v_ws
     AND p.id = (SELECT q.id FROM agent.approvals q
                  WHERE q.workspace_id = v_ws AND q.run_id = consume_approval.run_id AND q.approval_key = v_key
                    AND q.status = 'approved' AND q.consumed_at IS NULL
                  ORDER BY q.id LIMIT 1
                  FOR UPDATE SKIP LOCKED)
     AND p.consumed_at IS NULL
  RETURNING * INTO ap;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM agent._audit_event('approval.consume', 'success', 'approval', ap.id::text, ap.workspace_id, NULL,
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool, 'approval_key', ap.approval_key),
                             format('run %s executes the approved call of %s', ap.run_id, ap.tool));
  RETURN true;
END
$$;
COMMENT ON FUNCTION agent.consume_approval(bigint, text, jsonb) IS
  'For the executor, before a gated tool call: true exactly once for an approved, not yet consumed approval of that run with that tool and input (consumed_at is set); false otherwise (ask with agent.request_approval), and for a run of another workspace than the session''s.';

CREATE FUNCTION agent.consume_refusal(run_id bigint, tool text, input jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_key text := agent.approval_key(tool, coalesce(consume_refusal.input, '{}'));
  ap    agent.approvals%ROWTYPE;
  v_at  timestamptz;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws  text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = consume_refusal.run_id;
  END IF;
  -- (the time as a value: Citus refuses volatile functions in an UPDATE)
  v_at := clock_timestamp();
  UPDATE agent.approvals p SET consumed_at = v_at
   WHERE p.workspace_id = v_ws
     AND p.id = (SELECT q.id FROM agent.approvals q
                  WHERE q.workspace_id = v_ws AND q.run_id = consume_refusal.run_id AND q.approval_key = v_key
                    AND q.status IN ('denied', 'expired') AND q.consumed_at IS NULL
                  ORDER BY q.id LIMIT 1
                  FOR UPDATE SKIP LOCKED)
     AND p.consumed_at IS NULL
  RETURNING * INTO ap;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  PERFORM agent._audit_event('approval.refuse', 'denied', 'approval', ap.id::text, ap.workspace_id, NULL,
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool, 'approval_key', ap.approval_key,
                                                'status', ap.status),
                             format('run %s is told that the call of %s was %s', ap.run_id, ap.tool, ap.status),
                             ap.status);
  RETURN jsonb_build_object('status', ap.status, 'decided_by', ap.decided_by, 'reason', ap.reason);
END
$$;
COMMENT ON FUNCTION agent.consume_refusal(bigint, text, jsonb) IS
  'For the executor, before a gated tool call: the decision {"status": "denied" | "expired", "decided_by", "reason"} exactly once for a denied (or expired), not yet delivered approval of that run with that tool and input (consumed_at is set), so that the model is told once and a later identical call asks again; NULL otherwise.';

-- ---------------------------------------------------------------------------
-- Delegation records (called from src/delegation.c with the tree locked)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._delegation_granted(p_parent_run_id bigint, p_child_run_id bigint,
                                          p_child_agent_id bigint, p_task text,
                                          p_attachments jsonb, p_token_budget bigint,
                                          p_record_step boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c agent.runs%ROWTYPE;
  p agent.runs%ROWTYPE;
  -- the parent's workspace (Citus routes by it): the session's, else the run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_parent_run_id;
  END IF;
  SELECT * INTO c FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_child_run_id;
  SELECT * INTO p FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id;
  -- the delegate step on the parent (agent.try_delegate); its output is the
  -- child's result, set when the child ends (at once if the child could not
  -- be queued)
  IF p_record_step THEN
    PERFORM agent._runs_add_step(
      p_parent_run_id, 'delegate', (SELECT a.name FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = p_child_agent_id),
      jsonb_build_object('child_run_id', c.id, 'child_agent_id', p_child_agent_id, 'task', p_task,
                         'attachments', p_attachments, 'token_budget', p_token_budget, 'depth', c.depth),
      CASE WHEN NOT agent._run_is_active(c.status) THEN
        jsonb_build_object('child_run_id', c.id, 'agent_id', c.agent_id, 'status', c.status,
                           'output', c.output, 'error', c.error, 'tokens_total', c.tokens_total) END,
      CASE WHEN NOT agent._run_is_active(c.status) THEN 'error' END,
      NOT agent._run_is_active(c.status));
  END IF;
  PERFORM agent._audit_run('run.delegate', c, 'success',
                           jsonb_build_object('parent_run_id', p_parent_run_id, 'parent_agent_id', p.agent_id,
                                              'child_agent_id', p_child_agent_id, 'token_budget', p_token_budget,
                                              'depth', c.depth, 'root_run_id', c.root_run_id, 'status', c.status),
                           format('run %s (agent %s) delegated to agent %s: run %s, budget %s tokens',
                                  p_parent_run_id, p.agent_id, p_child_agent_id, c.id, p_token_budget));
END
$$;
REVOKE ALL ON FUNCTION agent._delegation_granted(bigint, bigint, bigint, text, jsonb, bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegation_granted(bigint, bigint, bigint, text, jsonb, bigint, boolean) IS
  'Internal: records an accepted delegation (audit row on the child run; with p_record_step, the delegate step on the parent).';

-- What a child run receives of one attachment: a resource reference the
-- child may read, as given; one it may not read, withheld (its other fields,
-- such as a row's content, are dropped).  A reference is
-- {"resource_type", "resource_id", ...} or the short form {"<type>": "<id>"}
-- for a built-in or registered resource type; anything else is the parent's
-- own data, like the task text, and passes as given.
CREATE FUNCTION agent._delegation_attachment(p_child_agent_id bigint, p_attachment jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_type   text;
  v_id     text;
  v_key    text;
  v_val    jsonb;
  v_ok     boolean;
  v_reason text;
BEGIN
  IF jsonb_typeof(p_attachment) IS DISTINCT FROM 'object' THEN
    RETURN p_attachment;
  END IF;
  IF p_attachment ? 'resource_type' OR p_attachment ? 'resource_id' THEN
    IF jsonb_typeof(p_attachment -> 'resource_type') IS DISTINCT FROM 'string'
       OR coalesce(jsonb_typeof(p_attachment -> 'resource_id'), 'null') NOT IN ('string', 'number') THEN
      RETURN jsonb_build_object('resource_type', p_attachment -> 'resource_type',
                                'resource_id', p_attachment -> 'resource_id', 'withheld', 'invalid_reference');
    END IF;
    v_type := p_attachment ->> 'resource_type';
    v_id := p_attachment ->> 'resource_id';
  ELSE
    SELECT e.key, e.value INTO v_key, v_val FROM jsonb_each(p_attachment) e;
    IF (SELECT count(*) FROM jsonb_object_keys(p_attachment)) <> 1
       OR coalesce(jsonb_typeof(v_val), 'null') NOT IN ('string', 'number')
       OR NOT (v_key IN ('page', 'collection', 'skill', 'agent')
               OR EXISTS (SELECT 1 FROM agent.resource_tables t WHERE t.resource_type = v_key)) THEN
      RETURN p_attachment;
    END IF;
    v_type := v_key;
    v_id := v_val #>> '{}';
  END IF;
  SELECT x.allowed, x.reason INTO v_ok, v_reason
    FROM agent.explain_access(p_child_agent_id, v_type, v_id, 'read', 'autonomous') x;
  IF v_ok THEN
    RETURN p_attachment;
  END IF;
  RETURN jsonb_build_object('resource_type', v_type, 'resource_id', v_id, 'withheld', coalesce(v_reason, 'not_granted'));
END
$$;
REVOKE ALL ON FUNCTION agent._delegation_attachment(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegation_attachment(bigint, jsonb) IS
  'Internal (agent.delegate): one attachment as the child run receives it: a resource reference ({"resource_type", "resource_id", ...}, or {"<type>": "<id>"} for a built-in or registered type) that the child agent may not read autonomously becomes {"resource_type", "resource_id", "withheld": <reason of agent.explain_access>} (its other fields dropped); a malformed reference is withheld as invalid_reference; anything else passes as given.';

CREATE FUNCTION agent._delegation_refused(p_parent_run_id bigint, p_child_agent_id bigint, p_task text,
                                          p_reason text, p_message text, p_detail text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  p agent.runs%ROWTYPE;
  -- the parent's workspace (Citus routes by it): the session's, else the run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_parent_run_id;
  END IF;
  SELECT * INTO p FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id;
  PERFORM agent._runs_add_step(
    p_parent_run_id, 'denied', 'delegate_to_agent',
    jsonb_build_object('child_agent_id', p_child_agent_id, 'task', p_task),
    jsonb_build_object('reason', p_reason, 'error', p_message, 'detail', p_detail),
    'denied', true);
  PERFORM agent._audit_run('run.delegate', p, 'denied',
                           jsonb_build_object('parent_run_id', p.id, 'child_agent_id', p_child_agent_id,
                                              'depth', p.depth, 'reason', p_reason, 'error', p_message),
                           format('delegation from run %s to agent %s refused: %s', p.id, p_child_agent_id, p_message),
                           p_reason);
END
$$;
REVOKE ALL ON FUNCTION agent._delegation_refused(bigint, bigint, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegation_refused(bigint, bigint, text, text, text, text) IS
  'Internal: records a refused delegation (denied step on the parent, denied audit row on the parent run).';

-- ---------------------------------------------------------------------------
-- Privileges: the functions that change runs, or that take a user name on
-- trust, are for the application and the executor roles (GRANT EXECUTE to
-- them); the pure ones are public.
-- ---------------------------------------------------------------------------
REVOKE ALL ON FUNCTION agent.start_run(bigint, text, jsonb, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.claim_runs(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.renew_lease(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.wait_for_children(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.add_usage(bigint, int, int, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.finish_run(bigint, text, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.rerun(bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.cancel_run(bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.delegate(bigint, bigint, text, jsonb, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.try_delegate(bigint, bigint, text, jsonb, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.request_approval(bigint, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.approve(text, text, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.deny(text, text, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.approve(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.deny(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.consume_approval(bigint, text, jsonb) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Retention (docs/runs.md): ended delegation trees, whole, with their steps
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.purge_runs(batch_size integer DEFAULT 1000) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_days   integer := pg_catalog.current_setting('pg_agents.run_retention_days')::integer;
  v_cutoff timestamptz;
  v_roots  bigint[];
  v_runs   bigint := 0;
  v_msgs   bigint := 0;
  v_ws     text;
  v_cand   bigint[];
  v_locked bigint[];
  v_n      bigint;
  v_rdays  timestamptz[];
BEGIN
  IF batch_size IS NULL OR batch_size < 1 THEN
    RAISE EXCEPTION 'batch_size must be positive' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_days <= 0 THEN
    RETURN 0;
  END IF;
  v_cutoff := pg_catalog.transaction_timestamp() - pg_catalog.make_interval(days => v_days);

  -- Up to batch_size roots whose whole tree ended before the cutoff: the
  -- root and every descendant in a terminal status with finished_at before
  -- it.  A tree with a run still active (or one that ended since) is kept
  -- whole, so that its roll-ups (tokens_total, reservations) stay those of
  -- its rows.  The roots are locked (the tree mutex, agent._lock_tree), a
  -- tree someone holds is left for the next call: read first (a colocated
  -- read), then locked and deleted workspace by workspace (Citus routes
  -- each statement by it; a tree that ended stays ended).
  FOR v_ws, v_cand IN
    SELECT c.workspace_id, pg_catalog.array_agg(c.id)
      FROM (SELECT r.workspace_id, r.id FROM agent.runs r
             WHERE r.parent_run_id IS NULL
               AND r.finished_at < v_cutoff
               AND r.status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
               AND NOT EXISTS (SELECT 1 FROM agent.runs d
                                WHERE d.workspace_id = r.workspace_id AND d.root_run_id = r.id AND d.id <> r.id
                                  AND (d.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                                       OR d.finished_at IS NULL OR d.finished_at >= v_cutoff))
             LIMIT batch_size) c
     GROUP BY c.workspace_id ORDER BY c.workspace_id
  LOOP
    v_locked := ARRAY(SELECT r.id FROM agent.runs r WHERE r.workspace_id = v_ws AND r.id = ANY (v_cand)
                         FOR UPDATE OF r SKIP LOCKED);
    CONTINUE WHEN pg_catalog.cardinality(v_locked) = 0;
    -- the trees (runs_root_idx); steps, approvals, messages, state and
    -- elicitations of these runs go with them (ON DELETE CASCADE)
    WITH d AS (
      DELETE FROM agent.runs x
       WHERE x.workspace_id = v_ws AND (x.root_run_id = ANY (v_locked) OR x.id = ANY (v_locked))
      RETURNING x.created_at)
    SELECT pg_catalog.count(*), pg_catalog.array_agg(DISTINCT pg_catalog.date_trunc('day', d.created_at, 'UTC'))
      INTO v_n, v_rdays FROM d;
    v_runs := v_runs + v_n;
    -- run_stats' rollup (955_rollup.sql): the days of these runs folded again
    IF to_regprocedure('agent._run_rollup_redo(text, timestamp with time zone[])') IS NOT NULL THEN
      EXECUTE 'SELECT agent._run_rollup_redo($1, $2)' USING v_ws, v_rdays;
    END IF;
    v_roots := coalesce(v_roots, '{}') || v_locked;
  END LOOP;

  -- conversation messages, where a module keeps them: its own purge, same
  -- cutoff and batch size (agent._purge_messages(cutoff, batch_size) returns
  -- how many it removed)
  IF pg_catalog.to_regprocedure('agent._purge_messages(timestamptz, integer)') IS NOT NULL THEN
    EXECUTE 'SELECT agent._purge_messages($1, $2)' INTO v_msgs USING v_cutoff, batch_size;
  END IF;

  IF v_runs > 0 OR coalesce(v_msgs, 0) > 0 THEN
    PERFORM agent._audit_event('run.purge', 'success', 'runs', NULL, NULL, NULL,
                               pg_catalog.jsonb_build_object('retention_days', v_days, 'roots', coalesce(pg_catalog.cardinality(v_roots), 0),
                                                             'runs', v_runs, 'messages', coalesce(v_msgs, 0)),
                               pg_catalog.format('purged %s runs (%s delegation trees) ended more than %s days ago',
                                                 v_runs, coalesce(pg_catalog.cardinality(v_roots), 0), v_days));
  END IF;
  RETURN v_runs;
END
$$;
REVOKE ALL ON FUNCTION agent.purge_runs(integer) FROM PUBLIC;
COMMENT ON FUNCTION agent.purge_runs(integer) IS
  'Deletes up to batch_size delegation trees whose every run ended (terminal status, finished_at) more than pg_agents.run_retention_days ago (0 keeps them forever), with their steps, approvals, messages and state; a tree with an active run, or a run ended since, is kept whole; trees locked by others are left for the next call. Returns the runs deleted (call again until 0). Recorded as run.purge. Superuser only.';
