CREATE OR REPLACE FUNCTION agent.send_message(agent_id bigint, user_id text, text text,
                                   INOUT conversation_id bigint DEFAULT NULL, OUT run_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_text  text := text;
  v_conv  bigint := conversation_id;
  a       agent.agents%ROWTYPE;
  v_run   bigint;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name user_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(send_message.user_id, ''), true);
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_text IS NULL OR pg_catalog.btrim(v_text) = '' THEN
    RAISE EXCEPTION 'message text must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the agent's own
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = v_agent;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = v_agent;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', v_agent USING ERRCODE = 'undefined_object';
  END IF;
  IF v_conv IS NOT NULL THEN
    -- only the user's own chat with this agent can be continued; anything
    -- else (another user's, the autonomous log, another workspace's) does
    -- not exist
    PERFORM 1 FROM agent.conversations c
     WHERE c.workspace_id = a.workspace_id AND c.id = v_conv AND c.agent_id = a.id
       AND c.kind = 'chat' AND c.user_id = v_user
       FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'conversation % does not exist', v_conv USING ERRCODE = 'undefined_object';
    END IF;
  END IF;
  IF v_conv IS NULL THEN
    INSERT INTO agent.conversations AS c (workspace_id, agent_id, kind, user_id)
    VALUES (a.workspace_id, a.id, 'chat', v_user)
    RETURNING c.id INTO v_conv;
  END IF;
  -- the chat level is checked here (42501 without it; everything rolls back)
  v_run := agent.start_run(a.id, v_user,
                           pg_catalog.jsonb_build_object('message', v_text, 'conversation_id', v_conv),
                           'manual', 'chat');
  INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
  VALUES (a.workspace_id, v_conv, 'user', v_text, v_run, agent._message_tokens(v_text));
  send_message.conversation_id := v_conv;
  send_message.run_id := v_run;
END
$$;

COMMENT ON FUNCTION agent.send_message(bigint, text, text, bigint) IS
  'Sends a user''s message to an agent: appends it to the user''s chat (a new one when conversation_id is NULL; only the user''s own chat with this agent can be continued, anything else is unknown, 42704) and queues a manual chat run (the chat level is required, 42501) that receives the earlier turns within pg_agents.conversation_window. The run''s final answer is appended when it ends. Returns one row: the conversation and the run.';
