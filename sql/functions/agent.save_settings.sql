CREATE OR REPLACE FUNCTION agent.save_settings(agent_id bigint, settings jsonb, by_user text, note text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_column
DECLARE
  a      agent.agents%ROWTYPE;
  v_prev jsonb;
  v_ver  bigint;
  v_sum  text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(save_settings.by_user, ''), true);
  a := agent._agent_named(save_settings.agent_id, by_user, 'edit_settings');
  PERFORM agent._check_settings(settings);
  -- the deputy rule: new or raised grants, a new instruction page and new
  -- delegable agents need by_user's own access (42501)
  PERFORM agent._deputy_filter(a.id, by_user, settings, true);
  v_prev := agent._snapshot(a.id);
  PERFORM agent._apply_settings(a.id, settings, by_user);
  v_ver := agent._write_version(a.id, by_user, note, v_prev);
  -- the summary first, then the audit call with values only: inside a query
  -- routed to a shard, Citus would run agent._audit_event on the shard's node
  SELECT format('%s saved agent %s settings (version %s: %s)', by_user, a.id, v.version, v.note) INTO v_sum
    FROM agent.versions v WHERE v.workspace_id = a.workspace_id AND v.id = v_ver;
  PERFORM agent._audit_event('agent.save_settings', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('settings', settings, 'by_user', by_user,
                                                'version_id', v_ver, 'note', note),
                             v_sum);
  RETURN v_ver;
END
$$;
