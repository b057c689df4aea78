CREATE FUNCTION agent._trigger_overlap(a agent.triggers, b agent.triggers) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ea  text := CASE a.kind WHEN 'mention' THEN 'agent.mentioned' ELSE a.event_name END;
  v_eb  text := CASE b.kind WHEN 'mention' THEN 'agent.mentioned' ELSE b.event_name END;
  v_res text;
  v_flt text;
BEGIN
  IF a.id = b.id OR a.agent_id <> b.agent_id OR NOT (a.enabled AND b.enabled)
     OR a.kind NOT IN ('event', 'mention') OR b.kind NOT IN ('event', 'mention')
     OR v_ea IS DISTINCT FROM v_eb
     OR a.resource_type IS NOT NULL AND b.resource_type IS NOT NULL AND a.resource_type <> b.resource_type
     OR a.resource_id IS NOT NULL AND b.resource_id IS NOT NULL AND a.resource_id <> b.resource_id
     OR agent._filters_exclude(coalesce(a.filter, '{}'), coalesce(b.filter, '{}')) IS NOT NULL THEN
    RETURN NULL;
  END IF;
  v_res := CASE WHEN coalesce(a.resource_type, b.resource_type) IS NULL THEN 'any resource'
                ELSE format('resource_type %s', coalesce(a.resource_type, b.resource_type)) END
        || CASE WHEN coalesce(a.resource_id, b.resource_id) IS NOT NULL
                THEN format(' id %s', coalesce(a.resource_id, b.resource_id))
                WHEN coalesce(a.resource_type, b.resource_type) IS NOT NULL THEN ' (any id)' ELSE '' END;
  v_flt := CASE WHEN coalesce(a.filter, '{}') = '{}' AND coalesce(b.filter, '{}') = '{}' THEN 'neither has a filter'
                WHEN coalesce(a.filter, '{}') = coalesce(b.filter, '{}') THEN 'their filters are the same'
                WHEN coalesce(a.filter, '{}') = '{}' OR coalesce(b.filter, '{}') = '{}'
                  THEN format('trigger %s has no filter', CASE WHEN coalesce(a.filter, '{}') = '{}' THEN a.id ELSE b.id END)
                ELSE 'filters do not exclude each other' END;
  RETURN format('both match event %s on %s; %s', v_ea, v_res, v_flt);
END
$$;
REVOKE ALL ON FUNCTION agent._trigger_overlap(agent.triggers, agent.triggers) FROM PUBLIC;
COMMENT ON FUNCTION agent._trigger_overlap(agent.triggers, agent.triggers) IS
  'Internal: how two enabled event or mention triggers of one agent match the same events (event, resource type and id, filters that do not provably exclude each other), or NULL when they do not.';
