CREATE OR REPLACE FUNCTION agent.conversation_messages(conversation_id bigint, user_id text)
RETURNS TABLE(message_id bigint, role text, content text, run_id bigint, tokens integer, created_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_conv  bigint := conversation_id;
  v_user  text := user_id;
  c       agent.conversations%ROWTYPE;
  v_level text;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  IF v_conv IS NULL THEN
    RAISE EXCEPTION 'conversation_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.conversations x WHERE x.id = v_conv;
  END IF;
  SELECT * INTO c FROM agent.conversations x WHERE x.workspace_id = v_ws AND x.id = v_conv;
  -- unknown, of another workspace, or not visible: nothing, indistinguishably
  IF c.id IS NULL THEN
    RETURN;
  END IF;
  v_level := agent._user_level(v_user, c.agent_id);
  IF v_level IS NULL
     OR (c.kind = 'chat' AND c.user_id <> v_user AND v_level <> 'full')
     OR (c.kind = 'autonomous' AND v_level NOT IN ('full', 'edit')) THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT m.id, m.role, m.content, m.run_id, m.tokens, m.created_at
    FROM agent.messages m
   WHERE m.workspace_id = c.workspace_id AND m.conversation_id = c.id
   ORDER BY m.id;
END
$$;
