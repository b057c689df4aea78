CREATE OR REPLACE FUNCTION agent._trigger_json(t agent.triggers) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RETURN jsonb_build_object(
    'id', t.id, 'kind', t.kind, 'event_name', t.event_name,
    'resource_type', t.resource_type, 'resource_id', t.resource_id,
    'filter', t.filter, 'schedule', t.schedule, 'timezone', t.timezone,
    'prompt', t.prompt, 'enabled', t.enabled,
    'allow_self_retrigger', t.allow_self_retrigger,
    'show_typing', t.show_typing, 'run_as', t.run_as, 'conversation', t.conversation);
END
$$;

COMMENT ON FUNCTION agent._trigger_json(agent.triggers) IS
  'Internal: the settings of a trigger (id, kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation), as snapshots and audit rows hold them.';
