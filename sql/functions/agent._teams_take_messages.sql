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
