-- pg_agents 0.3.0 -> 0.4.0, Citus routing of runs, worker, MCP, conversations and teams (routeb, issue 24):
-- the whole new definition of each function changed (every statement names its workspace).

CREATE OR REPLACE FUNCTION agent._lock_tree(p_root_run_id bigint, p_skip_locked boolean DEFAULT false)
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

CREATE OR REPLACE FUNCTION agent._lock_run(p_run_id bigint) RETURNS agent.runs
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

CREATE OR REPLACE FUNCTION agent._runs_add_step(p_run_id bigint, p_kind text, p_name text, p_input jsonb,
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

CREATE OR REPLACE FUNCTION agent._audit_run(p_action text, p_run agent.runs, p_status text DEFAULT 'success',
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

CREATE OR REPLACE FUNCTION agent._finish_runs_effects(p_rows agent.runs[]) RETURNS void
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

CREATE OR REPLACE FUNCTION agent._finish_run(p_run_id bigint, p_status text, p_output jsonb, p_error text)
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

CREATE OR REPLACE FUNCTION agent.start_run(agent_id bigint, requested_by text, input jsonb DEFAULT '{}',
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

CREATE OR REPLACE FUNCTION agent._queue_advance(p_ws text, p_prios smallint[]) RETURNS void
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

CREATE OR REPLACE FUNCTION agent.claim_runs(n int) RETURNS SETOF agent.runs
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
BEGIN
  IF n IS NULL OR n < 1 THEN
    RAISE EXCEPTION 'number of runs to claim must be positive'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_cap > 0 THEN
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('pg_agents.claim'), 0);
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
    -- 1. the workspaces with queued runs: a skip scan of runs_queue_ws_idx
    -- (one index descent per workspace, however many runs each has queued);
    -- on Citus, where a recursive query of a distributed table is refused,
    -- each shard's own
    IF v_dist IS NULL THEN
      v_dist := pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
      IF v_dist THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
                                 WHERE p.logicalrelid = ''agent.runs''::pg_catalog.regclass)' INTO v_dist;
      END IF;
    END IF;
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

CREATE OR REPLACE FUNCTION agent.renew_lease(run_id bigint) RETURNS timestamptz
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

CREATE OR REPLACE FUNCTION agent.wait_for_children(run_id bigint) RETURNS boolean
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

CREATE OR REPLACE FUNCTION agent.add_usage(run_id bigint, tokens_in int, tokens_out int, model text DEFAULT NULL)
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

CREATE OR REPLACE FUNCTION agent.rerun(run_id bigint, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o    agent.runs%ROWTYPE;
  a    agent.agents%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
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

CREATE OR REPLACE FUNCTION agent.cancel_run(run_id bigint, by_user text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r      agent.runs%ROWTYPE;
  v_need text;
  v_n    integer;
BEGIN
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

CREATE OR REPLACE FUNCTION agent._tick_runs(p_now timestamptz DEFAULT now()) RETURNS jsonb
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

CREATE OR REPLACE FUNCTION agent._worker_reclaim(p_worker_pid integer) RETURNS integer
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

CREATE OR REPLACE FUNCTION agent._worker_cleanup() RETURNS integer
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

CREATE OR REPLACE FUNCTION agent._worker_finish_replies(p_replies jsonb, p_lease_secs integer)
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

CREATE OR REPLACE FUNCTION agent.delegation_context(run_id bigint) RETURNS jsonb
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

CREATE OR REPLACE FUNCTION agent.request_approval(run_id bigint, tool text, input jsonb) RETURNS text
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

CREATE OR REPLACE FUNCTION agent._approval_to_decide(p_key text, p_by_user text, p_run_id bigint)
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

CREATE OR REPLACE FUNCTION agent._record_decision(ap agent.approvals, p_by_user text, p_decision text) RETURNS void
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

CREATE OR REPLACE FUNCTION agent.approve(approval_key text, by_user text, run_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  ap agent.approvals%ROWTYPE;
  r  agent.runs%ROWTYPE;
BEGIN
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

CREATE OR REPLACE FUNCTION agent.consume_approval(run_id bigint, tool text, input jsonb) RETURNS boolean
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

CREATE OR REPLACE FUNCTION agent.consume_refusal(run_id bigint, tool text, input jsonb) RETURNS jsonb
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

CREATE OR REPLACE FUNCTION agent._delegation_granted(p_parent_run_id bigint, p_child_run_id bigint,
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

CREATE OR REPLACE FUNCTION agent._delegation_refused(p_parent_run_id bigint, p_child_agent_id bigint, p_task text,
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

CREATE OR REPLACE FUNCTION agent.purge_runs(batch_size integer DEFAULT 1000) RETURNS bigint
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

CREATE OR REPLACE FUNCTION agent._teams_post(p_run agent.runs, p_sender text, p_body text, p_kind text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_kind text := coalesce(p_kind, CASE WHEN p_run.status = 'waiting_input' THEN 'answer' ELSE 'followup' END);
  v_seq  integer;
  v_id   bigint;
BEGIN
  IF p_body IS NULL OR btrim(p_body) = '' THEN
    RAISE EXCEPTION 'message must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT agent._run_is_active(p_run.status) THEN
    RAISE EXCEPTION 'run % has already ended', p_run.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run ended %s; messages go only to queued, running or waiting runs.', p_run.status),
            HINT = 'Start a new run (agent.start_run or agent.rerun) instead.';
  END IF;
  SELECT coalesce(max(m.seq), 0) + 1 INTO v_seq FROM agent.run_messages m
   WHERE m.workspace_id = p_run.workspace_id AND m.run_id = p_run.id;
  INSERT INTO agent.run_messages (workspace_id, run_id, seq, sender, kind, body)
  VALUES (p_run.workspace_id, p_run.id, v_seq, p_sender, v_kind, p_body)
  RETURNING id INTO v_id;
  IF p_run.status = 'waiting_input' AND v_kind = 'answer' THEN
    UPDATE agent.runs x SET status = 'queued', input_expires_at = NULL
     WHERE x.workspace_id = p_run.workspace_id AND x.id = p_run.id;
    PERFORM agent._audit_run('run.resume', p_run, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: answered by %s', p_run.id, p_sender));
    PERFORM agent._runs_notify(p_run.id, p_run.agent_id, 'queued');
  END IF;
  PERFORM agent._request_wake();
  RETURN v_id;
END
$$;

CREATE OR REPLACE FUNCTION agent.send_to_run(run_id bigint, message text, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  v_id    bigint;
  v_owner text;
BEGIN
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- a run of another workspace is an unknown run (agent._lock_run checks
  -- before any lock)
  r := agent._lock_run(send_to_run.run_id);
  IF NOT agent.user_can(by_user, r.agent_id, 'chat') THEN
    RAISE EXCEPTION 'user "%" may not send messages to run %', by_user, r.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Sending to a run requires the chat level on its agent.';
  END IF;
  v_id := agent._teams_post(r, 'user:' || by_user, message);
  SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id;
  PERFORM agent._audit_event('run.message', 'success', 'run', r.id::text, r.workspace_id, v_owner,
                             jsonb_build_object('message_id', v_id, 'by_user', by_user),
                             format('%s sent a message to run %s', by_user, r.id));
  RETURN v_id;
END
$$;

CREATE OR REPLACE FUNCTION agent._teams_send(p_from_run bigint, p_to_run bigint, p_message text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
BEGIN
  -- runs of another workspace (than the session's, or the sender's) are
  -- unknown (agent._lock_run checks before any lock)
  r := agent._lock_run(p_to_run);
  IF r.parent_run_id IS DISTINCT FROM p_from_run
     OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = r.workspace_id AND x.id = p_from_run) THEN
    RAISE EXCEPTION 'run % is not a child of run %', p_to_run, p_from_run
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A run sends messages only to the runs it delegated to.';
  END IF;
  RETURN agent._teams_post(r, 'run:' || p_from_run, p_message);
END
$$;

CREATE OR REPLACE FUNCTION agent._teams_ask_parent(p_run_id bigint, p_question text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r    agent.runs%ROWTYPE;
  p    agent.runs%ROWTYPE;
  v_id bigint;
BEGIN
  -- a run of another workspace is unknown (agent._lock_run checks before any lock)
  r := agent._lock_run(p_run_id);
  -- a parent of another workspace is no parent
  IF r.parent_run_id IS NULL
     OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = r.workspace_id AND x.id = r.parent_run_id) THEN
    RAISE EXCEPTION 'run % has no parent run', r.id USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF r.status <> 'running' THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state', DETAIL = format('It is %s.', r.status);
  END IF;
  SELECT * INTO p FROM agent.runs x WHERE x.workspace_id = r.workspace_id AND x.id = r.parent_run_id FOR UPDATE;
  v_id := agent._teams_post(p, 'run:' || r.id, p_question, 'question');
  -- a parent parked until its children end is woken up to see the question
  IF p.status = 'waiting_children' THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = p.workspace_id AND x.id = p.id RETURNING * INTO p;
    PERFORM agent._audit_run('run.resume', p, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: its child run %s asks a question', p.id, r.id));
    PERFORM agent._runs_notify(p.id, p.agent_id, 'queued');
  END IF;
  UPDATE agent.runs x SET status = 'waiting_input', lease_until = NULL,
         input_expires_at = now() + current_setting('pg_agents.approval_ttl')::interval
   WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
  PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_input', 'message_id', v_id),
                           format('run %s asks its parent run %s', r.id, p.id));
  PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_input');
  RETURN v_id;
END
$$;

CREATE OR REPLACE FUNCTION agent._teams_take_messages(p_run_id bigint, p_kind text DEFAULT NULL, p_limit integer DEFAULT NULL)
RETURNS SETOF agent.run_messages
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the run's workspace (Citus routes by it): the session's, else the run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  -- the time as a value (Citus refuses volatile functions in an UPDATE)
  v_at timestamptz := clock_timestamp();
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  RETURN QUERY
  WITH m AS (
    SELECT y.id FROM agent.run_messages y
     WHERE y.workspace_id = v_ws AND y.run_id = p_run_id AND y.delivered_at IS NULL
       AND (p_kind IS NULL OR y.kind = p_kind)
     ORDER BY y.seq LIMIT p_limit FOR UPDATE),
  u AS (
    UPDATE agent.run_messages x SET delivered_at = v_at
      FROM m WHERE x.workspace_id = v_ws AND x.id = m.id
    RETURNING x.*)
  SELECT * FROM u;
END
$$;

CREATE OR REPLACE FUNCTION agent._teams_step_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_label   text := NEW.kind || coalesce(':' || NEW.name, '');
  v_root    bigint;
BEGIN
  UPDATE agent.runs x SET current_step = v_label, preview = agent._teams_step_preview(NEW.kind, NEW.output)
   WHERE x.workspace_id = NEW.workspace_id AND x.id = NEW.run_id RETURNING coalesce(x.root_run_id, x.id) INTO v_root;
  -- (not from a Citus shard, whose node is not where the listeners are and
  -- whose NOTIFY makes the two-phase commit fail: docs/scaling.md)
  IF TG_TABLE_NAME = 'run_steps' THEN
    PERFORM pg_notify('agent_run_steps',
                      json_build_object('run_id', NEW.run_id, 'root_run_id', v_root, 'seq', NEW.seq,
                                        'step', v_label, 'status', NEW.status)::text);
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION agent._teams_steps_inserted() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ids      bigint[];
  v_wss      text[];
  v_labels   text[];
  v_previews text[];
  v_ws       text;
  v_n        bigint;
BEGIN
  -- each run shows its latest new step (as the row trigger would leave it)
  SELECT array_agg(l.run_id ORDER BY l.run_id), array_agg(l.workspace_id ORDER BY l.run_id),
         array_agg(l.label ORDER BY l.run_id), array_agg(l.preview ORDER BY l.run_id)
    INTO v_ids, v_wss, v_labels, v_previews
    FROM (SELECT DISTINCT ON (s.run_id) s.run_id, s.workspace_id, s.kind || coalesce(':' || s.name, '') AS label,
                 agent._teams_step_preview(s.kind, s.output) AS preview
            FROM new_steps s ORDER BY s.run_id, s.seq DESC) l;
  IF v_ids IS NULL THEN
    RETURN NULL;
  END IF;
  -- a run that shows it already (the worker's batch writes it with its own
  -- update) is left alone
  IF TG_TABLE_NAME = 'run_steps' THEN
    -- on the table itself: one statement, probing the primary key from each
    -- run of the arrays (the plan of the single-node bulk load: a statement
    -- that also filters on the workspace may be planned as a scan of the
    -- workspace's runs around a rescanned function scan, quadratic)
    UPDATE agent.runs x SET current_step = u.label, preview = u.preview
      FROM unnest(v_ids, v_wss, v_labels, v_previews) AS u(run_id, ws, label, preview)
     WHERE x.id = u.run_id AND x.workspace_id = u.ws
       AND (x.current_step IS DISTINCT FROM u.label OR x.preview IS DISTINCT FROM u.preview);
  ELSE
    -- on a Citus shard: workspace by workspace, each statement naming it
    -- (only co-located statements may run there)
    FOR v_ws IN SELECT DISTINCT w FROM unnest(v_wss) w LOOP
      WITH u AS (
        UPDATE agent.runs x SET current_step = u.label, preview = u.preview
          FROM unnest(v_ids, v_wss, v_labels, v_previews) AS u(run_id, ws, label, preview)
         WHERE x.workspace_id = v_ws AND u.ws = v_ws AND x.id = u.run_id
           AND (x.current_step IS DISTINCT FROM u.label OR x.preview IS DISTINCT FROM u.preview)
        RETURNING 1)
      SELECT count(*) INTO v_n FROM u;
    END LOOP;
  END IF;
  -- (not from a Citus shard, whose node is not where the listeners are and
  -- whose NOTIFY makes the two-phase commit fail: docs/scaling.md)
  IF TG_TABLE_NAME = 'run_steps' THEN
    PERFORM pg_notify('agent_run_steps',
                      json_build_object('run_id', n.run_id,
                                        'root_run_id', (SELECT coalesce(x.root_run_id, x.id) FROM agent.runs x
                                                         WHERE x.workspace_id = n.workspace_id AND x.id = n.run_id),
                                        'seq', n.seq, 'step', n.kind || coalesce(':' || n.name, ''),
                                        'status', n.status)::text)
       FROM new_steps n;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION agent.run_tree(root_run_id bigint)
RETURNS TABLE(run_id bigint, parent_run_id bigint, depth integer, agent_id bigint, agent_name text,
              status text, origin text, tokens_in bigint, tokens_out bigint, tokens_total bigint,
              current_step text, preview text, pending_messages bigint,
              created_at timestamptz, finished_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws text := agent._session_workspace();
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL THEN
    SELECT r.workspace_id INTO v_ws FROM agent.runs r WHERE r.id = run_tree.root_run_id;
  END IF;
  -- a run of another workspace than the session's is unknown (no rows), and
  -- a tree never crosses into another workspace
  RETURN QUERY
  WITH RECURSIVE t AS (
    SELECT r.*, ARRAY[r.id] AS path FROM agent.runs r
     WHERE r.workspace_id = v_ws AND r.id = run_tree.root_run_id
    UNION ALL
    SELECT c.*, t.path || c.id FROM agent.runs c JOIN t ON c.parent_run_id = t.id AND c.workspace_id = t.workspace_id
     WHERE c.workspace_id = v_ws)
  SELECT t.id, t.parent_run_id,
         t.depth - (SELECT r0.depth FROM agent.runs r0 WHERE r0.workspace_id = v_ws AND r0.id = run_tree.root_run_id),
         t.agent_id, a.name, t.status, t.origin, t.tokens_in, t.tokens_out, t.tokens_total,
         t.current_step, t.preview,
         (SELECT count(*) FROM agent.run_messages m
           WHERE m.workspace_id = v_ws AND m.run_id = t.id AND m.delivered_at IS NULL),
         t.created_at, t.finished_at
    FROM t JOIN agent.agents a ON a.workspace_id = v_ws AND a.id = t.agent_id
   ORDER BY t.path;
END
$$;

CREATE OR REPLACE FUNCTION agent.deny(approval_key text, by_user text, run_id bigint, reason text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  ap     agent.approvals%ROWTYPE;
  r      agent.runs%ROWTYPE;
  v_why  text := nullif(pg_catalog.btrim(deny.reason), '');
  v_ends boolean;
BEGIN
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

CREATE OR REPLACE FUNCTION agent.send_message(agent_id bigint, user_id text, text text,
                                   INOUT conversation_id bigint DEFAULT NULL, OUT run_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_text  text := text;
  v_conv  bigint := conversation_id;
  a       agent.agents%ROWTYPE;
  v_run   bigint;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_text IS NULL OR pg_catalog.btrim(v_text) = '' THEN
    RAISE EXCEPTION 'message text must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the agent's own
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = v_agent;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = v_agent;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', v_agent USING ERRCODE = 'undefined_object';
  END IF;
  IF v_conv IS NOT NULL THEN
    -- only the user's own chat with this agent can be continued; anything
    -- else (another user's, the autonomous log, another workspace's) does
    -- not exist
    PERFORM 1 FROM agent.conversations c
     WHERE c.workspace_id = a.workspace_id AND c.id = v_conv AND c.agent_id = a.id
       AND c.kind = 'chat' AND c.user_id = v_user
       FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'conversation % does not exist', v_conv USING ERRCODE = 'undefined_object';
    END IF;
  END IF;
  IF v_conv IS NULL THEN
    INSERT INTO agent.conversations AS c (workspace_id, agent_id, kind, user_id)
    VALUES (a.workspace_id, a.id, 'chat', v_user)
    RETURNING c.id INTO v_conv;
  END IF;
  -- the chat level is checked here (42501 without it; everything rolls back)
  v_run := agent.start_run(a.id, v_user,
                           pg_catalog.jsonb_build_object('message', v_text, 'conversation_id', v_conv),
                           'manual', 'chat');
  INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
  VALUES (a.workspace_id, v_conv, 'user', v_text, v_run, agent._message_tokens(v_text));
  send_message.conversation_id := v_conv;
  send_message.run_id := v_run;
END
$$;

CREATE OR REPLACE FUNCTION agent.conversation_messages(conversation_id bigint, user_id text)
RETURNS TABLE(message_id bigint, role text, content text, run_id bigint, tokens integer, created_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_conv  bigint := conversation_id;
  v_user  text := user_id;
  c       agent.conversations%ROWTYPE;
  v_level text;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  IF v_conv IS NULL THEN
    RAISE EXCEPTION 'conversation_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.conversations x WHERE x.id = v_conv;
  END IF;
  SELECT * INTO c FROM agent.conversations x WHERE x.workspace_id = v_ws AND x.id = v_conv;
  -- unknown, of another workspace, or not visible: nothing, indistinguishably
  IF c.id IS NULL THEN
    RETURN;
  END IF;
  v_level := agent._user_level(v_user, c.agent_id);
  IF v_level IS NULL
     OR (c.kind = 'chat' AND c.user_id <> v_user AND v_level <> 'full')
     OR (c.kind = 'autonomous' AND v_level NOT IN ('full', 'edit')) THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT m.id, m.role, m.content, m.run_id, m.tokens, m.created_at
    FROM agent.messages m
   WHERE m.workspace_id = c.workspace_id AND m.conversation_id = c.id
   ORDER BY m.id;
END
$$;

CREATE OR REPLACE FUNCTION agent.conversations_of(agent_id bigint, user_id text)
RETURNS TABLE(conversation_id bigint, kind text, conversation_user text, trigger_id bigint,
              messages bigint, created_at timestamptz, last_message_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_level text;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent) THEN
    RETURN;
  END IF;
  v_level := agent._user_level(v_user, v_agent);
  IF v_level IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT x.id, x.kind, x.user_id, x.trigger_id, x.n, x.created_at, x.last_at
    FROM (SELECT c.id, c.kind, c.user_id, c.trigger_id, c.created_at,
                 (SELECT pg_catalog.count(*) FROM agent.messages m
                   WHERE m.workspace_id = v_ws AND m.conversation_id = c.id) AS n,
                 coalesce((SELECT m.created_at FROM agent.messages m
                            WHERE m.workspace_id = v_ws AND m.conversation_id = c.id
                            ORDER BY m.id DESC LIMIT 1), c.created_at) AS last_at
            FROM agent.conversations c
           WHERE c.workspace_id = v_ws AND c.agent_id = v_agent
             AND ((c.kind = 'chat' AND (c.user_id = v_user OR v_level = 'full'))
                  OR (c.kind = 'autonomous' AND v_level IN ('full', 'edit')))) x
   ORDER BY x.last_at DESC, x.id DESC;
END
$$;

CREATE OR REPLACE FUNCTION agent._conversation_history(p_run_id bigint, p_window integer)
RETURNS TABLE(role text, content text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the run's workspace (Citus routes by it): the session's, else the run's own
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_own  bigint;
  v_conv bigint;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  SELECT m.id, m.conversation_id INTO v_own, v_conv
    FROM agent.runs r
    JOIN agent.conversations c ON c.workspace_id = r.workspace_id
                              AND c.id = (CASE WHEN (r.input ->> 'conversation_id') ~ '^[0-9]{1,18}$'
                                               THEN (r.input ->> 'conversation_id')::bigint END)
                              AND c.agent_id = r.agent_id
                              AND c.kind = 'chat' AND c.user_id = r.requested_by
    JOIN agent.messages m ON m.workspace_id = c.workspace_id AND m.conversation_id = c.id AND m.run_id = r.id
                         AND m.role = 'user'
   WHERE r.workspace_id = v_ws AND r.id = p_run_id AND r.regime = 'manual'
   ORDER BY m.id LIMIT 1;
  IF v_own IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
  WITH earlier AS (
    SELECT m.id, m.role, m.content,
           pg_catalog.sum(m.tokens) OVER (ORDER BY m.id DESC) AS used
      FROM agent.messages m
     WHERE m.workspace_id = v_ws AND m.conversation_id = v_conv AND m.id < v_own
       AND m.role IN ('user', 'assistant')
  ), kept AS (
    SELECT e.* FROM earlier e WHERE e.used <= greatest(p_window, 0)
  )
  SELECT k.role, k.content FROM kept k
   WHERE k.id >= (SELECT pg_catalog.min(u.id) FROM kept u WHERE u.role = 'user')
   ORDER BY k.id;
END
$$;

CREATE OR REPLACE FUNCTION agent._conversation_run_ended() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_conv    bigint;
  v_text    text;
  v_role    text;
  v_trig    bigint;
  v_tprompt text;
  v_start   text;
BEGIN
  IF NEW.status = 'succeeded' THEN
    v_role := 'assistant';
    v_text := coalesce(NEW.output ->> 'text', NEW.output #>> '{}', NEW.output::text, '');
  ELSE
    v_role := 'notice';
    v_text := pg_catalog.format('run %s ended %s%s', NEW.id, NEW.status,
                                coalesce(': ' || NEW.error, ''));
  END IF;
  IF NEW.regime = 'manual' THEN
    -- only a run made by agent.send_message: its user message is there
    SELECT m.conversation_id INTO v_conv
      FROM agent.messages m
     WHERE m.run_id = NEW.id AND m.role = 'user' AND m.workspace_id = NEW.workspace_id
       AND m.conversation_id = (CASE WHEN (NEW.input ->> 'conversation_id') ~ '^[0-9]{1,18}$'
                                     THEN (NEW.input ->> 'conversation_id')::bigint END)
     LIMIT 1;
    IF v_conv IS NULL THEN
      RETURN NULL;
    END IF;
    INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
    VALUES (NEW.workspace_id, v_conv, v_role, v_text, NEW.id, (pg_catalog.length(v_text) + 3) / 4);
    RETURN NULL;
  END IF;
  IF NEW.trigger_id IS NOT NULL THEN
    SELECT CASE WHEN t.conversation = 'trigger' THEN t.id END, t.prompt INTO v_trig, v_tprompt
      FROM agent.triggers t WHERE t.workspace_id = NEW.workspace_id AND t.id = NEW.trigger_id AND t.agent_id = NEW.agent_id;
  END IF;
  -- found, else made once (a concurrent first run waits on the unique index);
  -- every statement names the run's workspace (on Citus this trigger runs
  -- on the shard, where only co-located statements may run)
  SELECT c.id INTO v_conv FROM agent.conversations c
   WHERE c.workspace_id = NEW.workspace_id AND c.agent_id = NEW.agent_id AND c.kind = 'autonomous'
     AND coalesce(c.trigger_id, 0) = coalesce(v_trig, 0);
  IF v_conv IS NULL THEN
    INSERT INTO agent.conversations AS c (workspace_id, agent_id, kind, trigger_id)
    VALUES (NEW.workspace_id, NEW.agent_id, 'autonomous', v_trig)
    ON CONFLICT (agent_id, (coalesce(trigger_id, 0)), workspace_id) WHERE kind = 'autonomous' DO NOTHING
    RETURNING c.id INTO v_conv;
    IF v_conv IS NULL THEN
      SELECT c.id INTO v_conv FROM agent.conversations c
       WHERE c.workspace_id = NEW.workspace_id AND c.agent_id = NEW.agent_id AND c.kind = 'autonomous'
         AND coalesce(c.trigger_id, 0) = coalesce(v_trig, 0);
    END IF;
  END IF;
  -- what started it: the trigger label, and the prompt or the task (never
  -- the event payload, which may hold rows the reader may not see)
  v_start := agent._trigger_label(NEW.origin, NEW.input, NEW.trigger_id, NEW.parent_run_id)
             || coalesce(E'\n' || coalesce(NEW.input ->> 'prompt', v_tprompt, NEW.input ->> 'task'), '');
  -- both rows in one statement; no update of the conversation row, so that
  -- runs of one agent ending at once never wait on each other
  INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
  SELECT NEW.workspace_id, v_conv, v.role, v.content, NEW.id, (pg_catalog.length(v.content) + 3) / 4
    FROM (VALUES (1, 'trigger', v_start), (2, v_role, v_text)) AS v(n, role, content)
   ORDER BY v.n;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION agent._mcp_run_user(p_run_id bigint) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the run's workspace (Citus routes by it): the session's, else the run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  RETURN (SELECT CASE WHEN r.regime = 'manual' THEN r.requested_by ELSE a.owner_id END
            FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id
           WHERE r.workspace_id = v_ws AND r.id = p_run_id);
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint, user_id text)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the agent's workspace (Citus routes by it): the session's, else the agent's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_sp text[];
  v_tp text[];
  v_ap text[];
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = mcp_agent_tools.agent_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = mcp_agent_tools.agent_id;
  END IF;
  -- the agent's patterns once
  SELECT agent._mcp_like_patterns(x.scope->'mcp_servers'), agent._mcp_like_patterns(x.scope->'mcp_tools'),
         agent._mcp_like_patterns(x.scope->'needs_approval')
    INTO v_sp, v_tp, v_ap
    FROM agent.agents x
   WHERE x.workspace_id = v_ws AND x.id = mcp_agent_tools.agent_id AND x.deleted_at IS NULL;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT t.exposed_name, s.id, s.name, t.name, t.description, t.input_schema,
         t.needs_approval OR t.exposed_name LIKE ANY (v_ap),
         coalesce((t.annotations->>'readOnlyHint')::boolean, false)
    FROM agent.mcp_servers s
    JOIN agent.mcp_tools t ON t.workspace_id = s.workspace_id AND t.server_id = s.id
   WHERE s.workspace_id = v_ws
     AND (s.scope = 'workspace' OR (s.scope = 'user' AND s.owner_id = mcp_agent_tools.user_id))
     AND s.enabled
     AND (s.name LIKE ANY (v_sp) OR t.exposed_name LIKE ANY (v_tp))
   ORDER BY t.exposed_name;
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the agent's workspace (Citus routes by it): the session's, else the agent's own
  v_ws    text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_owner text;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = mcp_agent_tools.agent_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = mcp_agent_tools.agent_id;
  END IF;
  SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = mcp_agent_tools.agent_id;
  RETURN QUERY SELECT * FROM agent.mcp_agent_tools(mcp_agent_tools.agent_id, v_owner);
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_status(workspace_id text DEFAULT agent.current_workspace(),
                                 owner_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws  text := agent._session_workspace();
  v_srv jsonb;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NOT NULL AND v_ws IS DISTINCT FROM mcp_status.workspace_id THEN
    v_ws := NULL;  -- another workspace than the session's: nothing
  ELSE
    v_ws := mcp_status.workspace_id;
  END IF;
  -- the servers first, then their tools (each statement names the workspace)
  SELECT coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'name', m.name, 'enabled', m.enabled,
                                               'connected', m.enabled AND m.last_error IS NULL AND m.tools_refreshed_at IS NOT NULL,
                                               'last_error', m.last_error)), '[]')
    INTO v_srv
    FROM agent.mcp_servers m
   WHERE m.workspace_id = v_ws
     AND (m.scope = 'workspace' OR m.owner_id = mcp_status.owner_id);
  RETURN (
    WITH s AS (
      SELECT (e ->> 'id')::bigint AS id, e ->> 'name' AS name, (e ->> 'enabled')::boolean AS enabled,
             (e ->> 'connected')::boolean AS connected, e ->> 'last_error' AS last_error
        FROM jsonb_array_elements(v_srv) e
    ), t AS (
      SELECT s.name AS source, t.exposed_name, t.description
        FROM agent.mcp_tools t JOIN s ON s.id = t.server_id
       WHERE t.workspace_id = v_ws AND t.server_id = ANY (ARRAY(SELECT s.id FROM s WHERE s.connected))
    )
    SELECT jsonb_build_object(
      'configuredServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.enabled),
      'connectedServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.connected),
      'totalTools', (SELECT count(*) FROM t),
      'tools', (SELECT coalesce(jsonb_agg(jsonb_build_object('source', t.source, 'name', t.exposed_name,
                                                             'description', t.description)
                                          ORDER BY t.exposed_name), '[]') FROM t),
      'errors', (SELECT coalesce(jsonb_object_agg(s.name, s.last_error), '{}')
                   FROM s WHERE s.enabled AND s.last_error IS NOT NULL)));
END
$$;

CREATE OR REPLACE FUNCTION agent._mcp_oauth_apply(p_server_id bigint, p_token text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the server's workspace (Citus routes by it): the session's, else the server's own
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  -- the header built first (Citus takes no stable call in the UPDATE's CASE)
  v_auth jsonb := CASE WHEN p_token IS NOT NULL
                       THEN pg_catalog.jsonb_build_object('Authorization', 'Bearer ' || p_token) END;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.mcp_servers x WHERE x.workspace_id = v_ws AND x.id = p_server_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_servers x WHERE x.id = p_server_id;
  END IF;
  UPDATE agent.mcp_servers m
     SET headers = CASE WHEN v_auth IS NULL THEN m.headers - 'Authorization' ELSE m.headers || v_auth END
   WHERE m.workspace_id = v_ws AND m.id = p_server_id;
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_oauth_refresh_due(margin interval DEFAULT '5 minutes') RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  c record;
  r jsonb;
  n integer := 0;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws text := agent._session_workspace();
  v_due timestamptz := now() + margin;
BEGIN
  -- the due authorizations first (of the session's workspace, or of all for
  -- a session bound to none), then each locked in its workspace (Citus
  -- routes by it and refuses FOR UPDATE across workspaces)
  FOR c IN SELECT m.workspace_id, m.server_id FROM agent.mcp_oauth m
            WHERE (v_ws IS NULL OR m.workspace_id = v_ws)
              AND m.status = 'authorized' AND m.expires_at IS NOT NULL AND m.expires_at < v_due
            ORDER BY m.server_id LOOP
    SELECT * INTO o FROM agent.mcp_oauth m
     WHERE m.workspace_id = c.workspace_id AND m.server_id = c.server_id
       AND m.status = 'authorized' AND m.expires_at IS NOT NULL AND m.expires_at < v_due
       FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    IF o.state ? 'refresh_token' OR o.config->>'grant' = 'client_credentials' THEN
      r := agent._mcp_oauth_refresh(o.config, o.state);
    ELSE
      r := pg_catalog.jsonb_build_object('ok', false, 'error', 'the access token expired and there is no refresh token');
    END IF;
    IF (r->>'ok')::boolean THEN
      UPDATE agent.mcp_oauth m
         SET state = r->'state', expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision),
             last_error = NULL, updated_at = now()
       WHERE m.workspace_id = o.workspace_id AND m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, r->'state'->>'access_token');
      n := n + 1;
    ELSIF o.expires_at <= now() OR NOT (o.state ? 'refresh_token') THEN
      -- lapsed: the server's tools fail with a clear error, others go on
      UPDATE agent.mcp_oauth m
         SET status = 'lapsed', last_error = r->>'error', state = m.state - 'access_token' - 'refresh_token',
             updated_at = now()
       WHERE m.workspace_id = o.workspace_id AND m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, NULL);
      UPDATE agent.mcp_servers m
         SET last_error = 'authorization lapsed: ' || (r->>'error') || '; authorize again with agent.mcp_authorize'
       WHERE m.workspace_id = o.workspace_id AND m.id = o.server_id;
    ELSE
      UPDATE agent.mcp_oauth m SET last_error = r->>'error', updated_at = now()
       WHERE m.workspace_id = o.workspace_id AND m.server_id = o.server_id;
    END IF;
  END LOOP;
  RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the agent's workspace (Citus routes by it): the session's, else the agent's own
  v_ws    text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_owner text;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = mcp_agent_call.agent_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = mcp_agent_call.agent_id;
  END IF;
  SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = mcp_agent_call.agent_id;
  RETURN agent.mcp_agent_call(mcp_agent_call.agent_id, mcp_agent_call.exposed_name, mcp_agent_call.arguments, v_owner);
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_authorize(server_id bigint, by_user text, redirect_uri text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_problem text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = mcp_authorize.server_id;
  IF NOT FOUND OR NOT agent._workspace_ok(s.workspace_id) THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_authorize.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF s.scope = 'user' AND s.owner_id IS DISTINCT FROM by_user THEN
    RAISE EXCEPTION 'user "%" may not authorize the personal MCP server "%"', by_user, s.name
      USING ERRCODE = 'insufficient_privilege', DETAIL = 'A personal server is authorized by its owner.';
  END IF;
  SELECT * INTO o FROM agent.mcp_oauth m WHERE m.workspace_id = s.workspace_id AND m.server_id = s.id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server "%" does not use OAuth', s.name
      USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Configure it with agent.mcp_set_oauth first.';
  END IF;
  IF coalesce(o.config->>'grant', '') <> 'client_credentials' THEN
    v_problem := agent._mcp_url_problem(redirect_uri);
    IF redirect_uri IS NULL OR v_problem IS NOT NULL THEN
      RAISE EXCEPTION 'redirect URI is not allowed'
        USING ERRCODE = 'invalid_parameter_value', DETAIL = coalesce(v_problem, 'A redirect URI is required.');
    END IF;
  END IF;
  r := agent._mcp_oauth_begin(s.url,
                              o.config || CASE WHEN redirect_uri IS NULL THEN '{}'::jsonb
                                               ELSE pg_catalog.jsonb_build_object('redirect_uri', redirect_uri) END,
                              o.state);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_oauth m SET last_error = r->>'error', updated_at = now() WHERE m.server_id = s.id;
    RAISE EXCEPTION 'could not start the authorization of MCP server "%"', s.name
      USING ERRCODE = 'connection_failure', DETAIL = r->>'error';
  END IF;
  IF coalesce((r->>'authorized')::boolean, false) THEN
    -- client credentials: authorized at once
    UPDATE agent.mcp_oauth m
       SET state = r->'state', status = 'authorized', pending_state = NULL, pending_by_user = NULL,
           pending_at = NULL, authorized_by = by_user, authorized_at = now(),
           expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision), last_error = NULL,
           updated_at = now()
     WHERE m.server_id = s.id;
    PERFORM agent._mcp_oauth_apply(s.id, r->'state'->>'access_token');
    UPDATE agent.mcp_servers m SET last_error = NULL WHERE m.id = s.id;
    PERFORM agent.mcp_refresh(s.id);
    RETURN NULL;
  END IF;
  UPDATE agent.mcp_oauth m
     SET state = (r->'state') || pg_catalog.jsonb_build_object('redirect_uri', redirect_uri),
         status = CASE WHEN m.status = 'authorized' THEN m.status ELSE 'pending' END,
         pending_state = r->>'oauth_state', pending_by_user = by_user, pending_at = now(),
         last_error = NULL, updated_at = now()
   WHERE m.server_id = s.id;
  RETURN r->>'authorization_url';
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_authorization_callback(state text, code text, iss text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_name text;
  v_ws text;
BEGIN
  IF state IS NULL OR state = '' THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the state's workspace first, then the row locked in it (Citus routes by it)
  SELECT m.workspace_id INTO v_ws FROM agent.mcp_oauth m WHERE m.pending_state = mcp_authorization_callback.state;
  SELECT * INTO o FROM agent.mcp_oauth m
   WHERE m.workspace_id = v_ws AND m.pending_state = mcp_authorization_callback.state FOR UPDATE;
  IF NOT FOUND OR NOT agent._workspace_ok(o.workspace_id)
     OR o.pending_at < now() - pg_catalog.current_setting('pg_agents.approval_ttl')::interval THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT m.name INTO v_name FROM agent.mcp_servers m WHERE m.id = o.server_id;
  -- single use: whatever comes of it, this state is spent
  UPDATE agent.mcp_oauth m SET pending_state = NULL WHERE m.server_id = o.server_id;
  r := agent._mcp_oauth_complete(o.config || pg_catalog.jsonb_build_object('redirect_uri', o.state->>'redirect_uri'),
                                 o.state, coalesce(code, ''), state, iss);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_oauth m
       SET last_error = r->>'error', pending_by_user = NULL, pending_at = NULL,
           status = CASE WHEN m.status = 'pending' THEN 'unauthorized' ELSE m.status END,
           state = m.state - 'state' - 'verifier', updated_at = now()
     WHERE m.server_id = o.server_id;
    RAISE WARNING 'the authorization of MCP server "%" failed', v_name
      USING DETAIL = r->>'error';
    RETURN false;
  END IF;
  UPDATE agent.mcp_oauth m
     SET state = r->'state', status = 'authorized', pending_by_user = NULL, pending_at = NULL,
         authorized_by = o.pending_by_user, authorized_at = now(),
         expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision),
         last_error = NULL, updated_at = now()
   WHERE m.server_id = o.server_id;
  PERFORM agent._mcp_oauth_apply(o.server_id, r->'state'->>'access_token');
  UPDATE agent.mcp_servers m SET last_error = NULL WHERE m.id = o.server_id;
  PERFORM agent.mcp_refresh(o.server_id);
  RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_agent_call_input(agent_id bigint, run_id bigint, exposed_name text,
                                           arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  e agent.mcp_elicitations%ROWTYPE;
  r jsonb;
  v_key text;
  v_ws text;
BEGIN
  SELECT m.server_id, m.tool INTO v_server_id, v_tool
    FROM agent.mcp_agent_tools(mcp_agent_call_input.agent_id, agent._mcp_run_user(mcp_agent_call_input.run_id)) m
   WHERE m.exposed_name = mcp_agent_call_input.exposed_name;
  IF v_server_id IS NULL THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));   -- the refusal, as there
  END IF;
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = v_server_id;
  -- only the stateless generation asks its questions this way: any other
  -- server goes the usual way, with the session kept per server and process
  IF s.protocol_version IS DISTINCT FROM '2026-07-28' THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));
  END IF;
  IF arguments IS NULL OR pg_catalog.jsonb_typeof(arguments) <> 'object' THEN
    arguments := '{}';
  END IF;
  v_key := agent.approval_key(exposed_name, arguments);
  -- an answered question of this run for this very call: send it (in the
  -- server's workspace, the run's: Citus routes by it)
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.workspace_id = s.workspace_id AND x.run_id = mcp_agent_call_input.run_id AND x.approval_key = v_key
     AND x.status = 'answered'
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF FOUND THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    PERFORM agent.consume_approval(run_id, exposed_name, arguments);
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, e.response, e.request_state);
  ELSE
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, NULL, NULL);
  END IF;
  IF coalesce((r->>'input_required')::boolean, false) THEN
    IF pg_catalog.jsonb_typeof(r->'input_requests') IS DISTINCT FROM 'object' THEN
      RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                           'result', agent._mcp_failed_result(r->>'error'));
    END IF;
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = mcp_agent_call_input.run_id;
    v_key := agent.request_approval(run_id, exposed_name, arguments);
    INSERT INTO agent.mcp_elicitations (workspace_id, run_id, approval_key, server_id, exposed_name,
                                        input_requests, request_state, expires_at)
    VALUES (v_ws, run_id, v_key, s.id, exposed_name, r->'input_requests', r->>'request_state',
            now() + pg_catalog.current_setting('pg_agents.approval_ttl')::interval);
    RETURN pg_catalog.jsonb_build_object('ok', false, 'paused', true, 'server', s.name, 'tool', v_tool,
                                         'approval_key', v_key,
                                         'questions', (SELECT pg_catalog.jsonb_agg(q.value->'params'->>'message')
                                                         FROM pg_catalog.jsonb_each(r->'input_requests') q));
  END IF;
  IF (r->>'ok')::boolean THEN
    RETURN pg_catalog.jsonb_build_object('ok', NOT coalesce((r->'result'->>'isError')::boolean, false),
                                         'server', s.name, 'tool', v_tool, 'result', r->'result');
  END IF;
  RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                       'result', agent._mcp_failed_result(r->>'error', r->'rpc_error'));
END
$$;

CREATE OR REPLACE FUNCTION agent.answer_elicitation(key text, response jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_answers jsonb := '{}';
  v_one boolean;
  k text;
  q jsonb;
  v_ws text;
BEGIN
  -- the session's workspace, else (a superuser session bound to none) that
  -- of the key's latest pending question; then the row locked in it
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_elicitations x
     WHERE x.approval_key = answer_elicitation.key AND x.status = 'pending' ORDER BY x.id DESC LIMIT 1;
  END IF;
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.workspace_id = v_ws AND x.approval_key = answer_elicitation.key AND x.status = 'pending' AND x.expires_at > now()
     AND EXISTS (SELECT 1 FROM agent.runs r WHERE r.workspace_id = x.workspace_id AND r.id = x.run_id
                    AND r.status = CASE WHEN x.live THEN 'running' ELSE 'waiting_approval' END)
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no pending elicitation with key "%"', key USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- one question: the answer itself; several: {input key: answer}
  v_one := (SELECT count(*) FROM pg_catalog.jsonb_object_keys(e.input_requests)) = 1;
  FOR k, q IN SELECT * FROM pg_catalog.jsonb_each(e.input_requests) LOOP
    v_answers := v_answers || pg_catalog.jsonb_build_object(k,
                   agent._mcp_elicit_result(q, CASE WHEN v_one AND response ? 'action' THEN response ELSE response->k END));
  END LOOP;
  UPDATE agent.mcp_elicitations x
     SET status = 'answered', response = v_answers, answered_by = by_user, answered_at = now()
   WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
  -- the run resumes like on an approval (edit level on the agent required);
  -- a live question's run never stopped: the worker sends the answer on the
  -- server's open stream (agent._mcp_worker_elicit_poll)
  RETURN agent.approve(e.approval_key, by_user, e.run_id);
END
$$;

CREATE OR REPLACE FUNCTION agent._mcp_worker_prepare(p_run_id bigint, p_exposed_name text, p_arguments jsonb,
                                          p_server_id bigint, p_tool text, p_input_schema jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  e agent.mcp_elicitations%ROWTYPE;
  v_key text;
  v_out jsonb;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = p_server_id AND m.enabled;
  IF NOT FOUND THEN
    RETURN pg_catalog.jsonb_build_object('ok', false, 'denied', true,
                                         'error', pg_catalog.format('tool "%s" is not available to this agent', p_exposed_name),
                                         'result', agent._mcp_failed_result(pg_catalog.format('tool "%s" is not available to this agent', p_exposed_name)));
  END IF;
  IF p_arguments IS NULL OR pg_catalog.jsonb_typeof(p_arguments) <> 'object' THEN
    p_arguments := '{}';
  END IF;
  v_out := pg_catalog.jsonb_build_object('prepared', true, 'server_id', s.id, 'server', s.name, 'tool', p_tool,
                                         'url', s.url, 'headers', s.headers,
                                         'protocol_version', s.protocol_version, 'arguments', p_arguments,
                                         'tool_def', pg_catalog.jsonb_build_object('name', p_tool, 'inputSchema', p_input_schema));
  IF s.protocol_version = '2026-07-28' THEN
    -- an answered question of this run for this very call: sent with it
    v_key := agent.approval_key(p_exposed_name, p_arguments);
    SELECT * INTO e FROM agent.mcp_elicitations x
     WHERE x.workspace_id = s.workspace_id AND x.run_id = p_run_id AND x.approval_key = v_key AND x.status = 'answered'
     ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
    IF FOUND THEN
      UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
      PERFORM agent.consume_approval(p_run_id, p_exposed_name, p_arguments);
      v_out := v_out || pg_catalog.jsonb_build_object('input_responses', e.response,
                                                      'request_state', e.request_state);
    END IF;
  END IF;
  RETURN v_out;
END
$$;

CREATE OR REPLACE FUNCTION agent._mcp_worker_elicit_poll(p_id bigint, p_expire boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_ap text;
  v_out jsonb;
  -- the question's workspace (Citus routes by it): the session's, else its own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.mcp_elicitations x WHERE x.workspace_id = v_ws AND x.id = p_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_elicitations x WHERE x.id = p_id;
  END IF;
  SELECT * INTO e FROM agent.mcp_elicitations x WHERE x.workspace_id = v_ws AND x.id = p_id AND x.live FOR UPDATE;
  IF NOT FOUND OR e.status IN ('consumed', 'expired') THEN
    RETURN '{"action": "cancel"}';
  END IF;
  IF e.status = 'answered' THEN
    v_out := (SELECT v.value FROM pg_catalog.jsonb_each(e.response) v LIMIT 1);
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN coalesce(v_out, '{"action": "cancel"}');
  END IF;
  SELECT p.status INTO v_ap FROM agent.approvals p
   WHERE p.run_id = e.run_id AND p.approval_key = e.approval_key ORDER BY p.id DESC LIMIT 1;
  -- decided as an approval, not answered: denied is a decline, approved
  -- without content a cancel (no form was filled in)
  IF v_ap = 'denied' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "decline"}', answered_at = now()
     WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN '{"action": "decline"}';
  END IF;
  IF v_ap = 'approved' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "cancel"}', answered_at = now()
     WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN '{"action": "cancel"}';
  END IF;
  IF coalesce(p_expire, false) OR e.expires_at <= now() OR v_ap = 'expired' THEN
    UPDATE agent.mcp_elicitations x SET status = 'expired', response = '{"action": "cancel"}' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    UPDATE agent.approvals p SET status = 'expired', decided_at = now()
     WHERE p.run_id = e.run_id AND p.approval_key = e.approval_key AND p.status = 'pending';
    PERFORM agent._audit_event('approval.expire', 'success', 'approval', e.id::text, e.workspace_id, NULL,
                               pg_catalog.jsonb_build_object('run_id', e.run_id, 'tool', e.exposed_name,
                                                             'approval_key', e.approval_key, 'elicitation', true),
                               pg_catalog.format('question of %s on run %s expired: cancel sent to the server',
                                                 e.exposed_name, e.run_id));
    RETURN '{"action": "cancel"}';
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION agent._teams_manage_jobs(p_run_id bigint, p_action text, p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  a       agent.agents%ROWTYPE;
  t       agent.triggers%ROWTYPE;
  v_user  text;
  v_scope text := coalesce(p_args->>'scope', 'personal');
  v_sched text := p_args->>'schedule';
  v_tz    text := coalesce(p_args->>'timezone', 'UTC');
  v_job   bigint;
BEGIN
  SELECT * INTO r FROM agent.runs x WHERE x.id = p_run_id;
  -- a run of another workspace is an unknown run
  IF NOT agent._workspace_ok(r.workspace_id) OR r.id IS NULL THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = r.workspace_id AND x.id = r.agent_id;
  v_user := coalesce(r.requested_by, a.owner_id);
  IF p_action = 'list' THEN
    RETURN jsonb_build_object('jobs', coalesce((
      SELECT jsonb_agg(jsonb_build_object('job_id', x.id, 'schedule', x.schedule, 'timezone', x.timezone,
                                          'description', agent.cron_describe(x.schedule), 'prompt', x.prompt,
                                          'enabled', x.enabled,
                                          'scope', CASE x.run_as WHEN 'shared' THEN 'shared' ELSE 'personal' END,
                                          'created_by', x.created_by, 'next_run_at', x.next_run_at,
                                          'last_status', x.last_status) ORDER BY x.id)
        FROM agent.triggers x
       WHERE x.workspace_id = a.workspace_id AND x.agent_id = a.id AND x.kind = 'schedule'
         AND (x.run_as = 'shared' OR x.created_by IS NOT DISTINCT FROM v_user)), '[]'));
  ELSIF p_action = 'create' THEN
    IF v_scope NOT IN ('personal', 'shared') THEN
      RAISE EXCEPTION 'invalid job scope "%"', v_scope
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A job is personal or shared.';
    END IF;
    IF v_sched IS NULL OR NOT agent.cron_valid(v_sched) THEN
      RAISE EXCEPTION 'invalid schedule "%"', coalesce(v_sched, 'NULL')
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A schedule is a 5-field cron expression.';
    END IF;
    INSERT INTO agent.triggers (workspace_id, agent_id, kind, schedule, timezone, prompt, run_as, created_by)
    VALUES (a.workspace_id, a.id, 'schedule', v_sched, v_tz, p_args->>'prompt',
            CASE v_scope WHEN 'shared' THEN 'shared' ELSE 'creator' END, v_user)
    RETURNING * INTO t;
  ELSIF p_action IN ('update', 'delete') THEN
    v_job := (p_args->>'job_id')::bigint;
    SELECT * INTO t FROM agent.triggers x
     WHERE x.workspace_id = a.workspace_id AND x.id = v_job AND x.agent_id = a.id AND x.kind = 'schedule'
       AND (x.run_as = 'shared' OR x.created_by IS NOT DISTINCT FROM v_user)
     FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'job % does not exist', coalesce(v_job::text, 'NULL')
        USING ERRCODE = 'undefined_object', DETAIL = 'Only this agent''s schedules you can see can be changed.';
    END IF;
    IF t.created_by IS DISTINCT FROM v_user AND NOT agent.user_can(v_user, a.id, 'delete') THEN
      RAISE EXCEPTION 'user "%" may not change shared job %', v_user, t.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Only the job''s creator or a user with the full level on the agent may change a shared job.';
    END IF;
    IF p_action = 'delete' THEN
      DELETE FROM agent.triggers x WHERE x.id = t.id;
      PERFORM agent._audit_event('job.delete', 'success', 'trigger', t.id::text, a.workspace_id, a.owner_id,
                                 jsonb_build_object('agent_id', a.id, 'run_id', p_run_id, 'by_user', v_user,
                                                    'schedule', t.schedule),
                                 format('run %s deleted job %s', p_run_id, t.id));
      RETURN jsonb_build_object('job_id', t.id, 'deleted', true);
    END IF;
    IF v_sched IS NOT NULL AND NOT agent.cron_valid(v_sched) THEN
      RAISE EXCEPTION 'invalid schedule "%"', v_sched
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A schedule is a 5-field cron expression.';
    END IF;
    IF p_args ? 'scope' AND v_scope NOT IN ('personal', 'shared') THEN
      RAISE EXCEPTION 'invalid job scope "%"', v_scope
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A job is personal or shared.';
    END IF;
    UPDATE agent.triggers x
       SET schedule = coalesce(v_sched, x.schedule),
           timezone = coalesce(p_args->>'timezone', x.timezone),
           prompt = coalesce(p_args->>'prompt', x.prompt),
           enabled = coalesce((p_args->>'enabled')::boolean, x.enabled),
           run_as = CASE WHEN p_args ? 'scope' THEN CASE v_scope WHEN 'shared' THEN 'shared' ELSE 'creator' END
                         ELSE x.run_as END,
           updated_at = now()
     WHERE x.id = t.id RETURNING * INTO t;
  ELSE
    RAISE EXCEPTION 'unknown manage_jobs action "%"', coalesce(p_action, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'An action is create, list, update or delete.';
  END IF;
  PERFORM agent._audit_event('job.' || p_action, 'success', 'trigger', t.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('agent_id', a.id, 'run_id', p_run_id, 'by_user', v_user,
                                                'schedule', t.schedule),
                             format('run %s %sd job %s', p_run_id, p_action, t.id));
  RETURN jsonb_build_object('job_id', t.id, 'schedule', t.schedule, 'timezone', t.timezone,
                            'description', agent.cron_describe(t.schedule), 'prompt', t.prompt,
                            'enabled', t.enabled,
                            'scope', CASE t.run_as WHEN 'shared' THEN 'shared' ELSE 'personal' END,
                            'next_run_at', t.next_run_at);
END
$$;

CREATE OR REPLACE FUNCTION agent.mcp_set_oauth(server_id bigint, config jsonb DEFAULT '{}') RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  k text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = mcp_set_oauth.server_id;
  IF NOT FOUND OR NOT agent._workspace_ok(s.workspace_id) THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_set_oauth.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF config IS NULL OR pg_catalog.jsonb_typeof(config) <> 'object' THEN
    RAISE EXCEPTION 'OAuth configuration must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k IN SELECT pg_catalog.jsonb_object_keys(config) LOOP
    IF NOT k = ANY (ARRAY['client_id', 'client_secret', 'client_metadata_url', 'scope', 'grant',
                          'private_key_pem', 'signing_alg', 'auth_method']) THEN
      RAISE EXCEPTION 'unknown OAuth setting "%"', k
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'The settings are client_id, client_secret, client_metadata_url, scope, grant, private_key_pem, signing_alg and auth_method.';
    END IF;
    IF pg_catalog.jsonb_typeof(config->k) <> 'string' THEN
      RAISE EXCEPTION 'OAuth setting "%" must be a string', k USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;
  IF config->>'grant' IS NOT NULL AND NOT (config->>'grant' IN ('authorization_code', 'client_credentials')) THEN
    RAISE EXCEPTION 'OAuth grant must be authorization_code or client_credentials' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF config->>'grant' = 'client_credentials' AND config->>'client_id' IS NULL THEN
    RAISE EXCEPTION 'the client credentials grant needs a client_id' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO agent.mcp_oauth AS o (server_id, workspace_id, config)
  VALUES (s.id, s.workspace_id, config)
  ON CONFLICT ON CONSTRAINT mcp_oauth_pkey DO UPDATE
     SET config = EXCLUDED.config, state = '{}', status = 'unauthorized', pending_state = NULL,
         pending_by_user = NULL, pending_at = NULL, expires_at = NULL, last_error = NULL,
         updated_at = EXCLUDED.updated_at;  -- its default, now() (Citus takes no call in DO UPDATE SET)
  PERFORM agent._mcp_oauth_apply(s.id, NULL);
END
$$;
