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
  -- and its segments, from the marks of the queue of all workspaces
  -- (workspace ''), read once a claim, and whether it read the whole queue
  v_gp    smallint[];
  v_gl    bigint[];
  v_gn    bigint[];
  v_gk    bigint[];
  v_glo   integer[];
  v_ghi   integer[];
  v_glw   bigint[];
  v_wn    integer;
  v_all   boolean;
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
                WHERE m.p IS NULL OR r.id - 256 >= m.low)
       OR EXISTS (SELECT 1 FROM ROWS FROM (pg_catalog.unnest(v_ml), pg_catalog.unnest(v_mk)) x(l, k) WHERE x.l < x.k)
       OR (pg_catalog.cardinality(v_rows) < least(n, v_room) AND v_mp IS NOT NULL
           AND pg_catalog.pg_sequence_last_value(pg_catalog.pg_get_serial_sequence('agent.runs', 'id')::regclass)
               - 256 >= (SELECT pg_catalog.min(x) FROM pg_catalog.unnest(v_mn) x)) THEN
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
      -- The walk in segments, highest priority first, as the claim of one
      -- workspace reads its queue: each priority with a mark of the queue
      -- of all workspaces from that mark (or the lowest run noted as queued
      -- again there), past the entries of the runs claimed since VACUUM
      -- last ran that a held snapshot keeps; the priorities between from
      -- their start.  No queued run is below a mark, so the walk is still a
      -- prefix of the queue's order.
      IF v_glo IS NULL THEN
        SELECT pg_catalog.array_agg(m.priority ORDER BY m.priority DESC), pg_catalog.array_agg(m.low ORDER BY m.priority DESC),
               pg_catalog.array_agg(m.next ORDER BY m.priority DESC), pg_catalog.array_agg(m.low_id ORDER BY m.priority DESC)
          INTO v_gp, v_gl, v_gn, v_gk
          FROM (SELECT k.priority, k.low_id, coalesce(k.next_id, k.low_id) AS next,
                       least(k.low_id, (SELECT pg_catalog.min(r.run_id) FROM agent.run_queue_returns r
                                         WHERE r.priority = k.priority)) AS low
                  FROM agent.run_queue_marks k WHERE k.workspace_id = '') m;
        v_glo := '{}'; v_ghi := '{}'; v_glw := '{}'; v_top := 32767;
        FOR i IN 1 .. coalesce(pg_catalog.cardinality(v_gp), 0) LOOP
          IF v_gp[i] < v_top THEN
            v_glo := v_glo || (v_gp[i] + 1); v_ghi := v_ghi || v_top; v_glw := v_glw || '-9223372036854775808'::bigint;
          END IF;
          v_glo := v_glo || v_gp[i]::integer; v_ghi := v_ghi || v_gp[i]::integer; v_glw := v_glw || v_gl[i];
          v_top := v_gp[i] - 1;
        END LOOP;
        IF v_top >= -32768 THEN
          v_glo := v_glo || -32768; v_ghi := v_ghi || v_top; v_glw := v_glw || '-9223372036854775808'::bigint;
        END IF;
      END IF;
      -- (the runs of deleted agents dropped after the LIMIT, which then
      -- stays a prefix of the queue's order: before it, an unknown LIMIT
      -- made the plan test every queued run)
      WITH walk AS (
          SELECT l.w, l.pri, l.id, l.agent_id
            FROM ROWS FROM (pg_catalog.unnest(v_glo), pg_catalog.unnest(v_ghi), pg_catalog.unnest(v_glw)) WITH ORDINALITY s(plo, phi, low, ord)
           CROSS JOIN LATERAL (
                 SELECT q.workspace_id AS w, q.priority AS pri, q.id, q.agent_id FROM agent.runs q
                  WHERE q.status = 'queued' AND q.priority BETWEEN s.plo AND s.phi AND q.id >= s.low
                    AND q.id <> ALL (v_skip)
                  ORDER BY q.priority DESC, q.id   -- runs_queue_idx
                  LIMIT v_lim) l
           LIMIT v_lim
        ), live AS (
          SELECT k.w, k.pri, k.id FROM walk k
           WHERE (SELECT a.deleted_at FROM agent.agents a WHERE a.workspace_id = k.w AND a.id = k.agent_id) IS NULL
        ), cand AS (
          -- each run's turn (its workspace's runs running plus its place in
          -- the workspace's queue of its priority) and its place in the
          -- workspace's queue; its workspace's first met is its head
          SELECT h.w, h.pri, h.id, coalesce(s.running, 0) AS running,
                 coalesce(s.running, 0) + pg_catalog.row_number() OVER (PARTITION BY h.w, h.pri ORDER BY h.id) AS turn,
                 pg_catalog.row_number() OVER (PARTITION BY h.w ORDER BY h.pri DESC, h.id) AS place
            FROM live h
            LEFT JOIN ROWS FROM (pg_catalog.unnest(v_sw), pg_catalog.unnest(v_sn)) s(w, running) ON s.w = h.w
        ), nw AS (
          SELECT pg_catalog.count(*)::integer AS wn FROM walk
        ), room AS (
          -- each workspace's runs up to its room under the cap; k = n - W + 1
          -- for W workspaces with room, as in the pass below
          SELECT c.* FROM cand c WHERE v_cap = 0 OR c.place <= v_cap - c.running
        ), kk AS (
          SELECT greatest(1, v_want - pg_catalog.count(DISTINCT r.w)::integer + 1) AS k FROM room r
        ), pick AS (
          -- The walk read the whole queue (it ended before its LIMIT): every
          -- queued run is a candidate, in the fair order, the first k of
          -- each workspace (as the pass below reads them).  Otherwise only
          -- the heads.
          SELECT r.w, r.id, pg_catalog.row_number() OVER (ORDER BY r.pri DESC, r.turn, r.id) AS ord
            FROM room r, nw, kk
           WHERE CASE WHEN nw.wn < v_lim THEN r.place <= kk.k ELSE r.place = 1 END
           ORDER BY r.pri DESC, r.turn, r.id LIMIT v_want
        )
      SELECT (SELECT nw.wn FROM nw),
             (SELECT pg_catalog.count(*)::integer FROM cand c WHERE c.place = 1 AND c.running = 0),
             ARRAY(SELECT p.id FROM pick p ORDER BY p.ord), ARRAY(SELECT DISTINCT p.w FROM pick p),
             EXISTS (SELECT 1 FROM room r, kk WHERE r.place > kk.k)
        INTO v_wn, v_hn, v_try, v_tw, v_more;
      v_all := v_wn < v_lim;
      IF v_all OR v_hn >= v_want THEN
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
        v_got := coalesce(v_got, '{}');
        v_rows := v_rows || v_got;
        -- a step of the marks of all workspaces when the walk went 256 ids
        -- past a mark (or its candidate), or read a queue from below its
        -- mark (runs noted as queued again), as the claim of one workspace
        -- (the install made those of priorities 10 and 0: no claim makes one)
        IF EXISTS (SELECT 1 FROM pg_catalog.unnest(v_got) r
                     JOIN ROWS FROM (pg_catalog.unnest(v_gp), pg_catalog.unnest(v_gn)) m(p, low) ON m.p = r.priority
                    WHERE r.id - 256 >= m.low)
           OR EXISTS (SELECT 1 FROM ROWS FROM (pg_catalog.unnest(v_gl), pg_catalog.unnest(v_gk)) x(l, k) WHERE x.l < x.k) THEN
          PERFORM agent._queue_advance('', ARRAY(SELECT DISTINCT r.priority FROM pg_catalog.unnest(v_got) r));
          -- (once a claim: its next passes read the marks as they were)
          v_gp := NULL; v_gl := NULL; v_gn := NULL; v_gk := NULL;
        END IF;
        -- (a walk of the whole queue: done when every candidate was claimed
        -- and no workspace was cut at k, as the pass below)
        EXIT WHEN pg_catalog.cardinality(v_rows) >= n
               OR (v_all AND pg_catalog.cardinality(v_got) = pg_catalog.cardinality(v_try) AND NOT v_more);
        -- some taken by concurrent claimers: look past them
        v_skip := v_skip || ARRAY(SELECT x FROM pg_catalog.unnest(v_try) x
                                   WHERE x <> ALL (ARRAY(SELECT p.id FROM pg_catalog.unnest(v_got) p)));
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
  'Claims up to n queued runs of agents not deleted, serving workspaces in turn: interactive runs first, then the run whose workspace has the fewest runs running counting those ahead of it in its queue, then the oldest; at most n - W + 1 runs of one workspace when W workspaces have queued runs; workspaces with pg_agents.max_runs_per_workspace runs running are skipped (0: no cap); a session bound to a workspace (pg_agents.workspace) claims only its runs. A one-workspace claim reads each priority''s queue from its mark (agent.run_queue_marks), a claim of several workspaces the queue of all workspaces from theirs (workspace ''''), past the claimed runs a held snapshot keeps. FOR UPDATE SKIP LOCKED, never the same run twice: running, attempts + 1, started_at on the first claim, lease_until = now() + pg_agents.run_lease. Returns the runs in claim order.';
