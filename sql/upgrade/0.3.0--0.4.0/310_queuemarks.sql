-- pg_agents 0.3.0 -> 0.4.0, runs (queue marks): the whole new definition of each object changed
-- (after 300_queueperf.sql, whose agent.claim_runs this one replaces).

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
\ir ../../tables/agent.run_queue_marks.sql

\ir ../../tables/agent.run_queue_returns.sql

-- A run queued again below its queue's mark or candidate: noted for the
-- claims (an INSERT, which waits for no one).  A step that takes a new
-- candidate while this transaction is open waits for it (it holds
-- agent.runs for writing); one already taken at or below this run's id, or
-- a mark raised to at most that candidate, never passes the run.
\ir ../../functions/agent._queue_mark_lower.sql
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
                                 WHERE r.ctid = ANY (v_seen)));
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
                                     WHERE r.workspace_id = k.workspace_id AND r.priority = k.priority)) AS low
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
                  AND (SELECT a.deleted_at FROM agent.agents a WHERE a.id = q.agent_id) IS NULL
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
               started_at = coalesce(x.started_at, pg_catalog.now()), lease_until = pg_catalog.now() + v_lease
          FROM c
         WHERE x.id = c.id   -- by primary key (see below)
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
  -- above.
  WHILE v_one IS NULL LOOP
    v_want := n - pg_catalog.cardinality(v_rows);
    WITH RECURSIVE ws(w) AS (
        SELECT (SELECT q.workspace_id FROM agent.runs q
                 WHERE q.status = 'queued' ORDER BY q.workspace_id LIMIT 1)
      UNION ALL
        SELECT (SELECT q.workspace_id FROM agent.runs q
                 WHERE q.status = 'queued' AND q.workspace_id > ws.w ORDER BY q.workspace_id LIMIT 1)
          FROM ws WHERE ws.w IS NOT NULL
    ), busy AS MATERIALIZED (
        -- runs claimed by an earlier pass of this claim count too
        SELECT r.workspace_id AS w, pg_catalog.count(*)::integer AS running FROM agent.runs r
         WHERE r.status = 'running' GROUP BY r.workspace_id
    ), wsr AS MATERIALIZED (
        SELECT x.w, x.running, CASE WHEN v_cap > 0 THEN v_cap - x.running ELSE v_want END AS room
          FROM (SELECT ws.w, coalesce(b.running, 0) AS running
                  FROM ws LEFT JOIN busy b ON b.w = ws.w WHERE ws.w IS NOT NULL) x
         WHERE v_cap = 0 OR x.running < v_cap
    ), cand AS MATERIALIZED (
        SELECT o.w, k.k, k.k < o.room AS k_binds, l.id, l.priority,
               o.running + pg_catalog.row_number() OVER (PARTITION BY o.w, l.priority ORDER BY l.id) AS turn
          FROM wsr o
         CROSS JOIN (SELECT greatest(1, v_want - pg_catalog.count(*) + 1) AS k FROM wsr) k
         CROSS JOIN LATERAL (
               SELECT q.id, q.priority FROM agent.runs q
                WHERE q.status = 'queued' AND q.workspace_id = o.w AND q.id <> ALL (v_skip)
                  AND (SELECT a.deleted_at FROM agent.agents a WHERE a.id = q.agent_id) IS NULL
                ORDER BY q.workspace_id, q.priority DESC, q.id   -- runs_queue_ws_idx (as above)
                LIMIT least(k.k, o.room)) l
    ), c AS (
        SELECT o.ord, l.id
          FROM (SELECT pg_catalog.row_number() OVER (ORDER BY cand.priority DESC, cand.turn, cand.id) AS ord, cand.id
                  FROM cand ORDER BY 1) o
         -- one primary-key probe per candidate, in that order, until v_want
         -- are locked (texteq rather than =, so that the partial queue
         -- indexes, whose estimates lag behind bursts, never drive it; the
         -- status is re-checked on the newest version of a run that a
         -- concurrent claimer updated)
         CROSS JOIN LATERAL (
               SELECT q.id FROM agent.runs q
                WHERE q.id = o.id AND pg_catalog.texteq(q.status, 'queued')
                FOR UPDATE OF q SKIP LOCKED) l
         LIMIT v_want
    ), u AS (
      UPDATE agent.runs x
         SET status = 'running', attempts = x.attempts + 1,
             started_at = coalesce(x.started_at, pg_catalog.now()), lease_until = pg_catalog.now() + v_lease
        FROM c
       -- by primary key: c locked these rows while they were queued, so no
       -- status test here (with one, a stale estimate of the small partial
       -- queue index made the planner scan every queued run per claim)
       WHERE x.id = c.id
      RETURNING x AS run, c.ord
    )
    SELECT (SELECT pg_catalog.array_agg(u.run ORDER BY u.ord) FROM u), (SELECT pg_catalog.array_agg(cand.id) FROM cand),
           EXISTS (SELECT 1 FROM cand GROUP BY cand.w HAVING pg_catalog.bool_and(cand.k_binds) AND pg_catalog.count(*) >= pg_catalog.min(cand.k))
      INTO v_pass, v_cand, v_more;
    v_rows := v_rows || coalesce(v_pass, '{}');
    -- done: n claimed, no candidate left, or every candidate claimed and
    -- none of the workspaces cut at k candidates (W also counts workspaces
    -- whose queued runs all belong to deleted agents: then k was too small)
    EXIT WHEN pg_catalog.cardinality(v_rows) >= n OR v_cand IS NULL
           OR (pg_catalog.cardinality(v_cand) = coalesce(pg_catalog.cardinality(v_pass), 0) AND NOT v_more);
    -- some candidates were taken by concurrent claimers: look past them
    v_skip := v_skip || ARRAY(SELECT x FROM pg_catalog.unnest(v_cand) x
                               WHERE x <> ALL (ARRAY(SELECT p.id FROM pg_catalog.unnest(v_pass) p)));
  END LOOP;
  IF pg_catalog.cardinality(v_rows) = 0 THEN
    RETURN;
  END IF;
  -- one audit row per claimed run (agent._audit_run), in claim order
  PERFORM agent._audit_event('run.claim', 'success', 'run', r.id::text, r.workspace_id,
                             (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
                             pg_catalog.jsonb_build_object('agent_id', r.agent_id, 'status', 'running', 'attempts', r.attempts),
                             pg_catalog.format('run %s claimed (attempt %s)', r.id, r.attempts), NULL)
     FROM pg_catalog.unnest(v_rows) r;
  RETURN QUERY SELECT * FROM pg_catalog.unnest(v_rows);
END
$$;
COMMENT ON FUNCTION agent.claim_runs(int) IS
  'Claims up to n queued runs of agents not deleted, serving workspaces in turn: interactive runs first, then the run whose workspace has the fewest runs running counting those ahead of it in its queue, then the oldest; at most n - W + 1 runs of one workspace when W workspaces have queued runs; workspaces with pg_agents.max_runs_per_workspace runs running are skipped (0: no cap); a session bound to a workspace (pg_agents.workspace) claims only its runs. A one-workspace claim reads each priority''s queue from its mark (agent.run_queue_marks), past the claimed runs a held snapshot keeps. FOR UPDATE SKIP LOCKED, never the same run twice: running, attempts + 1, started_at on the first claim, lease_until = now() + pg_agents.run_lease. Returns the runs in claim order.';
