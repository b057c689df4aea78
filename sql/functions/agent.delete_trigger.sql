CREATE OR REPLACE FUNCTION agent.delete_trigger(trigger_id bigint, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  t    agent.triggers%ROWTYPE;
  a    agent.agents%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(delete_trigger.by_user, ''), true);
  IF $1 IS NULL THEN
    RAISE EXCEPTION 'trigger_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the session's workspace only (a session bound to none: the trigger's own)
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = $1;
  END IF;
  SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = $1;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'trigger % does not exist', $1 USING ERRCODE = 'undefined_object';
  END IF;
  a := agent._agent_named(t.agent_id, by_user, 'edit_settings', true);
  SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = a.workspace_id AND x.id = $1 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'trigger % does not exist', $1 USING ERRCODE = 'undefined_object';
  END IF;
  PERFORM agent._history_hold(a.id, true);
  DELETE FROM agent.triggers x WHERE x.workspace_id = t.workspace_id AND x.id = t.id;
  PERFORM agent._history_hold(a.id, false);
  PERFORM agent._trigger_history(a, 'delete', t.id, agent._trigger_json(t), NULL, by_user, false);
END
$$;
