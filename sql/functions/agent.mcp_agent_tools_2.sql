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
