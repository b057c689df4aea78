CREATE OR REPLACE FUNCTION agent._restore_triggers(p_agent_id bigint, p_triggers jsonb, p_by_user text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a          agent.agents%ROWTYPE;
  s          jsonb;
  cur        agent.triggers%ROWTYPE;
  v_sid      bigint;
  v_id       bigint;
  v_mine     boolean;
  v_free     boolean;
  v_keep     bigint[] := '{}';
  v_recr     jsonb := '[]';
  v_upd      jsonb := '[]';
  v_dis      jsonb;
  v_dropped  jsonb := '[]';
  v_ws       text;
BEGIN
  v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id;
  FOR s IN SELECT x FROM jsonb_array_elements(p_triggers) x ORDER BY (x ->> 'id')::bigint LOOP
    v_sid := (s ->> 'id')::bigint;
    -- a trigger id of another workspace is taken, not free (ids are unique
    -- across workspaces): only the agent's workspace's row is locked
    SELECT * INTO cur FROM agent.triggers x WHERE x.workspace_id = a.workspace_id AND x.id = v_sid FOR UPDATE;
    v_mine := FOUND AND cur.agent_id = p_agent_id;
    v_free := NOT FOUND AND NOT EXISTS (SELECT 1 FROM agent.triggers x WHERE x.id = v_sid);
    IF p_by_user IS NOT NULL AND s ->> 'resource_type' IN ('page', 'collection', 'skill', 'agent')
       AND s ->> 'resource_id' IS NOT NULL
       AND NOT (v_mine AND cur.resource_type IS NOT DISTINCT FROM s ->> 'resource_type'
                AND cur.resource_id IS NOT DISTINCT FROM s ->> 'resource_id')
       AND NOT agent._user_reads(p_agent_id, p_by_user, s ->> 'resource_type', s ->> 'resource_id') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'trigger_id', v_sid,
                                                   'trigger_kind', s ->> 'kind', 'event_name', s ->> 'event_name',
                                                   'resource_type', s ->> 'resource_type',
                                                   'resource_id', s ->> 'resource_id', 'reason', 'no_read_access');
      CONTINUE;
    END IF;
    BEGIN
      IF v_mine THEN
        IF agent._trigger_json(cur) IS DISTINCT FROM agent._trigger_json(cur) || s THEN
          UPDATE agent.triggers x
             SET kind = s ->> 'kind', event_name = s ->> 'event_name', resource_type = s ->> 'resource_type',
                 resource_id = s ->> 'resource_id',
                 filter = CASE WHEN jsonb_typeof(s -> 'filter') = 'object' THEN s -> 'filter' ELSE '{}' END,
                 schedule = s ->> 'schedule', timezone = coalesce(s ->> 'timezone', 'UTC'),
                 prompt = s ->> 'prompt', enabled = coalesce((s ->> 'enabled')::boolean, true),
                 allow_self_retrigger = coalesce((s ->> 'allow_self_retrigger')::boolean, false),
                 show_typing = coalesce((s ->> 'show_typing')::boolean, true),
                 run_as = coalesce(s ->> 'run_as', 'creator'),
                 conversation = coalesce(s ->> 'conversation', x.conversation), updated_at = now()
           WHERE x.workspace_id = a.workspace_id AND x.id = v_sid;
          v_upd := v_upd || to_jsonb(v_sid);
        END IF;
        v_id := v_sid;
      ELSE
        v_id := CASE WHEN v_free THEN v_sid ELSE nextval(pg_get_serial_sequence('agent.triggers', 'id')) END;
        INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, resource_id,
                                    filter, schedule, timezone, prompt, enabled, allow_self_retrigger,
                                    show_typing, run_as, conversation, created_by)
        VALUES (v_id, a.workspace_id, a.id, s ->> 'kind', s ->> 'event_name', s ->> 'resource_type',
                s ->> 'resource_id',
                CASE WHEN jsonb_typeof(s -> 'filter') = 'object' THEN s -> 'filter' ELSE '{}' END, s ->> 'schedule',
                coalesce(s ->> 'timezone', 'UTC'), s ->> 'prompt', coalesce((s ->> 'enabled')::boolean, true),
                coalesce((s ->> 'allow_self_retrigger')::boolean, false),
                coalesce((s ->> 'show_typing')::boolean, true), coalesce(s ->> 'run_as', 'creator'),
                coalesce(s ->> 'conversation', 'agent'), p_by_user);
        v_recr := v_recr || jsonb_build_object('trigger_id', v_id, 'from_trigger_id', v_sid);
      END IF;
      v_keep := v_keep || v_id;
    EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'trigger_id', v_sid,
                                                   'trigger_kind', s ->> 'kind', 'reason', 'invalid',
                                                   'error', SQLERRM);
    END;
  END LOOP;

  WITH d AS (
    UPDATE agent.triggers x SET enabled = false, updated_at = now()
     WHERE x.workspace_id = a.workspace_id AND x.agent_id = p_agent_id AND x.enabled AND NOT (x.id = ANY (v_keep))
    RETURNING x.id)
  SELECT coalesce(jsonb_agg(d.id ORDER BY d.id), '[]') INTO v_dis FROM d;

  UPDATE agent.triggers x SET next_run_at = agent.cron_next(x.schedule, now(), x.timezone)
   WHERE x.workspace_id = a.workspace_id AND x.id = ANY (v_keep) AND x.kind = 'schedule' AND x.enabled AND x.next_run_at IS NULL;

  RETURN jsonb_build_object('recreated', v_recr, 'updated', v_upd, 'disabled', v_dis, 'dropped', v_dropped);
END
$$;

COMMENT ON FUNCTION agent._restore_triggers(bigint, jsonb, text) IS
  'Internal (agent.restore_version): brings the triggers of a snapshot back (updated in place, recreated under their id when free or a new one), disables the agent''s others; a trigger newly watching what by_user cannot read, or invalid now, is left out. Returns {recreated, updated, disabled, dropped}.';
