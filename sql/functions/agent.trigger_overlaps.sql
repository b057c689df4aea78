CREATE OR REPLACE FUNCTION agent.trigger_overlaps(agent_id bigint, by_user text DEFAULT NULL)
RETURNS TABLE(trigger_id bigint, other_trigger_id bigint, automation text, event_name text,
              deduplicated bigint, overlap text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a    agent.agents%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
  -- the session's workspace only (a session bound to none: the agent's own)
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = trigger_overlaps.agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x
   WHERE x.workspace_id = v_ws AND x.id = trigger_overlaps.agent_id AND x.deleted_at IS NULL;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'agent % does not exist', trigger_overlaps.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NOT NULL AND NOT coalesce(agent.user_can(by_user, a.id, 'view_settings'), false) THEN
    RAISE EXCEPTION 'user "%" may not view the settings of agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN QUERY
    SELECT t.id, u.id, NULL::text, CASE t.kind WHEN 'mention' THEN 'agent.mentioned' ELSE t.event_name END,
           NULL::bigint, agent._trigger_overlap(ROW(t.*)::agent.triggers, ROW(u.*)::agent.triggers)
      FROM agent.triggers t
      JOIN agent.triggers u ON u.workspace_id = t.workspace_id AND u.agent_id = t.agent_id AND u.id <> t.id
     WHERE t.workspace_id = a.workspace_id AND t.agent_id = a.id
       -- ROW(x.*)::agent.triggers, not x: on a Citus shard x has the shard's row type
       AND agent._trigger_overlap(ROW(t.*)::agent.triggers, ROW(u.*)::agent.triggers) IS NOT NULL
    UNION ALL
    SELECT o.trigger_id, NULL::bigint, o.automation, o.last_event, o.deduplicated,
           format('automation "%s" and trigger %s both launched the agent on event %s (last for %s %s); %s launch(es) made no second run',
                  o.automation, o.trigger_id, o.last_event, o.last_resource_type, coalesce(o.last_resource_id, '(any)'),
                  o.deduplicated)
      FROM agent.event_overlaps o
     WHERE o.agent_id = a.id AND o.workspace_id = a.workspace_id
    ORDER BY 1, 2 NULLS LAST, 3;
END
$$;
REVOKE ALL ON FUNCTION agent.trigger_overlaps(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.trigger_overlaps(bigint, text) IS
  'The enabled event and mention triggers of the agent that match the same events as another of its triggers, one row per (trigger, other trigger) with the overlap stated; then the triggers an application automation also launched the agent through (agent.fire_event(..., automation => label)), with how many second launches made no run. by_user, when given, needs view_settings. An agent of another workspace than the session''s is 42704.';
