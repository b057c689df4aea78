CREATE OR REPLACE FUNCTION agent.revoke(agent_id bigint, resource_type text, resource_id text,
                             by_user text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_column
DECLARE
  a agent.agents%ROWTYPE;
  n integer;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(revoke.by_user, ''), true);
  a := agent._agent_named(revoke.agent_id, by_user, 'edit_settings', true);
  DELETE FROM agent.access g
   WHERE g.workspace_id = a.workspace_id AND g.agent_id = a.id AND g.resource_type = revoke.resource_type AND g.resource_id = revoke.resource_id;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN
    PERFORM agent._write_version(a.id, by_user, format('revoked %s %s', resource_type, resource_id));
  END IF;
  PERFORM agent._audit_event('agent.revoke', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('resource_type', resource_type, 'resource_id', resource_id,
                                                'by_user', by_user, 'removed', n > 0),
                             format('agent %s revoked from %s %s', a.id, resource_type, resource_id));
  RETURN n > 0;
END
$$;
