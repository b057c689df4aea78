CREATE OR REPLACE FUNCTION agent.delete_agent(agent_id bigint, by_user text)
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
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(delete_agent.by_user, ''), true);
  a := agent._agent_for(delete_agent.agent_id, by_user, 'delete');
  UPDATE agent.agents x SET deleted_at = now(), updated_at = now()
   WHERE x.workspace_id = a.workspace_id AND x.id = a.id;
  PERFORM agent._audit_event('agent.delete', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('by_user', by_user),
                             format('%s deleted agent %s "%s"', by_user, a.id, a.name));
END
$$;
