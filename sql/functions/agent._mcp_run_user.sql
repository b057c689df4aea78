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
