CREATE OR REPLACE FUNCTION agent._user_reads(p_agent_id bigint, p_user text, p_type text, p_id text, p_mode text DEFAULT 'read')
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws text;
BEGIN
  IF p_type = 'workspace_shared' THEN
    RETURN true;
  ELSIF p_type = 'agent' THEN
    IF p_id !~ '^[0-9]{1,18}$' THEN
      RETURN false;
    END IF;
    -- an agent of another workspace is no agent the user can reach here
    v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
    IF v_ws IS NULL THEN
      SELECT s.workspace_id INTO v_ws FROM agent.agents s WHERE s.id = p_agent_id;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM agent.agents t JOIN agent.agents s ON s.workspace_id = t.workspace_id
                    WHERE t.workspace_id = v_ws AND t.id = p_id::bigint AND s.id = p_agent_id) THEN
      RETURN false;
    END IF;
    RETURN agent._level_rank(agent._user_level(p_user, p_id::bigint)) >= CASE p_mode WHEN 'edit' THEN 2 ELSE 1 END;
  END IF;
  RETURN agent.can_access(p_agent_id, p_type, p_id, p_mode, 'manual', p_user);
END
$$;
COMMENT ON FUNCTION agent._user_reads(bigint, text, text, text, text) IS
  'Internal: does the user''s own access reach the resource (agents: their share level, on agents of the same workspace only; other resources: their ACL)?';
