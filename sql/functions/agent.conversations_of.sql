CREATE OR REPLACE FUNCTION agent.conversations_of(agent_id bigint, user_id text)
RETURNS TABLE(conversation_id bigint, kind text, conversation_user text, trigger_id bigint,
              messages bigint, created_at timestamptz, last_message_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_level text;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent) THEN
    RETURN;
  END IF;
  v_level := agent._user_level(v_user, v_agent);
  IF v_level IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT x.id, x.kind, x.user_id, x.trigger_id, x.n, x.created_at, x.last_at
    FROM (SELECT c.id, c.kind, c.user_id, c.trigger_id, c.created_at,
                 (SELECT pg_catalog.count(*) FROM agent.messages m
                   WHERE m.workspace_id = v_ws AND m.conversation_id = c.id) AS n,
                 coalesce((SELECT m.created_at FROM agent.messages m
                            WHERE m.workspace_id = v_ws AND m.conversation_id = c.id
                            ORDER BY m.id DESC LIMIT 1), c.created_at) AS last_at
            FROM agent.conversations c
           WHERE c.workspace_id = v_ws AND c.agent_id = v_agent
             AND ((c.kind = 'chat' AND (c.user_id = v_user OR v_level = 'full'))
                  OR (c.kind = 'autonomous' AND v_level IN ('full', 'edit')))) x
   ORDER BY x.last_at DESC, x.id DESC;
END
$$;
