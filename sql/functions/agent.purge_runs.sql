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
