CREATE OR REPLACE FUNCTION agent.start_run(agent_id bigint, requested_by text, input jsonb DEFAULT '{}',
                                regime text DEFAULT 'manual', origin text DEFAULT 'chat')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  a    agent.agents%ROWTYPE;
  v_id bigint;
  r    agent.runs%ROWTYPE;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws text := agent._session_workspace();
BEGIN
  IF regime IS NULL OR regime NOT IN ('manual', 'autonomous') THEN
    RAISE EXCEPTION 'invalid regime "%"', regime
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A regime is manual or autonomous.';
  END IF;
  IF origin IN ('delegation', 'rerun') THEN
    RAISE EXCEPTION 'origin "%" cannot be given to agent.start_run', origin
      USING ERRCODE = 'invalid_parameter_value',
            HINT = CASE origin WHEN 'delegation' THEN 'Use agent.delegate().' ELSE 'Use agent.rerun().' END;
  END IF;
  IF origin IS NULL
     OR (regime = 'manual' AND origin NOT IN ('chat', 'api', 'draft'))
     OR (regime = 'autonomous' AND origin NOT IN ('api', 'schedule', 'event', 'mention')) THEN
    RAISE EXCEPTION 'invalid origin "%" for the % regime', origin, regime
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A manual run comes from chat, api or draft; an autonomous run from api, schedule, event or mention.';
  END IF;
  IF input IS NOT NULL AND jsonb_typeof(input) <> 'object' THEN
    RAISE EXCEPTION 'run input must be a json object'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the agent's own
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF regime = 'manual' THEN
    IF requested_by IS NULL OR requested_by = '' THEN
      RAISE EXCEPTION 'a manual run needs the requesting user'
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'A manual run acts as the user who asked for it (requested_by).';
    END IF;
    IF NOT coalesce(agent.user_can(requested_by, agent_id, 'chat'), false) THEN
      RAISE EXCEPTION 'user "%" may not chat with agent %', requested_by, agent_id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A manual run requires the interact level or higher on the agent.';
    END IF;
  ELSIF a.status = 'suspended' THEN
    RAISE EXCEPTION 'agent % is suspended', agent_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'A suspended agent starts no autonomous run; chat still works.';
  END IF;
  v_id := agent._enqueue_run(agent_id, regime, origin, coalesce(input, '{}'), NULL, requested_by);
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = a.workspace_id AND x.id = v_id;
  PERFORM agent._audit_run('run.start', r, 'success',
                           jsonb_build_object('regime', regime, 'origin', origin, 'status', r.status),
                           format('run %s queued (%s, %s)', v_id, regime, origin));
  RETURN v_id;
END
$$;
