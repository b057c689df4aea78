-- ===========================================================================
-- Fair claiming (branch claim; docs/runs.md "Fair claiming", docs/worker.md):
-- agent.claim_runs serves workspaces in turn and honours
-- pg_agents.max_runs_per_workspace.
-- ===========================================================================
-- fair claiming (agent.claim_runs): the workspaces with queued runs (a skip
-- scan) and the first runs of each, interactive first, then oldest
CREATE INDEX runs_queue_ws_idx ON agent.runs (workspace_id, priority DESC, id) WHERE status = 'queued';

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
-- one more run).  With the cap on, claims are serialised (a transaction
-- advisory lock) so that two claimers never both fill the same room; the
-- running runs are then counted by a statement that starts after the lock.
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
    WITH c AS (
        SELECT q.id FROM agent.runs q
         WHERE q.status = 'queued' AND q.workspace_id = v_one
           AND (SELECT a.deleted_at FROM agent.agents a WHERE a.id = q.agent_id) IS NULL
         -- workspace_id first (constant here): the order of runs_queue_ws_idx,
         -- so that the plan never reads runs_queue_idx through the other
         -- workspaces' runs
         ORDER BY q.workspace_id, q.priority DESC, q.id
         LIMIT least(n, v_room)
         FOR UPDATE OF q SKIP LOCKED
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
  'Claims up to n queued runs of agents not deleted, serving workspaces in turn: interactive runs first, then the run whose workspace has the fewest runs running counting those ahead of it in its queue, then the oldest; at most n - W + 1 runs of one workspace when W workspaces have queued runs; workspaces with pg_agents.max_runs_per_workspace runs running are skipped (0: no cap); a session bound to a workspace (pg_agents.workspace) claims only its runs. FOR UPDATE SKIP LOCKED, never the same run twice: running, attempts + 1, started_at on the first claim, lease_until = now() + pg_agents.run_lease. Returns the runs in claim order.';
