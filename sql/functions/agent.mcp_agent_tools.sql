CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint, user_id text)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the agent's workspace (Citus routes by it): the session's, else the agent's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_sp text[];
  v_tp text[];
  v_ap text[];
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = mcp_agent_tools.agent_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = mcp_agent_tools.agent_id;
  END IF;
  -- the agent's patterns once
  SELECT agent._mcp_like_patterns(x.scope->'mcp_servers'), agent._mcp_like_patterns(x.scope->'mcp_tools'),
         agent._mcp_like_patterns(x.scope->'needs_approval')
    INTO v_sp, v_tp, v_ap
    FROM agent.agents x
   WHERE x.workspace_id = v_ws AND x.id = mcp_agent_tools.agent_id AND x.deleted_at IS NULL;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT t.exposed_name, s.id, s.name, t.name, t.description, t.input_schema,
         t.needs_approval OR t.exposed_name LIKE ANY (v_ap),
         coalesce((t.annotations->>'readOnlyHint')::boolean, false)
    FROM agent.mcp_servers s
    JOIN agent.mcp_tools t ON t.workspace_id = s.workspace_id AND t.server_id = s.id
   WHERE s.workspace_id = v_ws
     AND (s.scope = 'workspace' OR (s.scope = 'user' AND s.owner_id = mcp_agent_tools.user_id))
     AND s.enabled
     AND (s.name LIKE ANY (v_sp) OR t.exposed_name LIKE ANY (v_tp))
   ORDER BY t.exposed_name;
END
$$;
