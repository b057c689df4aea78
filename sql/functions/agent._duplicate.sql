CREATE OR REPLACE FUNCTION agent._duplicate(p_agent_id bigint, by_user text, OUT new_agent_id bigint, OUT report jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  a          agent.agents%ROWTYPE;
  g          record;
  t          record;
  d          jsonb;
  v_new      bigint;
  v_dropped  jsonb := '[]';
  v_down     jsonb := '[]';
  v_grants   jsonb := '[]';
  v_trigs    jsonb := '[]';
  v_deleg    jsonb := '[]';
  v_page     text;
  v_tid      bigint;
  v_srcver   integer;
  v_report   jsonb;
  v_live     boolean;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(_duplicate.by_user, ''), true);
  a := agent._agent_named(p_agent_id, by_user, 'duplicate');
  SELECT max(v.version) INTO v_srcver FROM agent.versions v WHERE v.workspace_id = a.workspace_id AND v.agent_id = a.id;

  -- the instruction page is kept only when by_user can read it
  v_page := a.instruction_page_id;
  IF v_page IS NOT NULL AND NOT agent._user_reads(a.id, by_user, 'page', v_page) THEN
    v_dropped := v_dropped || jsonb_build_object('kind', 'instruction_page', 'resource_type', 'page',
                                                 'resource_id', v_page, 'reason', 'no_read_access');
    v_page := NULL;
  END IF;
  -- delegable agents: only those of the same workspace by_user can see
  FOR d IN SELECT x FROM jsonb_array_elements(a.delegation) x LOOP
    -- the lookup apart from the level check (see agent._deputy_filter)
    v_live := (d #>> '{}') ~ '^[0-9]{1,18}$'
              AND EXISTS (SELECT 1 FROM agent.agents x
                           WHERE x.workspace_id = a.workspace_id AND x.id = (d #>> '{}')::bigint);
    IF v_live AND agent._level_rank(agent._user_level(by_user, (d #>> '{}')::bigint)) >= 1 THEN
      v_deleg := v_deleg || d;
    ELSE
      v_dropped := v_dropped || jsonb_build_object('kind', 'delegation', 'agent_id', d,
                                                   'reason', 'no_access');
    END IF;
  END LOOP;

  INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, instruction_page_id, model,
                            approval_mode, web_access, delegation)
  VALUES (a.workspace_id, by_user, left(a.name, 193) || ' (copy)', a.instructions, v_page, a.model,
          a.approval_mode, a.web_access, v_deleg)
  RETURNING id INTO v_new;

  -- grants: copied where by_user can read the resource; edit kept only where they can edit
  FOR g IN SELECT * FROM agent.access x WHERE x.workspace_id = a.workspace_id AND x.agent_id = a.id
            ORDER BY x.resource_type, x.resource_id LOOP
    IF NOT agent._user_reads(a.id, by_user, g.resource_type, g.resource_id) THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', g.resource_type,
                                                   'resource_id', g.resource_id, 'access', g.access,
                                                   'reason', 'no_read_access');
      CONTINUE;
    END IF;
    IF g.access = 'edit' AND NOT agent._user_reads(a.id, by_user, g.resource_type, g.resource_id, 'edit') THEN
      INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access, granted_by)
      VALUES (a.workspace_id, v_new, g.resource_type, g.resource_id, 'read', by_user);
      v_down := v_down || jsonb_build_object('kind', 'access', 'resource_type', g.resource_type,
                                             'resource_id', g.resource_id, 'from', 'edit', 'to', 'read',
                                             'reason', 'no_edit_access');
      v_grants := v_grants || jsonb_build_object('resource_type', g.resource_type,
                                                 'resource_id', g.resource_id, 'access', 'read');
    ELSE
      INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access, granted_by)
      VALUES (a.workspace_id, v_new, g.resource_type, g.resource_id, g.access, by_user);
      v_grants := v_grants || jsonb_build_object('resource_type', g.resource_type,
                                                 'resource_id', g.resource_id, 'access', g.access);
    END IF;
  END LOOP;

  -- triggers: copied (disabled) when they watch nothing in particular or a resource by_user can read
  FOR t IN SELECT * FROM agent.triggers x WHERE x.workspace_id = a.workspace_id AND x.agent_id = a.id ORDER BY x.id LOOP
    IF t.resource_type IS NOT NULL AND t.resource_id IS NOT NULL
       AND NOT agent._user_reads(a.id, by_user, t.resource_type, t.resource_id) THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'trigger_id', t.id,
                                                   'trigger_kind', t.kind, 'event_name', t.event_name,
                                                   'resource_type', t.resource_type,
                                                   'resource_id', t.resource_id, 'reason', 'no_read_access');
      CONTINUE;
    END IF;
    INSERT INTO agent.triggers (workspace_id, agent_id, kind, event_name, resource_type, resource_id,
                                filter, schedule, timezone, prompt, enabled, allow_self_retrigger,
                                show_typing, run_as, created_by)
    VALUES (a.workspace_id, v_new, t.kind, t.event_name, t.resource_type, t.resource_id, t.filter,
            t.schedule, t.timezone, t.prompt, false, t.allow_self_retrigger, t.show_typing, t.run_as,
            by_user)
    RETURNING id INTO v_tid;
    v_trigs := v_trigs || jsonb_build_object('from_trigger_id', t.id, 'trigger_id', v_tid, 'enabled', false);
  END LOOP;

  v_report := jsonb_build_object(
    'source_agent_id', a.id,
    'source_version', v_srcver,
    'copied', jsonb_build_object('access', v_grants, 'triggers', v_trigs, 'delegation', v_deleg,
                                 'instruction_page_id', v_page),
    'dropped', v_dropped,
    'downgraded', v_down,
    'not_copied', jsonb_build_array('shares', 'tool_connections', 'limits', 'history'));
  PERFORM agent._write_version(v_new, by_user, format('duplicated from agent %s version %s', a.id, v_srcver));
  PERFORM agent._audit_event('agent.duplicate', 'success', 'agent', v_new::text, a.workspace_id, by_user,
                             jsonb_build_object('source_agent_id', a.id, 'by_user', by_user, 'report', v_report),
                             format('%s duplicated agent %s as %s (%s dropped)', by_user, a.id, v_new,
                                    jsonb_array_length(v_dropped)));
  new_agent_id := v_new;
  report := v_report;
END
$$;
