CREATE OR REPLACE FUNCTION agent._user_level(p_user_id text, p_agent_id bigint) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- an agent of another workspace than the session's is nobody's: every
  -- statement names the session's workspace (Citus routes by it); a session
  -- bound to none takes the agent's own
  v_ws text := agent._session_workspace();
  v_r  integer;
BEGIN
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = p_agent_id;
  END IF;
  SELECT max(l.r) INTO v_r
  FROM (
    SELECT 3 AS r FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.id = p_agent_id AND a.deleted_at IS NULL AND a.owner_id = p_user_id
    UNION ALL
    SELECT agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
     WHERE s.workspace_id = v_ws AND s.agent_id = p_agent_id AND a.deleted_at IS NULL AND s.user_id = p_user_id
    UNION ALL
    SELECT agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
      JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = p_user_id
                                AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
     WHERE s.workspace_id = v_ws AND s.agent_id = p_agent_id AND a.deleted_at IS NULL
  ) l;
  RETURN CASE v_r WHEN 3 THEN 'full' WHEN 2 THEN 'edit' WHEN 1 THEN 'interact' END;
END
$$;
COMMENT ON FUNCTION agent._user_level(text, bigint) IS
  'Internal: the best level the user holds on the agent (owner: full; direct and group shares), NULL when none, the agent is deleted, or it belongs to another workspace than the session''s.';
