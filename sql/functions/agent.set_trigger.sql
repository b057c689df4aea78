CREATE OR REPLACE FUNCTION agent.set_trigger(agent_id bigint, "trigger" jsonb, by_user text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  p     jsonb := $2;
  a     agent.agents%ROWTYPE;
  t     agent.triggers%ROWTYPE;
  v_id  bigint;
  v_old jsonb;
  m     jsonb;
  v_op  text;
  v_view regclass;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(set_trigger.by_user, ''), true);
  PERFORM agent._check_trigger(p, false);
  a := agent._agent_named($1, by_user, 'edit_settings', true);
  IF p ? 'id' AND jsonb_typeof(p -> 'id') <> 'null' THEN
    v_id := (p ->> 'id')::bigint;
    SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = a.workspace_id AND x.id = v_id FOR UPDATE;
    IF NOT FOUND OR t.agent_id <> a.id THEN
      RAISE EXCEPTION 'trigger % does not exist', v_id
        USING ERRCODE = 'undefined_object', DETAIL = format('Agent %s has no trigger %s.', a.id, v_id);
    END IF;
    v_op := 'update';
    v_old := agent._trigger_json(t);
    m := v_old || (p - 'id');
  ELSE
    v_op := 'create';
    m := jsonb_build_object('event_name', NULL, 'resource_type', NULL, 'resource_id', NULL, 'filter', '{}'::jsonb,
                            'schedule', NULL, 'timezone', 'UTC', 'prompt', NULL, 'enabled', true,
                            'allow_self_retrigger', false, 'show_typing', true, 'run_as', 'creator',
                            'conversation', 'agent')
         || (p - 'id');
  END IF;
  IF jsonb_typeof(m -> 'filter') IS DISTINCT FROM 'object' THEN
    m := jsonb_set(m, '{filter}', '{}');
  END IF;
  IF jsonb_typeof(m -> 'timezone') IS DISTINCT FROM 'string' THEN
    m := jsonb_set(m, '{timezone}', '"UTC"');
  END IF;
  PERFORM agent._check_trigger(m, true);
  -- run_as decides whom a schedule's runs act for; given for another kind
  -- it would be stored and ignored (issue 31)
  IF p ? 'run_as' AND m ->> 'kind' IS DISTINCT FROM 'schedule' THEN
    RAISE EXCEPTION 'trigger key "run_as" cannot be set on a trigger of kind %', m ->> 'kind'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A run of an event or mention trigger acts for the event''s user, a run of an API trigger for the user who fired it.',
            HINT = 'run_as applies to schedule triggers only; leave the key out for other kinds.';
  END IF;
  -- A filter's view is checked against the role saving the trigger
  -- (agent.validate_filter checks the current user, which in here is this
  -- function's owner): a SECURITY DEFINER function cannot see the role that
  -- called it, so the session's login role stands for it.
  IF jsonb_typeof(m -> 'filter' -> 'view') = 'string'
     AND (v_old -> 'filter' -> 'view') IS DISTINCT FROM (m -> 'filter' -> 'view') THEN
    v_view := to_regclass(m -> 'filter' ->> 'view');
    IF v_view IS NOT NULL AND NOT has_table_privilege(session_user, v_view, 'SELECT') THEN
      RAISE EXCEPTION 'invalid filter: permission denied for view "%"', m -> 'filter' ->> 'view'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'The user saving the trigger must be allowed to read the view.';
    END IF;
  END IF;
  -- the deputy rule: a trigger hands the agent the payloads of what it
  -- watches, so a newly watched resource needs by_user's own read access
  IF by_user IS NOT NULL AND m ->> 'resource_type' IN ('page', 'collection', 'skill', 'agent')
     AND m ->> 'resource_id' IS NOT NULL
     AND (v_op = 'create' OR (v_old ->> 'resource_type') IS DISTINCT FROM (m ->> 'resource_type')
          OR (v_old ->> 'resource_id') IS DISTINCT FROM (m ->> 'resource_id'))
     AND NOT agent._user_reads(a.id, by_user, m ->> 'resource_type', m ->> 'resource_id') THEN
    RAISE EXCEPTION 'user "%" cannot read % "%"', by_user, m ->> 'resource_type', m ->> 'resource_id'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A trigger may only watch a resource the user who sets it can read.';
  END IF;

  PERFORM agent._history_hold(a.id, true);
  IF v_op = 'create' THEN
    INSERT INTO agent.triggers AS x (workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                                     schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing,
                                     run_as, conversation, created_by)
    VALUES (a.workspace_id, a.id, m ->> 'kind', m ->> 'event_name', m ->> 'resource_type', m ->> 'resource_id',
            m -> 'filter', m ->> 'schedule', m ->> 'timezone', m ->> 'prompt', (m ->> 'enabled')::boolean,
            (m ->> 'allow_self_retrigger')::boolean, (m ->> 'show_typing')::boolean, m ->> 'run_as',
            m ->> 'conversation', by_user)
    RETURNING * INTO t;
  ELSE
    UPDATE agent.triggers x
       SET kind = m ->> 'kind', event_name = m ->> 'event_name', resource_type = m ->> 'resource_type',
           resource_id = m ->> 'resource_id', filter = m -> 'filter', schedule = m ->> 'schedule',
           timezone = m ->> 'timezone', prompt = m ->> 'prompt', enabled = (m ->> 'enabled')::boolean,
           allow_self_retrigger = (m ->> 'allow_self_retrigger')::boolean,
           show_typing = (m ->> 'show_typing')::boolean, run_as = m ->> 'run_as',
           conversation = m ->> 'conversation', updated_at = now()
     WHERE x.workspace_id = a.workspace_id AND x.id = v_id
    RETURNING * INTO t;
  END IF;
  PERFORM agent._history_hold(a.id, false);
  PERFORM agent._trigger_history(a, v_op, t.id, v_old, agent._trigger_json(t), by_user, false);
  RETURN t.id;
END
$$;
