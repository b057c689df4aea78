CREATE OR REPLACE FUNCTION agent.visible_agents(user_id text)
RETURNS TABLE(agent_id bigint, name text, level text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_ws text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    -- a session bound to no workspace (superuser): every workspace
    RETURN QUERY
    WITH l AS (
      SELECT a.workspace_id AS ws, a.id, 3 AS r FROM agent.agents a
       WHERE a.owner_id = visible_agents.user_id AND a.deleted_at IS NULL
      UNION ALL
      SELECT s.workspace_id, s.agent_id, agent._level_rank(s.level) FROM agent.shares s
       WHERE s.user_id = visible_agents.user_id
      UNION ALL
      SELECT s.workspace_id, s.agent_id, agent._level_rank(s.level) FROM agent.shares s
        JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
        JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = visible_agents.user_id
                                  AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
    ), best AS (
      SELECT l.ws, l.id, max(l.r) AS r FROM l GROUP BY l.ws, l.id
    )
    SELECT a.id, a.name, CASE b.r WHEN 3 THEN 'full' WHEN 2 THEN 'edit' ELSE 'interact' END
    FROM best b JOIN agent.agents a ON a.workspace_id = b.ws AND a.id = b.id
    WHERE a.deleted_at IS NULL AND b.r > 0
    ORDER BY b.r DESC, a.name, a.id;
    RETURN;
  END IF;
  RETURN QUERY
  WITH l AS (
    SELECT a.id, 3 AS r FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.owner_id = visible_agents.user_id AND a.deleted_at IS NULL
    UNION ALL
    SELECT s.agent_id, agent._level_rank(s.level) FROM agent.shares s
     WHERE s.workspace_id = v_ws AND s.user_id = visible_agents.user_id
    UNION ALL
    SELECT s.agent_id, agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
      JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = visible_agents.user_id
                                AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
     WHERE s.workspace_id = v_ws
  ), best AS (
    SELECT l.id, max(l.r) AS r FROM l GROUP BY l.id
  )
  SELECT a.id, a.name, CASE b.r WHEN 3 THEN 'full' WHEN 2 THEN 'edit' ELSE 'interact' END
  FROM best b JOIN agent.agents a ON a.workspace_id = v_ws AND a.id = b.id
  WHERE a.deleted_at IS NULL AND b.r > 0
  ORDER BY b.r DESC, a.name, a.id;
END
$$;
COMMENT ON FUNCTION agent.visible_agents(text) IS
  'The agents of the session''s workspace a user can see (owned, shared with them or with one of their groups), best level first; an agent they have no access to is not listed.';
