CREATE OR REPLACE FUNCTION agent._agent_for(p_agent_id bigint, p_by_user text, p_action text,
                                 p_allow_system boolean DEFAULT false)
RETURNS agent.agents
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a       agent.agents%ROWTYPE;
  v_level text;
  v_need  text := agent._action_level(p_action);
  v_ws    text;
BEGIN
  IF p_agent_id IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- locked by its whole key (workspace, id): the session's workspace, or
  -- the agent's own for a session bound to none
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id
      USING ERRCODE = 'undefined_object', DETAIL = 'The agent was deleted.';
  END IF;
  IF p_by_user IS NULL THEN
    IF p_allow_system THEN
      RETURN a;
    END IF;
    RAISE EXCEPTION 'by_user must not be NULL'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = format('Only a user holding the %s level may %s.', v_need, replace(p_action, '_', ' '));
  END IF;
  v_level := agent._user_level(p_by_user, p_agent_id);
  IF agent._level_rank(v_level) < agent._level_rank(v_need) THEN
    RAISE EXCEPTION 'user "%" cannot % agent %', p_by_user,
        CASE p_action
          WHEN 'chat' THEN 'chat with' WHEN 'view_settings' THEN 'view the settings of'
          WHEN 'edit_settings' THEN 'edit the settings of' WHEN 'share' THEN 'share'
          WHEN 'view_activity' THEN 'view the activity of' WHEN 'view_insights' THEN 'view the insights of'
          WHEN 'duplicate' THEN 'duplicate' WHEN 'delete' THEN 'delete'
          WHEN 'suspend' THEN 'change the status of' END,
        p_agent_id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = CASE WHEN v_level IS NULL THEN format('User "%s" has no access to this agent.', p_by_user)
                          ELSE format('User "%s" holds the %s level.', p_by_user, v_level) END,
            HINT = format('This needs the %s level%s.', v_need,
                          CASE v_need WHEN 'interact' THEN ' or above' WHEN 'edit' THEN ' or full' ELSE '' END);
  END IF;
  RETURN a;
END
$$;
COMMENT ON FUNCTION agent._agent_for(bigint, text, text, boolean) IS
  'Internal: locks and returns the agent after checking it exists (42704) and that by_user holds the level the action needs (42501).';
