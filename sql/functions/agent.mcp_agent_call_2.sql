CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the agent's workspace (Citus routes by it): the session's, else the agent's own
  v_ws    text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_owner text;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = mcp_agent_call.agent_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = mcp_agent_call.agent_id;
  END IF;
  SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = mcp_agent_call.agent_id;
  RETURN agent.mcp_agent_call(mcp_agent_call.agent_id, mcp_agent_call.exposed_name, mcp_agent_call.arguments, v_owner);
END
$$;
