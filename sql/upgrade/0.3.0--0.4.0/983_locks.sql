-- 0.3.0 -> 0.4.0: issue 30, finding 7 (helper locks): no lock any role can
-- take.  The hourly cap, claims under pg_agents.max_runs_per_workspace, the
-- tick's periodic work and the creation of a workspace's assistant take row
-- locks of agent.locks (sql/src/020_locks.sql, made by 983_locks.include)
-- instead of advisory locks whose keys anyone can compute.  The whole new
-- definition of every function that took one, and the distribution plan
-- (agent.locks is local).

CREATE OR REPLACE FUNCTION agent._enqueue_run(p_agent_id bigint, p_regime text, p_origin text,
                                   p_input jsonb DEFAULT '{}',
                                   p_trigger_id bigint DEFAULT NULL,
                                   p_requested_by text DEFAULT NULL,
                                   p_parent_run_id bigint DEFAULT NULL,
                                   p_token_budget bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'pg_agents_enqueue_run';
-- C (src/enqueue.c), with kept plans: the agent (of the session's workspace,
-- or its own: a session bound to none, such as agent.tick's, or an event of
-- a row of another workspace than the session's: the callers check the
-- boundary; every statement names the workspace), the parent run of a
-- child, for an autonomous run the hourly cap (one queue decision at a time
-- per agent: the agent's row of agent.locks FOR UPDATE, made by agent._lock
-- on its first queueing; the recent runs counted once a transaction, up to
-- the cap, then carried by agent._cap_memo's memo), the id taken first (a
-- root run is its own root), the run row (budget_exceeded and finished at
-- once past the cap), NOTIFY agent_runs and the worker's wake-up at commit.
REVOKE ALL ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) IS
  'Internal: queues one run (hourly cap for autonomous runs, NOTIFY agent_runs, worker wake-up at commit); the one path every origin uses.';

-- ---------------------------------------------------------------------------
-- The API trigger (issue 31): an application starts a run of a trigger of
-- kind api on behalf of a user.  The run is manual (it acts as by_user, who
-- needs the chat level), origin api, linked to the trigger; it goes through
-- the one queue (agent._enqueue_run), the agent's hourly run cap (counted
-- over its autonomous runs and its API-trigger runs of the last hour) and the
-- deduplication of events: the same payload fired again through the same
-- trigger within pg_agents.dedup_window queues nothing and returns the first
-- run's id.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION agent.fire_trigger(trigger_id bigint, by_user text, payload jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  t        agent.triggers%ROWTYPE;
  a        agent.agents%ROWTYPE;
  v_ws     text := agent._session_workspace();
  v_cap    integer;
  v_recent bigint;
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '0')::interval;
  v_fp     text;
  v_now    timestamptz := now();
  v_cutoff timestamptz;
  v_new    integer;
  v_id     bigint;
