CREATE OR REPLACE FUNCTION agent._assistant_for(p_workspace_id text) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  IF v_id IS NULL THEN
    PERFORM agent._lock('assistant', p_workspace_id);
    SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  END IF;
  IF v_id IS NULL THEN
    INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, approval_mode, max_iterations)
    VALUES (p_workspace_id, 'pg_agents:assistant', 'Agent creation assistant', agent._assistant_instructions(),
            'writes', 8)
    RETURNING id INTO v_id;
    INSERT INTO agent.assistants (workspace_id, agent_id) VALUES (p_workspace_id, v_id);
  ELSE
    -- keep the instructions current across upgrades
    UPDATE agent.agents a SET instructions = agent._assistant_instructions(), updated_at = now()
     WHERE a.workspace_id = p_workspace_id AND a.id = v_id AND a.instructions IS DISTINCT FROM agent._assistant_instructions();
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._assistant_for(text) FROM PUBLIC;
COMMENT ON FUNCTION agent._assistant_for(text) IS
  'Internal: the workspace''s hidden assistant agent, created on first use.';
