CREATE OR REPLACE FUNCTION agent.create_agent(workspace_id text, owner_id text, name text,
                                   settings jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_column
DECLARE
  v_id bigint;
BEGIN
  -- the audit rows of this call name owner_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(create_agent.owner_id, ''), true);
  IF workspace_id IS NULL OR workspace_id = '' THEN
    RAISE EXCEPTION 'workspace_id must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF owner_id IS NULL OR owner_id = '' THEN
    RAISE EXCEPTION 'owner_id must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF name IS NULL OR length(btrim(name)) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'agent name must have 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_workspace_arg(create_agent.workspace_id);
  PERFORM agent._check_settings(coalesce(settings, '{}'));
  INSERT INTO agent.agents (workspace_id, owner_id, name)
  VALUES (create_agent.workspace_id, create_agent.owner_id, btrim(create_agent.name))
  RETURNING id INTO v_id;
  PERFORM agent._apply_settings(v_id, coalesce(settings, '{}'), owner_id);
  PERFORM agent._write_version(v_id, owner_id, 'created');
  PERFORM agent._audit_event('agent.create', 'success', 'agent', v_id::text, workspace_id, owner_id,
                             jsonb_build_object('name', name, 'settings', settings),
                             format('%s created agent %s "%s"', owner_id, v_id, btrim(name)));
  RETURN v_id;
END
$$;