BEGIN
  IF trigger_id IS NULL THEN
    RAISE EXCEPTION 'trigger_id must not be null' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'an API trigger run needs the requesting user'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The run is manual: it acts as the user who fired the trigger (by_user).';
  END IF;
  IF payload IS NOT NULL AND jsonb_typeof(payload) <> 'object' THEN
    RAISE EXCEPTION 'trigger payload must be a json object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the trigger's own
    SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = trigger_id;
  END IF;
  -- a trigger of another workspace does not exist for this session
  SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = trigger_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'trigger % does not exist', trigger_id USING ERRCODE = 'undefined_object';
  END IF;
  IF t.kind <> 'api' THEN
    RAISE EXCEPTION 'trigger % is of kind %, not api', trigger_id, t.kind
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only a trigger of kind api is fired through agent.fire_trigger; events, schedules and mentions fire the others.';
  END IF;
  IF NOT t.enabled THEN
    RAISE EXCEPTION 'trigger % is disabled', trigger_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Enable it in the agent''s settings (agent.save_settings).';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = t.workspace_id AND x.id = t.agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', t.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF a.status = 'suspended' THEN
    RAISE EXCEPTION 'agent % is suspended', a.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'A suspended agent is started by no trigger; chat still works.';
  END IF;
  IF NOT coalesce(agent.user_can(by_user, a.id, 'chat'), false) THEN
    RAISE EXCEPTION 'user "%" may not run agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Firing an API trigger requires the interact level or higher on the agent.';
  END IF;
  -- deduplication, as for events: the first transaction to insert the
  -- fingerprint wins, a concurrent one waits for it
  IF v_window > interval '0' THEN
    -- the time and the cutoff as values: Citus refuses now() in the conflict
    -- clause of a distributed table
    v_fp := 'api:' || md5(coalesce(payload, '{}')::text);
    v_cutoff := v_now - v_window;
    INSERT INTO agent.event_dedup AS d (workspace_id, trigger_id, fingerprint, seen_at)
    VALUES (t.workspace_id, t.id, v_fp, v_now)
    ON CONFLICT ON CONSTRAINT event_dedup_pkey DO UPDATE SET seen_at = excluded.seen_at
      WHERE d.seen_at <= v_cutoff
    RETURNING 1 INTO v_new;
    IF v_new IS NULL THEN
      SELECT r.id INTO v_id FROM agent.runs r
       WHERE r.workspace_id = t.workspace_id AND r.trigger_id = t.id AND r.origin = 'api'
         AND r.input -> 'payload' = coalesce(payload, '{}')
       ORDER BY r.id DESC LIMIT 1;
      IF v_id IS NOT NULL THEN
        RETURN v_id;
      END IF;
    END IF;
  END IF;
  -- the hourly cap: one decision at a time per agent (the lock of
  -- agent._enqueue_run), counting stops at the cap
  v_cap := coalesce(a.hourly_run_cap, current_setting('pg_agents.hourly_run_cap')::integer);
  PERFORM agent._lock('cap', a.id::text);
  SELECT count(*) INTO v_recent FROM (
    SELECT 1 FROM agent.runs r
     WHERE r.workspace_id = a.workspace_id AND r.agent_id = a.id
       AND (r.regime = 'autonomous' OR (r.origin = 'api' AND r.trigger_id IS NOT NULL))
       AND r.created_at > now() - interval '1 hour' AND r.status <> 'budget_exceeded'
     LIMIT v_cap) s;
  IF v_recent >= v_cap THEN
    RAISE EXCEPTION 'hourly run cap of % reached for agent %', v_cap, a.id
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = 'Runs of API triggers count with the agent''s autonomous runs against its hourly run cap.';
  END IF;
  v_id := agent._enqueue_run(a.id, 'manual', 'api',
            jsonb_build_object('event', 'api.fired', 'resource_type', 'trigger', 'resource_id', t.id::text,
                               'actor', 'user:' || by_user, 'prompt', t.prompt,
                               'payload', coalesce(payload, '{}')),
            t.id, by_user);
  UPDATE agent.triggers x SET last_run_at = now() WHERE x.workspace_id = t.workspace_id AND x.id = t.id;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent.fire_trigger(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.fire_trigger(bigint, text, jsonb) IS
  'Fires a trigger of kind api for by_user (who needs the chat level on the agent): queues a manual run, origin api, with the payload as its input; the agent''s hourly run cap and pg_agents.dedup_window apply as for events (the same payload again returns the first run''s id). A trigger of another workspace is 42704; another kind 42809; a disabled trigger or a suspended agent 55000.';

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

CREATE OR REPLACE FUNCTION agent.tick(now timestamptz DEFAULT now()) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_now    timestamptz := $1;
  r        agent._tick_slot;
  v_due    agent._tick_slot[];      -- the due rows, in (due, id) order
  v_made   agent._tick_outcome[];   -- the runs of the set-based path
  v_done   agent._tick_outcome[] := '{}';   -- the per-trigger path's results
  v_run    bigint;
  v_next   timestamptz;
  v_err    text;
  v_stat   text;
  v_rerr   text;
  v_nmade  integer := 0;
  v_batch  boolean := false;
  v_oktz   text[] := '{}';
  v_tz     text;
  v_nlive  integer;
  v_runids bigint[];
  v_seq    regclass;
BEGIN
  IF v_now IS NULL THEN
    RAISE EXCEPTION 'tick needs a time' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- The set-based path runs in one subtransaction that also takes the row
  -- locks (locks and writes under one transaction id: no MultiXact per row).
  -- Should anything in it fail, it is undone as a whole and every due
  -- schedule goes through the per-trigger path below.
  BEGIN
    SELECT array_agg(d ORDER BY d.due, d.id) INTO v_due FROM agent._tick_due(v_now) d;

    IF v_due IS NOT NULL THEN
      -- Which rows the set-based path may take: cron_next cannot fail on them
      -- (valid expression, known time zone, finite now).  Zones are few: each
      -- distinct one is tried once.
      FOR v_tz IN SELECT DISTINCT u.timezone FROM unnest(v_due) AS u WHERE u.timezone IS NOT NULL LOOP
        BEGIN
          PERFORM agent.cron_next('* * * * *', timestamptz '2000-01-01 00:00Z', v_tz);
          v_oktz := v_oktz || v_tz;
        EXCEPTION WHEN OTHERS THEN
          NULL;   -- its rows take the per-trigger path, which records the error
        END;
      END LOOP;
      SELECT array_agg(ROW(u.id, u.agent_id, u.schedule, u.timezone, u.prompt, u.due, u.created_by, u.live,
                           coalesce(isfinite(v_now) AND agent.cron_valid(u.schedule)
                                    AND u.timezone = ANY (v_oktz), false))::agent._tick_slot
                       ORDER BY u.i)
        INTO v_due
        FROM unnest(v_due) WITH ORDINALITY AS u(id, agent_id, schedule, timezone, prompt, due, created_by, live, ok, i);

      -- One queue decision at a time per agent (the lock agent._enqueue_run
      -- takes), taken in agent id order before the cap is counted.
      PERFORM agent._lock('cap', x.agent_id::text)
         FROM (SELECT DISTINCT u.agent_id FROM unnest(v_due) AS u
                WHERE u.live AND u.ok
                ORDER BY u.agent_id) x;

      -- run ids first, in due order, so that each run is its own root
      SELECT count(*)::integer INTO v_nlive FROM unnest(v_due) AS u WHERE u.live AND u.ok;
      v_seq := pg_get_serial_sequence('agent.runs', 'id')::regclass;
      SELECT coalesce(array_agg(nextval(v_seq) ORDER BY g), '{}')
        INTO v_runids FROM generate_series(1, v_nlive) AS g;

      -- One INSERT for all runs.  The hourly cap as agent._enqueue_run applies
      -- it, one run after the other: the k-th run of an agent in this tick is
      -- queued while (autonomous runs in the last hour, counted up to the cap)
      -- + k <= cap, else created budget_exceeded.
      WITH due AS (
        SELECT u.id, u.agent_id, u.prompt, u.due, u.created_by AS by,
               row_number() OVER (ORDER BY u.i) AS rn,
               row_number() OVER (PARTITION BY u.agent_id ORDER BY u.i) AS k
          FROM unnest(v_due) WITH ORDINALITY
               AS u(id, agent_id, schedule, timezone, prompt, due, created_by, live, ok, i)
         WHERE u.live AND u.ok
      ), recent AS MATERIALIZED (   -- one grouped count for all agents
        SELECT x.agent_id, count(*) AS n
          FROM agent.runs x
         WHERE x.agent_id = ANY (ARRAY(SELECT u.agent_id FROM unnest(v_due) AS u)) AND x.regime = 'autonomous'
           AND x.created_at > pg_catalog.now() - interval '1 hour'
           AND x.status <> 'budget_exceeded'
         GROUP BY x.agent_id
      ), caps AS MATERIALIZED (
        SELECT a.id AS agent_id, a.workspace_id, c.cap, least(coalesce(rc.n, 0), c.cap) AS recent
          FROM agent.agents a
          CROSS JOIN LATERAL (SELECT coalesce(a.hourly_run_cap,
                                              current_setting('pg_agents.hourly_run_cap')::integer) AS cap) c
          LEFT JOIN recent rc ON rc.agent_id = a.id
         WHERE a.id IN (SELECT due.agent_id FROM due)
      ), plan AS (
        SELECT n.run_id, c.workspace_id, d.agent_id, d.id AS trigger_id, d.prompt, d.due, d.by,
               (c.recent + d.k <= c.cap) AS ok, c.cap
          FROM due d
          JOIN caps c ON c.agent_id = d.agent_id
          JOIN unnest(v_runids) WITH ORDINALITY AS n(run_id, rn) ON n.rn = d.rn
      ), ins AS (
      INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, parent_run_id, root_run_id, depth, regime,
                              origin, requested_by, status, priority, input, error, token_budget, finished_at)
      SELECT p.run_id, p.workspace_id, p.agent_id, p.trigger_id, NULL, p.run_id, 0, 'autonomous',
             'schedule', p.by, CASE WHEN p.ok THEN 'queued' ELSE 'budget_exceeded' END, 0,
             jsonb_build_object('prompt', p.prompt, 'scheduled_for', p.due, 'trigger_id', p.trigger_id),
             CASE WHEN NOT p.ok THEN format('hourly run cap of %s reached', p.cap) END, NULL,
             CASE WHEN NOT p.ok THEN pg_catalog.now() END
        FROM plan p
       ORDER BY p.run_id
      RETURNING id, agent_id, trigger_id, status, error)
      SELECT coalesce(array_agg(ROW(ins.trigger_id, ins.id, ins.agent_id, NULL, true, ins.status,
                                    ins.error)::agent._tick_outcome ORDER BY ins.id), '{}')
        INTO v_made
        FROM ins;
      IF cardinality(v_made) <> v_nlive THEN
        RAISE EXCEPTION 'tick: % runs planned, % queued', v_nlive, cardinality(v_made);
      END IF;

      -- One NOTIFY per run (delivered at commit), in run order.
      PERFORM pg_notify('agent_runs', json_build_object('run_id', x.run_id, 'agent_id', x.agent_id,
                                                        'status', x.status)::text)
         FROM unnest(v_made) WITH ORDINALITY AS x(trigger_id, run_id, agent_id, next_run_at, ran, status, error, i)
        ORDER BY x.i;

      -- Advance every taken schedule; last_run_at when a run was made, and a
      -- run the cap ended at once is the trigger's last outcome now (a queued
      -- one's is written when it finishes).
      UPDATE agent.triggers t
         SET next_run_at = agent.cron_next(t.schedule, v_now, t.timezone),
             last_run_at = CASE WHEN u.live THEN v_now ELSE t.last_run_at END,
             last_status = CASE WHEN x.status = 'budget_exceeded' THEN x.status ELSE t.last_status END,
             last_error  = CASE WHEN x.status = 'budget_exceeded' THEN x.error ELSE t.last_error END
        FROM unnest(v_due) AS u
        LEFT JOIN unnest(v_made) AS x ON x.trigger_id = u.id
       WHERE u.ok AND t.id = u.id;

      IF EXISTS (SELECT 1 FROM unnest(v_made) AS x WHERE x.status = 'queued') THEN
        PERFORM agent._request_wake();  -- sets the worker's latch at commit, once
      END IF;
      v_nmade := v_nlive;
    END IF;
    v_batch := true;
  EXCEPTION WHEN OTHERS THEN
    RAISE DEBUG 'pg_agents: tick batch undone (%), per-trigger path', SQLERRM;
    v_nmade := 0;
  END;
  IF NOT v_batch THEN   -- the same due rows, locked again, none taken yet
    SELECT array_agg(ROW(d.id, d.agent_id, d.schedule, d.timezone, d.prompt, d.due, d.created_by, d.live,
                         false)::agent._tick_slot ORDER BY d.due, d.id)
      INTO v_due FROM agent._tick_due(v_now) d;
  END IF;

  -- The per-trigger path, for the rows the batch could not take: each in its
  -- own subtransaction, so that one broken schedule never stops the others.
  FOR r IN
    SELECT u.id, u.agent_id, u.schedule, u.timezone, u.prompt, u.due, u.created_by, u.live, u.ok
      FROM unnest(v_due) WITH ORDINALITY AS u(id, agent_id, schedule, timezone, prompt, due, created_by, live, ok, i)
     WHERE NOT u.ok
     ORDER BY u.i
  LOOP
    BEGIN
      -- one run for however many slots were missed; next: the first slot after now
      v_next := agent.cron_next(r.schedule, v_now, r.timezone);
      v_run := NULL;
      v_stat := NULL;
      v_rerr := NULL;
      IF r.live THEN   -- suspended or deleted agents: no run, the schedule still advances
        v_run := agent._enqueue_run(r.agent_id, 'autonomous', 'schedule',
                                    jsonb_build_object('prompt', r.prompt,
                                                       'scheduled_for', r.due,
                                                       'trigger_id', r.id),
                                    r.id, r.created_by, NULL, NULL);
        -- a run the queue ended at once (hourly cap: budget_exceeded) is the
        -- trigger's last outcome now; a queued one's is written when it finishes
        SELECT x.status, x.error INTO v_stat, v_rerr FROM agent.runs x WHERE x.id = v_run;
        IF v_stat = 'queued' THEN
          v_stat := NULL;
          v_rerr := NULL;
        END IF;
      END IF;
      -- recorded once the block can no longer roll back
      v_done := v_done || ROW(r.id, v_run, r.agent_id, v_next, v_run IS NOT NULL, v_stat, v_rerr)::agent._tick_outcome;
    EXCEPTION WHEN OTHERS THEN
      -- one broken schedule never stops the others: record why, and move it
      -- to its next slot (or stop it when its schedule no longer computes)
      v_err := SQLERRM;
      BEGIN
        v_next := agent.cron_next(r.schedule, v_now, r.timezone);
      EXCEPTION WHEN OTHERS THEN
        v_next := NULL;
      END;
      UPDATE agent.triggers
         SET next_run_at = v_next, last_status = 'error',
             last_error = format('schedule could not fire: %s', v_err)
       WHERE id = r.id;
      RAISE WARNING 'pg_agents: schedule trigger % could not fire: %', r.id, v_err;
    END;
  END LOOP;

  IF cardinality(v_done) > 0 THEN
    UPDATE agent.triggers t
       SET next_run_at = u.next_run_at,
           last_run_at = CASE WHEN u.ran THEN v_now ELSE t.last_run_at END,
           last_status = CASE WHEN u.status IS NOT NULL THEN u.status ELSE t.last_status END,
           last_error  = CASE WHEN u.status IS NOT NULL THEN u.error ELSE t.last_error END
      FROM unnest(v_done) AS u
     WHERE t.id = u.trigger_id;
  END IF;

  -- The other modules' periodic work, when installed.  One tick at a time
  -- does it: a concurrent tick skips it rather than wait for the rows the
  -- other one is cleaning up (the lock is held until this transaction ends).
  IF agent._lock('tick', '', false) THEN
    IF to_regprocedure('agent._tick_runs(timestamptz)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._tick_runs($1)' USING v_now;
    END IF;
    IF to_regprocedure('agent._events_cleanup(timestamptz)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._events_cleanup($1)' USING v_now;
    END IF;
    -- teams (900_teams.sql): unanswered ask_parent questions expire
    IF to_regprocedure('agent._tick_teams(timestamptz)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._tick_teams($1)' USING v_now;
    END IF;
    -- run_stats' rollup (955_rollup.sql): the closed days folded
    IF to_regprocedure('agent._run_rollup_fold(integer)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._run_rollup_fold()';
    END IF;
  END IF;

  RETURN v_nmade + (SELECT count(*) FROM unnest(v_done) AS x WHERE x.ran)::integer;
END
$$;
REVOKE ALL ON FUNCTION agent.tick(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent.tick(timestamptz) IS
  'Queues every due enabled schedule trigger once (missed slots fire once), advances next_run_at with cron_next, then runs agent._tick_runs and agent._events_cleanup when present; returns the runs made.';

CREATE OR REPLACE FUNCTION agent._assistant_for(p_workspace_id text) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  IF v_id IS NULL THEN
    PERFORM agent._lock('assistant', p_workspace_id);
    SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  END IF;
  IF v_id IS NULL THEN
    INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, approval_mode, max_iterations)
    VALUES (p_workspace_id, 'pg_agents:assistant', 'Agent creation assistant', agent._assistant_instructions(),
            'writes', 8)
    RETURNING id INTO v_id;
    INSERT INTO agent.assistants (workspace_id, agent_id) VALUES (p_workspace_id, v_id);
  ELSE
    -- keep the instructions current across upgrades
    UPDATE agent.agents a SET instructions = agent._assistant_instructions(), updated_at = now()
     WHERE a.workspace_id = p_workspace_id AND a.id = v_id AND a.instructions IS DISTINCT FROM agent._assistant_instructions();
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._assistant_for(text) FROM PUBLIC;
COMMENT ON FUNCTION agent._assistant_for(text) IS
  'Internal: the workspace''s hidden assistant agent, created on first use.';

-- pg_agents: how the tables are laid out on a Citus cluster (docs/scaling.md,
-- "Which tables go where").  One source of truth: the procedure distributes
-- from agent.distribution_plan(), and test/pgtap/scaling_schema.sql checks
-- the catalog against it (every table of the extension exactly once, the
-- keys and foreign keys Citus accepts), without Citus.
CREATE OR REPLACE FUNCTION agent.distribution_plan()
RETURNS TABLE (table_name regclass, kind text, reason text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p.t::pg_catalog.regclass, p.k, p.r
    FROM (VALUES
    -- reference tables first (replicated to every node)
    (1, 'agent.group_members', 'reference', 'Group membership; workspace_id may be NULL (groups not per workspace), and every node''s access checks read it.'),
    (2, 'agent.resource_acl', 'reference', 'The owners'' ACL on application resources; workspace_id may be NULL, and every node''s access checks read it.'),
    (3, 'agent.access_config', 'reference', 'Cluster-wide configuration (one row: the ACL function), read by every node''s access checks.'),
    (4, 'agent.resource_tables', 'reference', 'Cluster-wide configuration: the resource tables the tools read and write.'),
    (5, 'agent.allowlist_tables', 'reference', 'Cluster-wide configuration: the application tables under the allowlist policies.'),
    (6, 'agent.relations', 'reference', 'Cluster-wide configuration: the relations between resource types.'),
    (7, 'agent.providers', 'reference', 'Cluster-wide configuration: the LLM providers.'),
    (8, 'agent.secrets', 'reference', 'Cluster-wide configuration: the encrypted secrets the providers and MCP servers name.'),
    (9, 'agent.templates', 'reference', 'Cluster-wide configuration: the agent templates.'),
    (10, 'agent.reader_workspaces', 'reference', 'DBA configuration read by the reader policies of every node, looked up by role rather than by workspace.'),
    -- distributed by workspace_id, co-located with agent.agents, in an
    -- order where every referenced table comes before its referencing ones
    (11, 'agent.agents', 'distributed', 'The agents; the table the others are co-located with.'),
    (12, 'agent.access', 'distributed', 'Grants of an agent (foreign key to agents).'),
    (13, 'agent.shares', 'distributed', 'Shares of an agent (foreign key to agents).'),
    (14, 'agent.versions', 'distributed', 'Settings history of an agent (foreign key to agents).'),
    (15, 'agent.triggers', 'distributed', 'Triggers of an agent (foreign key to agents).'),
    (16, 'agent.runs', 'distributed', 'Runs (foreign keys to agents, triggers and the parent run).'),
    (17, 'agent.run_steps', 'distributed', 'Steps of a run (foreign key to runs).'),
    (18, 'agent.approvals', 'distributed', 'Approvals of a run''s tool calls (foreign key to runs).'),
    (19, 'agent.run_state', 'distributed', 'Saved state of a running run (foreign key to runs).'),
    (20, 'agent.run_messages', 'distributed', 'Messages to and from runs (foreign key to runs).'),
    (21, 'agent.run_queue_marks', 'distributed', 'Per-workspace queue marks of agent.claim_runs.'),
    (22, 'agent.run_queue_returns', 'distributed', 'Per-workspace runs queued again below their queue''s mark.'),
    (23, 'agent.event_dedup', 'distributed', 'Event fingerprints per trigger (deduplication window).'),
    (24, 'agent.event_launches', 'distributed', 'Launches per trigger and event (automation overlaps).'),
    (25, 'agent.event_overlaps', 'distributed', 'Overlap counts per trigger (foreign key to triggers).'),
    (26, 'agent.mcp_servers', 'distributed', 'MCP servers of a workspace.'),
    (27, 'agent.mcp_tools', 'distributed', 'Tools of an MCP server (foreign key to mcp_servers).'),
    (28, 'agent.mcp_oauth', 'distributed', 'OAuth state of an MCP server (foreign key to mcp_servers).'),
    (29, 'agent.mcp_elicitations', 'distributed', 'Input an MCP server asked for during a run (foreign key to runs).'),
    (30, 'agent.assistants', 'distributed', 'The hidden assistant agent of a workspace (foreign key to agents).'),
    (31, 'agent.conversations', 'distributed', 'Conversations with an agent (foreign key to agents).'),
    (32, 'agent.messages', 'distributed', 'Messages of a conversation (foreign key to conversations).'),
    (33, 'agent.audit_log', 'distributed', 'The audit log, partitioned by month (Citus distributes the parent and its partitions). Rows of no workspace (system actions) have workspace_id NULL, which a distributed table refuses: known not to work on Citus (docs/scaling.md).'),
    (36, 'agent.run_stream_text', 'distributed', 'The streamed text of a run (foreign key to runs).'),
    -- local: stay on each node
    (34, 'agent.worker_control', 'local', 'The pause switch of the background worker of the node it is on (one row per node).'),
    (35, 'agent._history_holds', 'local', 'Transient: rows live only inside one function call of the transaction that writes them, on the node that runs it.'),
    (37, 'agent.locks', 'local', 'The rows the functions of the node lock to serialise its queue decisions (hourly cap, claims, tick, assistant), as the advisory locks they replace were per node.')
    ) AS p(n, t, k, r)
   ORDER BY p.n
$$;
COMMENT ON FUNCTION agent.distribution_plan() IS
  'How each table of the extension is placed on a Citus cluster: distributed (by workspace_id, co-located with agent.agents), reference (replicated) or local (stays on each node), with the reason; in the order the procedure distributes them (docs/scaling.md).';
