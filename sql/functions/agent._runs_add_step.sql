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
