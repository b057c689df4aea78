CREATE OR REPLACE FUNCTION agent.unshare(agent_id bigint, principal text, by_user text)
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
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(unshare.by_user, ''), true);
  IF principal IS NULL OR principal !~ '^(user|group):.+$' THEN
    RAISE EXCEPTION 'invalid principal "%"', coalesce(principal, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An agent is shared with user:<id> or group:<id>.';
  END IF;
  a := agent._agent_for(unshare.agent_id, by_user, 'share');
  IF principal LIKE 'user:%' THEN
    DELETE FROM agent.shares s WHERE s.workspace_id = a.workspace_id AND s.agent_id = a.id AND s.user_id = substr(principal, 6);
  ELSE
    DELETE FROM agent.shares s WHERE s.workspace_id = a.workspace_id AND s.agent_id = a.id AND s.group_id = substr(principal, 7);
  END IF;
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM agent._audit_event('agent.unshare', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('principal', principal, 'by_user', by_user, 'removed', n > 0),
                             format('%s unshared agent %s from %s', by_user, a.id, principal));
  RETURN n > 0;
END
$$;
