-- pg_agents 0.3.0 -> 0.4.0, runs (queueperf): the whole new definition of each object changed.

ALTER TABLE agent.runs SET (fillfactor = 75);
DROP INDEX agent.runs_lease_idx;
CREATE INDEX runs_lease_idx ON agent.runs (id) WHERE status = 'running';
CREATE INDEX agents_deleted_idx ON agent.agents (id) WHERE deleted_at IS NOT NULL;

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
BEGIN
  -- runs whose executor's lease has passed
  FOR c IN SELECT x.id, coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.id = x.root_run_id), x.id) AS root FROM agent.runs x
            WHERE x.status = 'running' AND x.lease_until < p_now ORDER BY x.id
  LOOP
    CONTINUE WHEN NOT agent._lock_tree(c.root, true);
    SELECT * INTO r FROM agent.runs x WHERE x.id = c.id FOR UPDATE;
    CONTINUE WHEN r.status <> 'running' OR NOT r.lease_until < p_now;
    IF r.attempts >= v_max THEN
      PERFORM agent._finish_run(r.id, 'failed', NULL, format('run abandoned after %s attempts', r.attempts));
      v_abandoned := v_abandoned + 1;
    ELSE
      UPDATE agent.runs x SET status = 'queued', lease_until = NULL WHERE x.id = r.id RETURNING * INTO r;
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
  FOR c IN SELECT x.id, coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.id = x.root_run_id), x.id) AS root, x.agent_id
             FROM agent.agents a
             CROSS JOIN LATERAL (
                   SELECT y.id, y.root_run_id, y.agent_id FROM agent.runs y
                    WHERE y.agent_id = a.id
                      AND y.status IN ('queued', 'waiting_approval', 'waiting_input', 'waiting_children')) x
            WHERE a.deleted_at IS NOT NULL
            ORDER BY x.id
  LOOP
    CONTINUE WHEN NOT agent._lock_tree(c.root, true);
    IF agent._finish_run(c.id, 'cancelled', NULL, format('agent %s was deleted', c.agent_id)) THEN
      v_cancelled := v_cancelled + 1;
    END IF;
  END LOOP;

  -- pending approvals past their time-to-live
  FOR c IN SELECT p.id, coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.id = x.root_run_id), x.id) AS root FROM agent.approvals p
             JOIN agent.runs x ON x.id = p.run_id
            WHERE p.status = 'pending' AND p.expires_at <= p_now ORDER BY p.id
  LOOP
    CONTINUE WHEN NOT agent._lock_tree(c.root, true);
    SELECT * INTO ap FROM agent.approvals p WHERE p.id = c.id FOR UPDATE;
    CONTINUE WHEN ap.status <> 'pending';
    UPDATE agent.approvals p SET status = 'expired', decided_at = p_now WHERE p.id = ap.id;
    SELECT * INTO r FROM agent.runs x WHERE x.id = ap.run_id;
    PERFORM agent._audit_event('approval.expire', 'success', 'approval', ap.id::text, ap.workspace_id,
                               (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
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
  -- tree someone holds is left for the next call.
  SELECT pg_catalog.array_agg(c.id) INTO v_roots
    FROM (SELECT r.id FROM agent.runs r
           WHERE r.parent_run_id IS NULL
             AND r.finished_at < v_cutoff
             AND r.status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
             AND NOT EXISTS (SELECT 1 FROM agent.runs d
                              WHERE d.root_run_id = r.id AND d.id <> r.id
                                AND (d.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                                     OR d.finished_at IS NULL OR d.finished_at >= v_cutoff))
           LIMIT batch_size
             FOR UPDATE OF r SKIP LOCKED) c;

  IF v_roots IS NOT NULL THEN
    -- the trees (runs_root_idx); steps, approvals, messages, state and
    -- elicitations of these runs go with them (ON DELETE CASCADE)
    WITH d AS (
      DELETE FROM agent.runs x
       WHERE x.root_run_id = ANY (v_roots) OR x.id = ANY (v_roots)
      RETURNING 1)
    SELECT pg_catalog.count(*) INTO v_runs FROM d;
  END IF;

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
