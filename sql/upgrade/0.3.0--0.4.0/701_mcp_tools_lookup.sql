-- mcp (issue 16): an agent's MCP tools with its patterns computed once per
-- agent, not once per tool (sql/src/700_mcp.sql).

-- The same list as LIKE patterns (for name LIKE ANY (...)), computed once
-- per agent rather than once per tool.
CREATE FUNCTION agent._mcp_like_patterns(p_patterns jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce(array_agg(replace(replace(replace(replace(pat, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%')), '{}')
    FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(p_patterns) = 'array' THEN p_patterns ELSE '[]' END) AS pat
$$;
COMMENT ON FUNCTION agent._mcp_like_patterns(jsonb) IS
  'Internal: a JSON array of names or * patterns as LIKE patterns (agent._mcp_match''s rules), for name LIKE ANY (...).';

CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint, user_id text)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  -- the agent's patterns once (OFFSET 0 keeps them out of the join)
  SELECT t.exposed_name, s.id, s.name, t.name, t.description, t.input_schema,
         t.needs_approval OR t.exposed_name LIKE ANY (a.approval_pats),
         coalesce((t.annotations->>'readOnlyHint')::boolean, false)
    FROM (SELECT x.workspace_id, agent._mcp_like_patterns(x.scope->'mcp_servers') AS server_pats,
                 agent._mcp_like_patterns(x.scope->'mcp_tools') AS tool_pats,
                 agent._mcp_like_patterns(x.scope->'needs_approval') AS approval_pats
            FROM agent.agents x
           WHERE x.id = mcp_agent_tools.agent_id AND x.deleted_at IS NULL OFFSET 0) a
    JOIN agent.mcp_servers s ON s.workspace_id = a.workspace_id
                            AND (s.scope = 'workspace'
                                 OR (s.scope = 'user' AND s.owner_id = mcp_agent_tools.user_id))
    JOIN agent.mcp_tools t ON t.server_id = s.id
   WHERE s.enabled
     AND (s.name LIKE ANY (a.server_pats) OR t.exposed_name LIKE ANY (a.tool_pats))
   ORDER BY t.exposed_name
$$;
