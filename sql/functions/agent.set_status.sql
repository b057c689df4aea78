CREATE OR REPLACE FUNCTION agent.set_status(agent_id bigint, status text, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_column
DECLARE
  a agent.agents%ROWTYPE;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(set_status.by_user, ''), true);
  IF status IS NULL OR status NOT IN ('active', 'suspended') THEN
    RAISE EXCEPTION 'invalid agent status "%"', coalesce(status, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A status is active or suspended.';
  END IF;
  a := agent._agent_for(set_status.agent_id, by_user, 'suspend');
  UPDATE agent.agents x SET status = set_status.status, updated_at = now()
   WHERE x.workspace_id = a.workspace_id AND x.id = a.id;
  PERFORM agent._audit_event('agent.set_status', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('from', a.status, 'to', status, 'by_user', by_user),
                             format('%s set agent %s %s', by_user, a.id, status));
END
$$;
