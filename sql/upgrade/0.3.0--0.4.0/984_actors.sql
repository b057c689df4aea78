-- Issue 30, findings 8 and 9 (helper actors).
-- Actors on lifecycle changes: every API function that takes a user id sets
-- pg_agents.acting_user for its own call (SET clause + set_config), and the
-- audit rows of the call name that user (src/audit_trigger.c AuditIdentity).
-- triggers.conversation is a trigger setting: in _trigger_json, snapshots,
-- set_trigger, restores, _check_trigger and the history trigger's columns.

CREATE OR REPLACE FUNCTION agent.share(agent_id bigint, principal text, level text, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_column
DECLARE
  a   agent.agents%ROWTYPE;
  v_u text;
  v_g text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(share.by_user, ''), true);
  IF principal IS NULL OR principal !~ '^(user|group):.+$' THEN
    RAISE EXCEPTION 'invalid principal "%"', coalesce(principal, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An agent is shared with user:<id> or group:<id>.';
  END IF;
  IF level IS NULL OR level NOT IN ('full', 'edit', 'interact') THEN
    RAISE EXCEPTION 'invalid share level "%"', coalesce(level, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A level is full, edit or interact.';
  END IF;
  a := agent._agent_for(share.agent_id, by_user, 'share');
  IF principal LIKE 'user:%' THEN
    v_u := substr(principal, 6);
    -- now() in VALUES, not in DO UPDATE (Citus: immutable there only)
    INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by, created_at)
    VALUES (a.workspace_id, a.id, v_u, share.level, by_user, now())
    ON CONFLICT (agent_id, user_id, workspace_id) WHERE user_id IS NOT NULL
    DO UPDATE SET level = EXCLUDED.level, created_by = EXCLUDED.created_by, created_at = EXCLUDED.created_at;
  ELSE
    v_g := substr(principal, 7);
    INSERT INTO agent.shares (workspace_id, agent_id, group_id, level, created_by, created_at)
    VALUES (a.workspace_id, a.id, v_g, share.level, by_user, now())
    ON CONFLICT (agent_id, group_id, workspace_id) WHERE group_id IS NOT NULL
    DO UPDATE SET level = EXCLUDED.level, created_by = EXCLUDED.created_by, created_at = EXCLUDED.created_at;
  END IF;
  PERFORM agent._audit_event('agent.share', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('principal', principal, 'level', level, 'by_user', by_user),
                             format('%s shared agent %s with %s at %s', by_user, a.id, principal, level));
END
$$;

COMMENT ON FUNCTION agent.share(bigint, text, text, text) IS
  'Shares the agent with user:<id> or group:<id> at full, edit or interact (replacing a previous level); by_user needs full.';

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

COMMENT ON FUNCTION agent.unshare(bigint, text, text) IS
  'Removes the share of the agent with user:<id> or group:<id>; true when there was one. by_user needs full.';

CREATE OR REPLACE FUNCTION agent.grant(agent_id bigint, resource_type text, resource_id text,
                            access text DEFAULT 'read', by_user text DEFAULT NULL)
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
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce("grant".by_user, ''), true);
  PERFORM agent._check_grant(resource_type, resource_id, access);
  a := agent._agent_named("grant".agent_id, by_user, 'edit_settings', true);
  -- the deputy rule: by_user grants only what they may read (edit) themselves
  PERFORM agent._deputy_filter(a.id, by_user,
            jsonb_build_object('access', jsonb_build_array(jsonb_build_object(
              'resource_type', "grant".resource_type, 'resource_id', "grant".resource_id,
              'access', "grant".access))), true);
  -- now() in VALUES, not in DO UPDATE (Citus: immutable there only)
  INSERT INTO agent.access AS g (workspace_id, agent_id, resource_type, resource_id, access, granted_by, granted_at)
  VALUES (a.workspace_id, a.id, "grant".resource_type, "grant".resource_id, "grant".access, by_user, now())
  ON CONFLICT ON CONSTRAINT access_pkey
  DO UPDATE SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = EXCLUDED.granted_at;
  PERFORM agent._write_version(a.id, by_user, format('granted %s on %s %s', access, resource_type, resource_id));
  PERFORM agent._audit_event('agent.grant', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('resource_type', resource_type, 'resource_id', resource_id,
                                                'access', access, 'by_user', by_user),
                             format('agent %s granted %s on %s %s', a.id, access, resource_type, resource_id));
END
$$;

COMMENT ON FUNCTION agent.grant(bigint, text, text, text, text) IS
  'Grants the agent read or edit on a resource (replacing a previous grant) and writes a version; by_user needs edit on the agent and, unless they own it, must read (for edit: edit) the resource themselves, 42501 otherwise (NULL: an application call, unchecked). An agent of another workspace is 42704.';

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

COMMENT ON FUNCTION agent.revoke(bigint, text, text, text) IS
  'Removes the agent''s grant on a resource (writing a version when there was one); true when there was one. by_user needs edit (NULL: an application call). An agent of another workspace is 42704.';

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

CREATE OR REPLACE FUNCTION agent._snapshot(p_agent_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_snap jsonb;
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT jsonb_build_object(
    'name', a.name,
    'instructions', a.instructions,
    'instruction_page_id', a.instruction_page_id,
    'model', a.model,
    'approval_mode', a.approval_mode,
    'scope', a.scope,
    'web_access', a.web_access,
    'delegation', a.delegation,
    'max_iterations', a.max_iterations,
    'hourly_run_cap', a.hourly_run_cap,
    'credit_limit_monthly', a.credit_limit_monthly,
    'default_token_budget', a.default_token_budget,
    'access', coalesce((SELECT jsonb_agg(jsonb_build_object('resource_type', g.resource_type,
                                                            'resource_id', g.resource_id,
                                                            'access', g.access)
                                         ORDER BY g.resource_type, g.resource_id)
                          FROM agent.access g WHERE g.workspace_id = a.workspace_id AND g.agent_id = a.id), '[]'),
    -- agent._trigger_json's object, built here: no whole-row t (on a Citus
    -- shard t has the shard's row type) and no function call per trigger
    'triggers', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                   'id', t.id, 'kind', t.kind, 'event_name', t.event_name,
                                   'resource_type', t.resource_type, 'resource_id', t.resource_id,
                                   'filter', t.filter, 'schedule', t.schedule, 'timezone', t.timezone,
                                   'prompt', t.prompt, 'enabled', t.enabled,
                                   'allow_self_retrigger', t.allow_self_retrigger,
                                   'show_typing', t.show_typing, 'run_as', t.run_as,
                                   'conversation', t.conversation) ORDER BY t.id)
                            FROM agent.triggers t WHERE t.workspace_id = a.workspace_id AND t.agent_id = a.id), '[]'))
    INTO v_snap
    FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = p_agent_id;
  RETURN v_snap;
END
$$;

COMMENT ON FUNCTION agent._snapshot(bigint) IS
  'Internal: the agent''s settings as a version snapshot: instructions, instruction_page_id, model, approval_mode, scope, web_access, delegation, limits, access list and triggers.';

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

COMMENT ON FUNCTION agent.create_agent(text, text, text, jsonb) IS
  'Creates an agent owned by owner_id (who holds full implicitly) with optional settings, and writes version 1.';

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

COMMENT ON FUNCTION agent.save_settings(bigint, jsonb, text, text) IS
  'Saves settings (edit level): checks every key, applies them, writes a version whose note lists the changed sections, audits. A grant the agent does not hold yet (or raised to edit), a new instruction page and a new delegable agent need by_user''s own access (42501). Returns the version id.';

CREATE OR REPLACE FUNCTION agent.restore_version(version_id bigint, by_user text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_column
DECLARE
  v       agent.versions%ROWTYPE;
  a       agent.agents%ROWTYPE;
  v_prev  jsonb;
  v_ver   bigint;
  v_filt  jsonb;
  v_trig  jsonb;
  v_left  jsonb;
  v_note  text;
  v_parts text[] := '{}';
  v_ws    text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(restore_version.by_user, ''), true);
  -- the session's workspace only (a session bound to none: the version's own)
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.versions x WHERE x.id = version_id;
  END IF;
  SELECT * INTO v FROM agent.versions x WHERE x.workspace_id = v_ws AND x.id = version_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'version % does not exist', coalesce(version_id::text, 'NULL') USING ERRCODE = 'undefined_object';
  END IF;
  a := agent._agent_named(v.agent_id, by_user, 'edit_settings');
  v_prev := agent._snapshot(a.id);
  -- The deputy rule: what the snapshot would grant anew (a grant the agent
  -- does not hold now, or holds at read only; an instruction page; a
  -- delegable agent) is restored only as far as by_user's own access goes;
  -- the rest is left out and reported, never restored silently.
  v_filt := agent._deputy_filter(a.id, by_user, v.snapshot - 'triggers', false);
  -- one version and one audit row for the whole restore: the trigger writes
  -- below are not versioned one by one
  PERFORM agent._history_hold(a.id, true);
  PERFORM agent._apply_settings(a.id, v_filt -> 'settings', by_user);
  v_trig := agent._restore_triggers(a.id, coalesce(v.snapshot -> 'triggers', '[]'), by_user);
  PERFORM agent._history_hold(a.id, false);

  v_left := (v_filt -> 'dropped') || (v_trig -> 'dropped');
  IF jsonb_array_length(v_trig -> 'recreated') > 0 THEN
    v_parts := v_parts || format('%s recreated', jsonb_array_length(v_trig -> 'recreated'));
  END IF;
  IF jsonb_array_length(v_trig -> 'updated') > 0 THEN
    v_parts := v_parts || format('%s updated', jsonb_array_length(v_trig -> 'updated'));
  END IF;
  IF jsonb_array_length(v_trig -> 'disabled') > 0 THEN
    v_parts := v_parts || format('%s disabled', jsonb_array_length(v_trig -> 'disabled'));
  END IF;
  v_note := format('restored version %s', v.version);
  IF cardinality(v_parts) > 0 THEN
    v_note := v_note || '; triggers ' || array_to_string(v_parts, ', ');
  END IF;
  IF jsonb_array_length(v_left) > 0 THEN
    v_note := v_note || '; left out: ' || agent._report_items(v_left);
  END IF;
  IF jsonb_array_length(v_filt -> 'downgraded') > 0 THEN
    v_note := v_note || '; read only: ' || agent._report_items(v_filt -> 'downgraded');
  END IF;
  v_ver := agent._write_version(a.id, by_user, v_note, v_prev);
  IF jsonb_array_length(v_left) > 0 OR jsonb_array_length(v_filt -> 'downgraded') > 0 THEN
    RAISE NOTICE 'restoring version % of agent % left out what user "%" cannot read', v.version, a.id, by_user
      USING DETAIL = concat_ws(' ',
              CASE WHEN jsonb_array_length(v_left) > 0 THEN 'Left out: ' || agent._report_items(v_left) || '.' END,
              CASE WHEN jsonb_array_length(v_filt -> 'downgraded') > 0
                   THEN 'Restored as read only: ' || agent._report_items(v_filt -> 'downgraded') || '.' END),
            HINT = 'The version note and the audit row (agent.restore_version) list them; a user who can read them may grant them again.';
  END IF;
  PERFORM agent._audit_event('agent.restore_version', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('restored_version', v.version, 'version_id', v_ver, 'by_user', by_user,
                                                'triggers', v_trig - 'dropped', 'left_out', v_left,
                                                'downgraded', v_filt -> 'downgraded'),
                             format('%s restored agent %s to version %s%s', by_user, a.id, v.version,
                                    CASE WHEN jsonb_array_length(v_left) > 0
                                         THEN format(' (%s left out)', jsonb_array_length(v_left)) ELSE '' END));
  RETURN v_ver;
END
$$;

COMMENT ON FUNCTION agent.restore_version(bigint, text) IS
  'Restores a version (edit level): a new version made from the old snapshot, grants and triggers included (triggers of the snapshot recreated or updated, the others disabled, never deleted); history is never rewritten. What by_user cannot read themselves is left out (NOTICE, version note, audit row). Returns the new version id.';

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

COMMENT ON FUNCTION agent._duplicate(bigint, text) IS
  'Internal: the body of agent.duplicate.';

CREATE OR REPLACE FUNCTION agent.set_trigger(agent_id bigint, "trigger" jsonb, by_user text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  p     jsonb := $2;
  a     agent.agents%ROWTYPE;
  t     agent.triggers%ROWTYPE;
  v_id  bigint;
  v_old jsonb;
  m     jsonb;
  v_op  text;
  v_view regclass;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(set_trigger.by_user, ''), true);
  PERFORM agent._check_trigger(p, false);
  a := agent._agent_named($1, by_user, 'edit_settings', true);
  IF p ? 'id' AND jsonb_typeof(p -> 'id') <> 'null' THEN
    v_id := (p ->> 'id')::bigint;
    SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = a.workspace_id AND x.id = v_id FOR UPDATE;
    IF NOT FOUND OR t.agent_id <> a.id THEN
      RAISE EXCEPTION 'trigger % does not exist', v_id
        USING ERRCODE = 'undefined_object', DETAIL = format('Agent %s has no trigger %s.', a.id, v_id);
    END IF;
    v_op := 'update';
    v_old := agent._trigger_json(t);
    m := v_old || (p - 'id');
  ELSE
    v_op := 'create';
    m := jsonb_build_object('event_name', NULL, 'resource_type', NULL, 'resource_id', NULL, 'filter', '{}'::jsonb,
                            'schedule', NULL, 'timezone', 'UTC', 'prompt', NULL, 'enabled', true,
                            'allow_self_retrigger', false, 'show_typing', true, 'run_as', 'creator',
                            'conversation', 'agent')
         || (p - 'id');
  END IF;
  IF jsonb_typeof(m -> 'filter') IS DISTINCT FROM 'object' THEN
    m := jsonb_set(m, '{filter}', '{}');
  END IF;
  IF jsonb_typeof(m -> 'timezone') IS DISTINCT FROM 'string' THEN
    m := jsonb_set(m, '{timezone}', '"UTC"');
  END IF;
  PERFORM agent._check_trigger(m, true);
  -- run_as decides whom a schedule's runs act for; given for another kind
  -- it would be stored and ignored (issue 31)
  IF p ? 'run_as' AND m ->> 'kind' IS DISTINCT FROM 'schedule' THEN
    RAISE EXCEPTION 'trigger key "run_as" cannot be set on a trigger of kind %', m ->> 'kind'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A run of an event or mention trigger acts for the event''s user, a run of an API trigger for the user who fired it.',
            HINT = 'run_as applies to schedule triggers only; leave the key out for other kinds.';
  END IF;
  -- A filter's view is checked against the role saving the trigger
  -- (agent.validate_filter checks the current user, which in here is this
  -- function's owner): a SECURITY DEFINER function cannot see the role that
  -- called it, so the session's login role stands for it.
  IF jsonb_typeof(m -> 'filter' -> 'view') = 'string'
     AND (v_old -> 'filter' -> 'view') IS DISTINCT FROM (m -> 'filter' -> 'view') THEN
    v_view := to_regclass(m -> 'filter' ->> 'view');
    IF v_view IS NOT NULL AND NOT has_table_privilege(session_user, v_view, 'SELECT') THEN
      RAISE EXCEPTION 'invalid filter: permission denied for view "%"', m -> 'filter' ->> 'view'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'The user saving the trigger must be allowed to read the view.';
    END IF;
  END IF;
  -- the deputy rule: a trigger hands the agent the payloads of what it
  -- watches, so a newly watched resource needs by_user's own read access
  IF by_user IS NOT NULL AND m ->> 'resource_type' IN ('page', 'collection', 'skill', 'agent')
     AND m ->> 'resource_id' IS NOT NULL
     AND (v_op = 'create' OR (v_old ->> 'resource_type') IS DISTINCT FROM (m ->> 'resource_type')
          OR (v_old ->> 'resource_id') IS DISTINCT FROM (m ->> 'resource_id'))
     AND NOT agent._user_reads(a.id, by_user, m ->> 'resource_type', m ->> 'resource_id') THEN
    RAISE EXCEPTION 'user "%" cannot read % "%"', by_user, m ->> 'resource_type', m ->> 'resource_id'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A trigger may only watch a resource the user who sets it can read.';
  END IF;

  PERFORM agent._history_hold(a.id, true);
  IF v_op = 'create' THEN
    INSERT INTO agent.triggers AS x (workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                                     schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing,
                                     run_as, conversation, created_by)
    VALUES (a.workspace_id, a.id, m ->> 'kind', m ->> 'event_name', m ->> 'resource_type', m ->> 'resource_id',
            m -> 'filter', m ->> 'schedule', m ->> 'timezone', m ->> 'prompt', (m ->> 'enabled')::boolean,
            (m ->> 'allow_self_retrigger')::boolean, (m ->> 'show_typing')::boolean, m ->> 'run_as',
            m ->> 'conversation', by_user)
    RETURNING * INTO t;
  ELSE
    UPDATE agent.triggers x
       SET kind = m ->> 'kind', event_name = m ->> 'event_name', resource_type = m ->> 'resource_type',
           resource_id = m ->> 'resource_id', filter = m -> 'filter', schedule = m ->> 'schedule',
           timezone = m ->> 'timezone', prompt = m ->> 'prompt', enabled = (m ->> 'enabled')::boolean,
           allow_self_retrigger = (m ->> 'allow_self_retrigger')::boolean,
           show_typing = (m ->> 'show_typing')::boolean, run_as = m ->> 'run_as',
           conversation = m ->> 'conversation', updated_at = now()
     WHERE x.workspace_id = a.workspace_id AND x.id = v_id
    RETURNING * INTO t;
  END IF;
  PERFORM agent._history_hold(a.id, false);
  PERFORM agent._trigger_history(a, v_op, t.id, v_old, agent._trigger_json(t), by_user, false);
  RETURN t.id;
END
$$;

COMMENT ON FUNCTION agent.set_trigger(bigint, jsonb, text) IS
  'Creates a trigger of the agent, or changes it when "trigger" has an id (keys given replace, others are kept); edit level (42501; by_user NULL: an application call). Keys: kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation; validated as every trigger write (22023). A watched page, collection, skill or agent must be readable by by_user. Writes one version (its note names the trigger) and one audit row (agent.trigger.create/update). An agent or trigger of another workspace is 42704. Returns the trigger id.';

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

COMMENT ON FUNCTION agent.delete_trigger(bigint, text) IS
  'Deletes a trigger; edit level on its agent (42501; by_user NULL: an application call). Writes one version (its note names the trigger) and one audit row (agent.trigger.delete). A trigger of another workspace is 42704.';

CREATE OR REPLACE FUNCTION agent._restore_triggers(p_agent_id bigint, p_triggers jsonb, p_by_user text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a          agent.agents%ROWTYPE;
  s          jsonb;
  cur        agent.triggers%ROWTYPE;
  v_sid      bigint;
  v_id       bigint;
  v_mine     boolean;
  v_free     boolean;
  v_keep     bigint[] := '{}';
  v_recr     jsonb := '[]';
  v_upd      jsonb := '[]';
  v_dis      jsonb;
  v_dropped  jsonb := '[]';
  v_ws       text;
BEGIN
  v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id;
  FOR s IN SELECT x FROM jsonb_array_elements(p_triggers) x ORDER BY (x ->> 'id')::bigint LOOP
    v_sid := (s ->> 'id')::bigint;
    -- a trigger id of another workspace is taken, not free (ids are unique
    -- across workspaces): only the agent's workspace's row is locked
    SELECT * INTO cur FROM agent.triggers x WHERE x.workspace_id = a.workspace_id AND x.id = v_sid FOR UPDATE;
    v_mine := FOUND AND cur.agent_id = p_agent_id;
    v_free := NOT FOUND AND NOT EXISTS (SELECT 1 FROM agent.triggers x WHERE x.id = v_sid);
    IF p_by_user IS NOT NULL AND s ->> 'resource_type' IN ('page', 'collection', 'skill', 'agent')
       AND s ->> 'resource_id' IS NOT NULL
       AND NOT (v_mine AND cur.resource_type IS NOT DISTINCT FROM s ->> 'resource_type'
                AND cur.resource_id IS NOT DISTINCT FROM s ->> 'resource_id')
       AND NOT agent._user_reads(p_agent_id, p_by_user, s ->> 'resource_type', s ->> 'resource_id') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'trigger_id', v_sid,
                                                   'trigger_kind', s ->> 'kind', 'event_name', s ->> 'event_name',
                                                   'resource_type', s ->> 'resource_type',
                                                   'resource_id', s ->> 'resource_id', 'reason', 'no_read_access');
      CONTINUE;
    END IF;
    BEGIN
      IF v_mine THEN
        IF agent._trigger_json(cur) IS DISTINCT FROM agent._trigger_json(cur) || s THEN
          UPDATE agent.triggers x
             SET kind = s ->> 'kind', event_name = s ->> 'event_name', resource_type = s ->> 'resource_type',
                 resource_id = s ->> 'resource_id',
                 filter = CASE WHEN jsonb_typeof(s -> 'filter') = 'object' THEN s -> 'filter' ELSE '{}' END,
                 schedule = s ->> 'schedule', timezone = coalesce(s ->> 'timezone', 'UTC'),
                 prompt = s ->> 'prompt', enabled = coalesce((s ->> 'enabled')::boolean, true),
                 allow_self_retrigger = coalesce((s ->> 'allow_self_retrigger')::boolean, false),
                 show_typing = coalesce((s ->> 'show_typing')::boolean, true),
                 run_as = coalesce(s ->> 'run_as', 'creator'),
                 conversation = coalesce(s ->> 'conversation', x.conversation), updated_at = now()
           WHERE x.workspace_id = a.workspace_id AND x.id = v_sid;
          v_upd := v_upd || to_jsonb(v_sid);
        END IF;
        v_id := v_sid;
      ELSE
        v_id := CASE WHEN v_free THEN v_sid ELSE nextval(pg_get_serial_sequence('agent.triggers', 'id')) END;
        INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, resource_id,
                                    filter, schedule, timezone, prompt, enabled, allow_self_retrigger,
                                    show_typing, run_as, conversation, created_by)
        VALUES (v_id, a.workspace_id, a.id, s ->> 'kind', s ->> 'event_name', s ->> 'resource_type',
                s ->> 'resource_id',
                CASE WHEN jsonb_typeof(s -> 'filter') = 'object' THEN s -> 'filter' ELSE '{}' END, s ->> 'schedule',
                coalesce(s ->> 'timezone', 'UTC'), s ->> 'prompt', coalesce((s ->> 'enabled')::boolean, true),
                coalesce((s ->> 'allow_self_retrigger')::boolean, false),
                coalesce((s ->> 'show_typing')::boolean, true), coalesce(s ->> 'run_as', 'creator'),
                coalesce(s ->> 'conversation', 'agent'), p_by_user);
        v_recr := v_recr || jsonb_build_object('trigger_id', v_id, 'from_trigger_id', v_sid);
      END IF;
      v_keep := v_keep || v_id;
    EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'trigger_id', v_sid,
                                                   'trigger_kind', s ->> 'kind', 'reason', 'invalid',
                                                   'error', SQLERRM);
    END;
  END LOOP;

  WITH d AS (
    UPDATE agent.triggers x SET enabled = false, updated_at = now()
     WHERE x.workspace_id = a.workspace_id AND x.agent_id = p_agent_id AND x.enabled AND NOT (x.id = ANY (v_keep))
    RETURNING x.id)
  SELECT coalesce(jsonb_agg(d.id ORDER BY d.id), '[]') INTO v_dis FROM d;

  UPDATE agent.triggers x SET next_run_at = agent.cron_next(x.schedule, now(), x.timezone)
   WHERE x.workspace_id = a.workspace_id AND x.id = ANY (v_keep) AND x.kind = 'schedule' AND x.enabled AND x.next_run_at IS NULL;

  RETURN jsonb_build_object('recreated', v_recr, 'updated', v_upd, 'disabled', v_dis, 'dropped', v_dropped);
END
$$;

COMMENT ON FUNCTION agent._restore_triggers(bigint, jsonb, text) IS
  'Internal (agent.restore_version): brings the triggers of a snapshot back (updated in place, recreated under their id when free or a new one), disables the agent''s others; a trigger newly watching what by_user cannot read, or invalid now, is left out. Returns {recreated, updated, disabled, dropped}.';

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

COMMENT ON FUNCTION agent.set_status(bigint, text, text) IS
  'Suspends or resumes an agent (full level). Suspension stops new autonomous runs, not chat.';

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

COMMENT ON FUNCTION agent.delete_agent(bigint, text) IS
  'Soft-deletes an agent (full level): deleted_at is set; it loses every access and every level, and its history stays.';

CREATE OR REPLACE FUNCTION agent.rerun(run_id bigint, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  o    agent.runs%ROWTYPE;
  a    agent.agents%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(rerun.by_user, ''), true);
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = rerun.run_id;
  END IF;
  SELECT * INTO o FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = rerun.run_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', rerun.run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = o.agent_id;
  IF a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', o.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF o.regime = 'manual' THEN
    IF NOT coalesce(agent.user_can(by_user, o.agent_id, 'chat'), false)
       OR (o.requested_by IS DISTINCT FROM by_user
           AND agent.activity_scope(by_user, o.agent_id) IS DISTINCT FROM 'all') THEN
      RAISE EXCEPTION 'user "%" may not re-run run %', by_user, o.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Re-running a manual run requires the chat level and seeing the run (one''s own run, or the full level).';
    END IF;
  ELSE
    IF NOT coalesce(agent.user_can(by_user, o.agent_id, 'edit_settings'), false) THEN
      RAISE EXCEPTION 'user "%" may not re-run run %', by_user, o.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Re-running an autonomous run requires the edit level on the agent.';
    END IF;
    IF a.status = 'suspended' THEN
      RAISE EXCEPTION 'agent % is suspended', a.id
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = 'A suspended agent starts no autonomous run; chat still works.';
    END IF;
  END IF;
  v_id := agent._enqueue_run(o.agent_id, o.regime, 'rerun',
                             o.input || jsonb_build_object('rerun_of', o.id), NULL,
                             CASE WHEN o.regime = 'manual' THEN by_user ELSE coalesce(by_user, o.requested_by) END);
  SELECT * INTO n FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_id;
  PERFORM agent._audit_run('run.rerun', n, 'success',
                           jsonb_build_object('rerun_of', o.id, 'by_user', by_user, 'status', n.status),
                           format('run %s re-runs run %s', v_id, o.id));
  RETURN v_id;
END
$$;

COMMENT ON FUNCTION agent.rerun(bigint, text) IS
  'Queues a new run of the same agent with the same input plus input.rerun_of, origin rerun, the original''s regime. Manual runs need the chat level (and, for another user''s run, seeing it: agent.activity_scope = all); autonomous runs need edit_settings. Returns the new run id.';

CREATE OR REPLACE FUNCTION agent.cancel_run(run_id bigint, by_user text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  r      agent.runs%ROWTYPE;
  v_need text;
  v_n    integer;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(cancel_run.by_user, ''), true);
  r := agent._lock_run(cancel_run.run_id);
  v_need := CASE WHEN r.regime = 'manual' AND r.requested_by = by_user THEN 'chat' ELSE 'edit_settings' END;
  IF NOT coalesce(agent.user_can(by_user, r.agent_id, v_need), false) THEN
    RAISE EXCEPTION 'user "%" may not cancel run %', by_user, r.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Cancelling one''s own manual run requires the chat level; any other run the edit level.';
  END IF;
  IF NOT agent._run_is_active(r.status) THEN
    RETURN 0;
  END IF;
  SELECT count(*) INTO v_n
    FROM agent.runs d
   WHERE d.workspace_id = r.workspace_id AND d.root_run_id = r.root_run_id AND agent._run_is_active(d.status)
     AND (d.id = r.id OR d.id IN (WITH RECURSIVE t(id) AS (
                                    SELECT c.id FROM agent.runs c
                                     WHERE c.workspace_id = r.workspace_id AND c.parent_run_id = r.id
                                    UNION ALL
                                    SELECT c.id FROM agent.runs c JOIN t ON c.parent_run_id = t.id
                                     WHERE c.workspace_id = r.workspace_id)
                                  SELECT t.id FROM t));
  PERFORM agent._finish_run(r.id, 'cancelled', NULL, format('cancelled by %s', by_user));
  RETURN v_n;
END
$$;

COMMENT ON FUNCTION agent.cancel_run(bigint, text) IS
  'Cancels an active run and its active descendants (one''s own manual run: chat level; otherwise edit level). Returns how many runs were cancelled (0 when it had already ended).';

CREATE OR REPLACE FUNCTION agent.approve(approval_key text, by_user text, run_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  ap agent.approvals%ROWTYPE;
  r  agent.runs%ROWTYPE;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(approve.by_user, ''), true);
  ap := agent._approval_to_decide(approve.approval_key, by_user, approve.run_id);
  PERFORM agent._record_decision(ap, by_user, 'approved');
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id FOR UPDATE;
  IF r.status = 'waiting_approval'
     AND NOT EXISTS (SELECT 1 FROM agent.approvals p
                      WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.status = 'pending') THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.resume', r, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: approved by %s', r.id, by_user));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
  END IF;
  RETURN ap.run_id;
END
$$;

COMMENT ON FUNCTION agent.approve(text, text, bigint) IS
  'Approves one pending tool call (edit level on the agent required); run_id may be NULL unless the key is pending on several runs the user may decide. The run goes back to queued once none of its approvals is pending; the approval authorises that one call once (agent.consume_approval). Returns the run id.';

CREATE OR REPLACE FUNCTION agent.deny(approval_key text, by_user text, run_id bigint, reason text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  ap     agent.approvals%ROWTYPE;
  r      agent.runs%ROWTYPE;
  v_why  text := nullif(pg_catalog.btrim(deny.reason), '');
  v_ends boolean;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(deny.by_user, ''), true);
  IF pg_catalog.char_length(v_why) > 1000 THEN
    RAISE EXCEPTION 'reason of a denial is too long'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('A reason has at most 1000 characters; this one has %s.', pg_catalog.char_length(v_why));
  END IF;
  ap := agent._approval_to_decide(deny.approval_key, by_user, deny.run_id);
  UPDATE agent.approvals p SET reason = v_why WHERE p.workspace_id = ap.workspace_id AND p.id = ap.id;
  ap.reason := v_why;
  PERFORM agent._record_decision(ap, by_user, 'denied');
  SELECT a.scope -> 'deny_ends_run' = 'true'::jsonb INTO v_ends
    FROM agent.agents a JOIN agent.runs x ON x.workspace_id = a.workspace_id AND x.agent_id = a.id
   WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id;
  IF coalesce(v_ends, false) THEN
    PERFORM agent._finish_run(ap.run_id, 'failed', NULL, format('denied by %s', by_user));
    RETURN ap.run_id;
  END IF;
  -- the run resumes: the worker hands the model a refusal for this call
  -- (agent.consume_refusal) and goes on from there
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id FOR UPDATE;
  IF r.status = 'waiting_approval'
     AND NOT EXISTS (SELECT 1 FROM agent.approvals p
                      WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.status = 'pending') THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.resume', r, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: %s declined %s', r.id, by_user, ap.tool));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
  END IF;
  RETURN ap.run_id;
END
$$;

COMMENT ON FUNCTION agent.deny(text, text, bigint, text) IS
  'Denies one pending tool call (edit level on the agent required; run_id may be NULL unless the key is pending on several runs the user may decide), with an optional reason (at most 1000 characters) the model is told. The call never runs; the run goes back to queued once none of its approvals is pending and the model receives "the person declined this call" (with the reason) as the call''s result. An agent whose scope has "deny_ends_run": true fails the run with "denied by <user>" instead. Returns the run id.';

CREATE OR REPLACE FUNCTION agent._check_trigger(p_trigger jsonb, p_complete boolean) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k text;
  v jsonb;
  t text;
BEGIN
  IF p_trigger IS NULL OR jsonb_typeof(p_trigger) <> 'object' THEN
    RAISE EXCEPTION 'trigger must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, v IN SELECT * FROM jsonb_each(p_trigger) LOOP
    t := jsonb_typeof(v);
    CASE k
      WHEN 'id' THEN
        IF NOT (t = 'null' OR t = 'number' AND (v #>> '{}') ~ '^[0-9]{1,18}$') THEN
          RAISE EXCEPTION 'trigger key "id" must be a trigger id' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'kind' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('schedule', 'event', 'mention', 'api') THEN
          RAISE EXCEPTION 'invalid trigger kind %', v::text
            USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A trigger kind is schedule, event, mention or api.';
        END IF;
      WHEN 'event_name', 'resource_type', 'resource_id', 'schedule', 'prompt' THEN
        IF t NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'trigger key "%" must be a string or null', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'timezone' THEN
        IF t <> 'string' THEN
          RAISE EXCEPTION 'trigger key "timezone" must be a string' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A time zone of the tz database, e.g. Europe/Paris (UTC when the key is left out).';
        END IF;
      WHEN 'filter' THEN
        IF t NOT IN ('object', 'null') THEN
          RAISE EXCEPTION 'trigger key "filter" must be an object' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'enabled', 'allow_self_retrigger', 'show_typing' THEN
        IF t <> 'boolean' THEN
          RAISE EXCEPTION 'trigger key "%" must be a boolean', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'run_as' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('creator', 'shared') THEN
          RAISE EXCEPTION 'trigger key "run_as" must be creator or shared' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'conversation' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('agent', 'trigger') THEN
          RAISE EXCEPTION 'trigger key "conversation" must be agent or trigger' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      ELSE
        RAISE EXCEPTION 'unknown trigger key "%"', k
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Known keys: id, kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation.';
    END CASE;
  END LOOP;
  IF p_complete THEN
    IF p_trigger ->> 'kind' IS NULL THEN
      RAISE EXCEPTION 'invalid trigger: kind is required'
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A trigger kind is schedule, event, mention or api.';
    END IF;
    IF p_trigger ->> 'kind' = 'schedule' AND p_trigger ->> 'schedule' IS NULL THEN
      RAISE EXCEPTION 'invalid schedule trigger: schedule is required'
        USING ERRCODE = 'invalid_parameter_value', HINT = 'A schedule is a 5-field cron expression, e.g. 0 9 * * 1-5.';
    END IF;
  END IF;
END
$$;

COMMENT ON FUNCTION agent._check_trigger(jsonb, boolean) IS
  'Internal (agent.set_trigger): refuses (22023) a trigger definition with an unknown key or a value of the wrong shape, naming the key; p_complete also requires a kind, and a schedule for a schedule trigger.';

CREATE OR REPLACE FUNCTION agent.fire_trigger(trigger_id bigint, by_user text, payload jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  t        agent.triggers%ROWTYPE;
  a        agent.agents%ROWTYPE;
  v_ws     text := agent._session_workspace();
  v_cap    integer;
  v_recent bigint;
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '0')::interval;
  v_fp     text;
  v_now    timestamptz := now();
  v_cutoff timestamptz;
  v_new    integer;
  v_id     bigint;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(fire_trigger.by_user, ''), true);
  IF trigger_id IS NULL THEN
    RAISE EXCEPTION 'trigger_id must not be null' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'an API trigger run needs the requesting user'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The run is manual: it acts as the user who fired the trigger (by_user).';
  END IF;
  IF payload IS NOT NULL AND jsonb_typeof(payload) <> 'object' THEN
    RAISE EXCEPTION 'trigger payload must be a json object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the trigger's own
    SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = trigger_id;
  END IF;
  -- a trigger of another workspace does not exist for this session
  SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = trigger_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'trigger % does not exist', trigger_id USING ERRCODE = 'undefined_object';
  END IF;
  IF t.kind <> 'api' THEN
    RAISE EXCEPTION 'trigger % is of kind %, not api', trigger_id, t.kind
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only a trigger of kind api is fired through agent.fire_trigger; events, schedules and mentions fire the others.';
  END IF;
  IF NOT t.enabled THEN
    RAISE EXCEPTION 'trigger % is disabled', trigger_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Enable it in the agent''s settings (agent.save_settings).';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = t.workspace_id AND x.id = t.agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', t.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF a.status = 'suspended' THEN
    RAISE EXCEPTION 'agent % is suspended', a.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'A suspended agent is started by no trigger; chat still works.';
  END IF;
  IF NOT coalesce(agent.user_can(by_user, a.id, 'chat'), false) THEN
    RAISE EXCEPTION 'user "%" may not run agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Firing an API trigger requires the interact level or higher on the agent.';
  END IF;
  -- deduplication, as for events: the first transaction to insert the
  -- fingerprint wins, a concurrent one waits for it
  IF v_window > interval '0' THEN
    -- the time and the cutoff as values: Citus refuses now() in the conflict
    -- clause of a distributed table
    v_fp := 'api:' || md5(coalesce(payload, '{}')::text);
    v_cutoff := v_now - v_window;
    INSERT INTO agent.event_dedup AS d (workspace_id, trigger_id, fingerprint, seen_at)
    VALUES (t.workspace_id, t.id, v_fp, v_now)
    ON CONFLICT ON CONSTRAINT event_dedup_pkey DO UPDATE SET seen_at = excluded.seen_at
      WHERE d.seen_at <= v_cutoff
    RETURNING 1 INTO v_new;
    IF v_new IS NULL THEN
      SELECT r.id INTO v_id FROM agent.runs r
       WHERE r.workspace_id = t.workspace_id AND r.trigger_id = t.id AND r.origin = 'api'
         AND r.input -> 'payload' = coalesce(payload, '{}')
       ORDER BY r.id DESC LIMIT 1;
      IF v_id IS NOT NULL THEN
        RETURN v_id;
      END IF;
    END IF;
  END IF;
  -- the hourly cap: one decision at a time per agent (the lock of
  -- agent._enqueue_run), counting stops at the cap
  v_cap := coalesce(a.hourly_run_cap, current_setting('pg_agents.hourly_run_cap')::integer);
  PERFORM agent._lock('cap', a.id::text);
  SELECT count(*) INTO v_recent FROM (
    SELECT 1 FROM agent.runs r
     WHERE r.workspace_id = a.workspace_id AND r.agent_id = a.id
       AND (r.regime = 'autonomous' OR (r.origin = 'api' AND r.trigger_id IS NOT NULL))
       AND r.created_at > now() - interval '1 hour' AND r.status <> 'budget_exceeded'
     LIMIT v_cap) s;
  IF v_recent >= v_cap THEN
    RAISE EXCEPTION 'hourly run cap of % reached for agent %', v_cap, a.id
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = 'Runs of API triggers count with the agent''s autonomous runs against its hourly run cap.';
  END IF;
  v_id := agent._enqueue_run(a.id, 'manual', 'api',
            jsonb_build_object('event', 'api.fired', 'resource_type', 'trigger', 'resource_id', t.id::text,
                               'actor', 'user:' || by_user, 'prompt', t.prompt,
                               'payload', coalesce(payload, '{}')),
            t.id, by_user);
  UPDATE agent.triggers x SET last_run_at = now() WHERE x.workspace_id = t.workspace_id AND x.id = t.id;
  RETURN v_id;
END
$$;

COMMENT ON FUNCTION agent.fire_trigger(bigint, text, jsonb) IS
  'Fires a trigger of kind api for by_user (who needs the chat level on the agent): queues a manual run, origin api, with the payload as its input; the agent''s hourly run cap and pg_agents.dedup_window apply as for events (the same payload again returns the first run''s id). A trigger of another workspace is 42704; another kind 42809; a disabled trigger or a suspended agent 55000.';

CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb, user_id text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
BEGIN
  -- the audit rows of this call name user_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(mcp_agent_call.user_id, ''), true);
  SELECT m.server_id, m.tool INTO v_server_id, v_tool
    FROM agent.mcp_agent_tools(mcp_agent_call.agent_id, mcp_agent_call.user_id) m
   WHERE m.exposed_name = mcp_agent_call.exposed_name;
  IF v_server_id IS NULL THEN
    RETURN jsonb_build_object('ok', false, 'denied', true,
                              'error', format('tool "%s" is not available to this agent', exposed_name),
                              'result', agent._mcp_failed_result(format('tool "%s" is not available to this agent', exposed_name)));
  END IF;
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = v_server_id;
  IF arguments IS NULL OR jsonb_typeof(arguments) <> 'object' THEN
    arguments := '{}';
  END IF;
  r := agent._mcp_call(s.id, s.url, s.headers, v_tool, arguments);
  IF (r->>'ok')::boolean THEN
    RETURN jsonb_build_object('ok', NOT coalesce((r->'result'->>'isError')::boolean, false),
                              'server', s.name, 'tool', v_tool, 'result', r->'result');
  END IF;
  RETURN jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                            'result', agent._mcp_failed_result(r->>'error', r->'rpc_error'));
END
$$;

COMMENT ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb, text) IS
  'Worker entry point: calls an MCP tool by its exposed name for an agent in a run of user_id (checked against agent.mcp_agent_tools(agent_id, user_id)); returns {"ok", "server", "tool", "result": CallToolResult, "error"?}; a refused, failed or unreachable call is a failed result, never an exception.';

CREATE OR REPLACE FUNCTION agent.mcp_authorize(server_id bigint, by_user text, redirect_uri text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_problem text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(mcp_authorize.by_user, ''), true);
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = mcp_authorize.server_id;
  IF NOT FOUND OR NOT agent._workspace_ok(s.workspace_id) THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_authorize.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF s.scope = 'user' AND s.owner_id IS DISTINCT FROM by_user THEN
    RAISE EXCEPTION 'user "%" may not authorize the personal MCP server "%"', by_user, s.name
      USING ERRCODE = 'insufficient_privilege', DETAIL = 'A personal server is authorized by its owner.';
  END IF;
  SELECT * INTO o FROM agent.mcp_oauth m WHERE m.workspace_id = s.workspace_id AND m.server_id = s.id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server "%" does not use OAuth', s.name
      USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Configure it with agent.mcp_set_oauth first.';
  END IF;
  -- A workspace server's user token serves every agent run of the workspace:
  -- only a user with the full level on every agent of the workspace consents
  -- for them (the client credentials grant is the server's own identity).
  IF s.scope = 'workspace' AND coalesce(o.config->>'grant', '') <> 'client_credentials'
     AND EXISTS (SELECT 1 FROM agent.agents a
                  WHERE a.workspace_id = s.workspace_id AND a.deleted_at IS NULL
                    AND NOT coalesce(agent.user_can(mcp_authorize.by_user, a.id, 'delete'), false)) THEN
    RAISE EXCEPTION 'user "%" may not authorize the workspace MCP server "%"', by_user, s.name
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A workspace server''s token serves every agent of the workspace: it is authorized by a user with the full level on every one of them.';
  END IF;
  IF coalesce(o.config->>'grant', '') <> 'client_credentials' THEN
    v_problem := agent._mcp_url_problem(redirect_uri);
    IF redirect_uri IS NULL OR v_problem IS NOT NULL THEN
      RAISE EXCEPTION 'redirect URI is not allowed'
        USING ERRCODE = 'invalid_parameter_value', DETAIL = coalesce(v_problem, 'A redirect URI is required.');
    END IF;
  END IF;
  r := agent._mcp_oauth_begin(s.url,
                              o.config || CASE WHEN redirect_uri IS NULL THEN '{}'::jsonb
                                               ELSE pg_catalog.jsonb_build_object('redirect_uri', redirect_uri) END,
                              o.state);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_oauth m SET last_error = r->>'error', updated_at = now() WHERE m.server_id = s.id;
    RAISE EXCEPTION 'could not start the authorization of MCP server "%"', s.name
      USING ERRCODE = 'connection_failure', DETAIL = r->>'error';
  END IF;
  IF coalesce((r->>'authorized')::boolean, false) THEN
    -- client credentials: authorized at once
    UPDATE agent.mcp_oauth m
       SET state = r->'state', status = 'authorized', pending_state = NULL, pending_by_user = NULL,
           pending_at = NULL, authorized_by = by_user, authorized_at = now(),
           expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision), last_error = NULL,
           updated_at = now()
     WHERE m.server_id = s.id;
    PERFORM agent._mcp_oauth_apply(s.id, r->'state'->>'access_token');
    UPDATE agent.mcp_servers m SET last_error = NULL WHERE m.id = s.id;
    PERFORM agent.mcp_refresh(s.id);
    RETURN NULL;
  END IF;
  UPDATE agent.mcp_oauth m
     SET state = (r->'state') || pg_catalog.jsonb_build_object('redirect_uri', redirect_uri),
         status = CASE WHEN m.status = 'authorized' THEN m.status ELSE 'pending' END,
         pending_state = r->>'oauth_state', pending_by_user = by_user, pending_at = now(),
         last_error = NULL, updated_at = now()
   WHERE m.server_id = s.id;
  RETURN r->>'authorization_url';
END
$$;

COMMENT ON FUNCTION agent.mcp_authorize(bigint, text, text) IS
  'Application: starts the OAuth authorization of an MCP server of the session''s workspace for by_user (taken on trust; a personal server by its owner only, a workspace server with the authorization code grant by a user with the full level on every agent of the workspace, 42501): returns the authorization URL to send the user to, whose redirect to redirect_uri the application hands to agent.mcp_authorization_callback. For the client credentials grant it authorizes at once and returns NULL.';

CREATE OR REPLACE FUNCTION agent.mcp_authorization_callback(state text, code text, iss text, by_user text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_name text;
  v_ws text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(mcp_authorization_callback.by_user, ''), true);
  IF state IS NULL OR state = '' THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the state's workspace first, then the row locked in it (Citus routes by it)
  SELECT m.workspace_id INTO v_ws FROM agent.mcp_oauth m WHERE m.pending_state = mcp_authorization_callback.state;
  SELECT * INTO o FROM agent.mcp_oauth m
   WHERE m.workspace_id = v_ws AND m.pending_state = mcp_authorization_callback.state FOR UPDATE;
  IF NOT FOUND OR NOT agent._workspace_ok(o.workspace_id)
     OR o.pending_at < now() - pg_catalog.current_setting('pg_agents.approval_ttl')::interval THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the user completing the flow is the one who started it (no login CSRF);
  -- the state stays pending for them
  IF by_user IS NULL OR by_user IS DISTINCT FROM o.pending_by_user THEN
    RAISE EXCEPTION 'user "%" did not start this authorization', coalesce(by_user, 'NULL')
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'An authorization is completed by the user who started it with agent.mcp_authorize.';
  END IF;
  SELECT m.name INTO v_name FROM agent.mcp_servers m WHERE m.id = o.server_id;
  -- single use: whatever comes of it, this state is spent
  UPDATE agent.mcp_oauth m SET pending_state = NULL WHERE m.server_id = o.server_id;
  r := agent._mcp_oauth_complete(o.config || pg_catalog.jsonb_build_object('redirect_uri', o.state->>'redirect_uri'),
                                 o.state, coalesce(code, ''), state, iss);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_oauth m
       SET last_error = r->>'error', pending_by_user = NULL, pending_at = NULL,
           status = CASE WHEN m.status = 'pending' THEN 'unauthorized' ELSE m.status END,
           state = m.state - 'state' - 'verifier', updated_at = now()
     WHERE m.server_id = o.server_id;
    RAISE WARNING 'the authorization of MCP server "%" failed', v_name
      USING DETAIL = r->>'error';
    RETURN false;
  END IF;
  UPDATE agent.mcp_oauth m
     SET state = r->'state', status = 'authorized', pending_by_user = NULL, pending_at = NULL,
         authorized_by = o.pending_by_user, authorized_at = now(),
         expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision),
         last_error = NULL, updated_at = now()
   WHERE m.server_id = o.server_id;
  PERFORM agent._mcp_oauth_apply(o.server_id, r->'state'->>'access_token');
  UPDATE agent.mcp_servers m SET last_error = NULL WHERE m.id = o.server_id;
  PERFORM agent.mcp_refresh(o.server_id);
  RETURN true;
END
$$;

COMMENT ON FUNCTION agent.mcp_authorization_callback(text, text, text, text) IS
  'Application, from its OAuth redirect handler: completes the pending authorization named by state (single use, expires after pg_agents.approval_ttl) with the code and the iss of the redirect (NULL when it has none), for by_user, who must be the user who started it (42501, the state stays pending), then refreshes the server''s tools. Returns true when authorized; false (with a warning giving the reason) when the authorization server refused, the iss did not match or the code was wrong.';

CREATE OR REPLACE FUNCTION agent.answer_elicitation(key text, response jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_answers jsonb := '{}';
  v_one boolean;
  k text;
  q jsonb;
  v_ws text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(answer_elicitation.by_user, ''), true);
  -- the session's workspace, else (a superuser session bound to none) that
  -- of the key's latest pending question; then the row locked in it
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_elicitations x
     WHERE x.approval_key = answer_elicitation.key AND x.status = 'pending' ORDER BY x.id DESC LIMIT 1;
  END IF;
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.workspace_id = v_ws AND x.approval_key = answer_elicitation.key AND x.status = 'pending' AND x.expires_at > now()
     AND EXISTS (SELECT 1 FROM agent.runs r WHERE r.workspace_id = x.workspace_id AND r.id = x.run_id
                    AND r.status = CASE WHEN x.live THEN 'running' ELSE 'waiting_approval' END)
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no pending elicitation with key "%"', key USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- one question: the answer itself; several: {input key: answer}
  v_one := (SELECT count(*) FROM pg_catalog.jsonb_object_keys(e.input_requests)) = 1;
  FOR k, q IN SELECT * FROM pg_catalog.jsonb_each(e.input_requests) LOOP
    v_answers := v_answers || pg_catalog.jsonb_build_object(k,
                   agent._mcp_elicit_result(q, CASE WHEN v_one AND response ? 'action' THEN response ELSE response->k END));
  END LOOP;
  UPDATE agent.mcp_elicitations x
     SET status = 'answered', response = v_answers, answered_by = by_user, answered_at = now()
   WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
  -- the run resumes like on an approval (edit level on the agent required);
  -- a live question's run never stopped: the worker sends the answer on the
  -- server's open stream (agent._mcp_worker_elicit_poll)
  RETURN agent.approve(e.approval_key, by_user, e.run_id);
END
$$;

COMMENT ON FUNCTION agent.answer_elicitation(text, jsonb, text) IS
  'Answers the question an MCP server asked during a run''s tool call (key: the approval key shown in agent.mcp_pending_input) for by_user, who must be allowed to approve the run''s calls: {"action": "accept", "content": {...}} (the form''s defaults filled in), {"action": "decline"} or {"action": "cancel"}; several questions are answered as {input key: answer}. The run resumes and the server gets the answer (a live question of a 2025-11-25 server: on the stream the worker keeps open). Returns the run id.';

CREATE OR REPLACE FUNCTION agent.generate_draft(description text, user_id text, workspace_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_ws   text := coalesce(nullif(workspace_id, ''), agent._session_workspace());
  v_user text := user_id;
  v_aid  bigint;
  v_run  bigint;
BEGIN
  -- the audit rows of this call name user_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(generate_draft.user_id, ''), true);
  IF description IS NULL OR btrim(description) = '' THEN
    RAISE EXCEPTION 'description must not be empty' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Describe what the agent should do, e.g. "triage the tickets of the Support collection".';
  END IF;
  IF length(description) > 4000 THEN
    RAISE EXCEPTION 'description is too long' USING ERRCODE = 'invalid_parameter_value',
          DETAIL = 'A description has at most 4000 characters.';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_ws IS NULL THEN
    RAISE EXCEPTION 'generate_draft needs a workspace' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Pass workspace_id or set pg_agents.workspace.';
  END IF;
  PERFORM agent._check_workspace_arg(v_ws);
  v_aid := agent._assistant_for(v_ws);
  -- a manual run acting as the user: its searches go through the user's own ACL
  v_run := agent._enqueue_run(v_aid, 'manual', 'draft',
                              jsonb_build_object('prompt', 'Draft an agent for this description:' || E'\n' || description,
                                                 'description', description),
                              NULL, v_user);
  PERFORM agent._audit_event('agent.generate_draft', 'success', 'run', v_run::text, v_ws, v_user,
                             jsonb_build_object('description', description, 'by_user', v_user),
                             format('%s asked for an agent draft (run %s)', v_user, v_run));
  RETURN v_run;
END
$$;

COMMENT ON FUNCTION agent.generate_draft(text, text, text) IS
  'Queues a draft run (origin draft, manual regime acting as user_id, so its searches see only what the user may read) of the workspace''s hidden assistant agent; the worker and the LLM turn the description into a draft, read with agent.draft(run_id). Nothing else is saved. workspace_id defaults to the session''s workspace (pg_agents.workspace) and must be it (42501 otherwise). Returns the run id.';

CREATE OR REPLACE FUNCTION agent.create_from_draft(draft jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  d         jsonb := draft;
  k         text;
  e         jsonb;
  i         integer;
  v_ws      text;
  v_name    text;
  v_id      bigint;
  v_problem text;
  v_access  jsonb := '[]';
  v_ntrig   integer := 0;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(create_from_draft.by_user, ''), true);
  PERFORM agent._check_user(by_user);
  IF d IS NULL OR jsonb_typeof(d) <> 'object' THEN
    RAISE EXCEPTION 'invalid draft: a draft must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k IN SELECT jsonb_object_keys(d) LOOP
    IF k NOT IN ('name', 'instructions', 'triggers', 'access', 'workspace_id', 'model', 'approval_mode', 'template') THEN
      RAISE EXCEPTION 'invalid draft: unknown key "%"', k USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A draft has name, instructions, triggers, access and optionally workspace_id, model, approval_mode, template.';
    END IF;
  END LOOP;
  v_ws := coalesce(nullif(d ->> 'workspace_id', ''), agent._session_workspace());
  IF v_ws IS NULL THEN
    RAISE EXCEPTION 'invalid draft: no workspace' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Give workspace_id in the draft or set pg_agents.workspace.';
  END IF;
  PERFORM agent._check_workspace_arg(v_ws);
  IF jsonb_typeof(d -> 'name') IS DISTINCT FROM 'string' OR length(btrim(d ->> 'name')) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'invalid draft: name must be a string of 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  v_name := btrim(d ->> 'name');
  IF d ? 'instructions' AND jsonb_typeof(d -> 'instructions') <> 'string' THEN
    RAISE EXCEPTION 'invalid draft: instructions must be a string' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF d ? 'access' AND jsonb_typeof(d -> 'access') <> 'array' THEN
    RAISE EXCEPTION 'invalid draft: access must be an array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF d ? 'triggers' AND jsonb_typeof(d -> 'triggers') <> 'array' THEN
    RAISE EXCEPTION 'invalid draft: triggers must be an array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_settings(jsonb_strip_nulls(jsonb_build_object('model', d -> 'model',
                                                                     'approval_mode', d -> 'approval_mode')));
  -- every grant has the shape of a grant
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'access', '[]')) x LOOP
    i := i + 1;
    IF jsonb_typeof(e) <> 'object' OR EXISTS (SELECT 1 FROM jsonb_object_keys(e) ok
                                               WHERE ok NOT IN ('resource_type', 'resource_id', 'access')) THEN
      RAISE EXCEPTION 'invalid draft: access %: a grant is {"resource_type", "resource_id", "access"}', i
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM agent._check_grant(e ->> 'resource_type', e ->> 'resource_id', coalesce(e ->> 'access', 'read'));
    v_access := v_access || jsonb_build_object('resource_type', e ->> 'resource_type',
                                               'resource_id', e ->> 'resource_id',
                                               'access', coalesce(e ->> 'access', 'read'));
  END LOOP;
  -- every trigger is valid
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'triggers', '[]')) x LOOP
    i := i + 1;
    v_problem := agent._draft_trigger_problem(e);
    IF v_problem IS NOT NULL THEN
      RAISE EXCEPTION 'invalid draft: trigger %: %', i, v_problem USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;

  -- the agent, then the access checks against it (same transaction: a
  -- refusal saves nothing)
  INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, model, approval_mode)
  VALUES (v_ws, by_user, v_name, coalesce(d ->> 'instructions', ''), d ->> 'model',
          coalesce(d ->> 'approval_mode', 'writes'))
  RETURNING id INTO v_id;
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(v_access) x LOOP
    i := i + 1;
    IF NOT agent._user_reads(v_id, by_user, e ->> 'resource_type', e ->> 'resource_id', e ->> 'access') THEN
      RAISE EXCEPTION 'invalid draft: access %: user "%" cannot % % "%"', i, by_user,
            CASE e ->> 'access' WHEN 'edit' THEN 'edit' ELSE 'read' END, e ->> 'resource_type', e ->> 'resource_id'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A draft grants only what its creator may read (or edit) themselves.';
    END IF;
  END LOOP;
  PERFORM agent._apply_settings(v_id, jsonb_build_object('access', v_access), by_user);

  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'triggers', '[]')) x LOOP
    i := i + 1;
    IF e ->> 'resource_type' IN ('page', 'collection', 'skill', 'agent') AND e ->> 'resource_id' IS NOT NULL
       AND NOT agent._user_reads(v_id, by_user, e ->> 'resource_type', e ->> 'resource_id') THEN
      RAISE EXCEPTION 'invalid draft: trigger %: user "%" cannot read % "%"', i, by_user,
            e ->> 'resource_type', e ->> 'resource_id'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A trigger may only watch a resource its creator can read.';
    END IF;
    -- every trigger is created disabled, whatever the draft says
    INSERT INTO agent.triggers (workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                                schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as,
                                created_by)
    VALUES (v_ws, v_id, e ->> 'kind', e ->> 'event_name', e ->> 'resource_type', e ->> 'resource_id',
            coalesce(CASE WHEN jsonb_typeof(e -> 'filter') = 'object' THEN e -> 'filter' END, '{}'),
            e ->> 'schedule', coalesce(e ->> 'timezone', 'UTC'), e ->> 'prompt', false,
            coalesce((e ->> 'allow_self_retrigger')::boolean, false),
            coalesce((e ->> 'show_typing')::boolean, true), coalesce(e ->> 'run_as', 'creator'), by_user);
    v_ntrig := v_ntrig + 1;
  END LOOP;

  PERFORM agent._write_version(v_id, by_user,
                               CASE WHEN d ? 'template' THEN format('created from template %s', d ->> 'template')
                                    ELSE 'created from draft' END);
  PERFORM agent._audit_event('agent.create_from_draft', 'success', 'agent', v_id::text, v_ws, by_user,
                             jsonb_build_object('draft', d, 'by_user', by_user),
                             format('%s created agent %s "%s" from a draft (%s grant(s), %s trigger(s), all disabled)',
                                    by_user, v_id, v_name, jsonb_array_length(v_access), v_ntrig));
  RETURN v_id;
END
$$;

COMMENT ON FUNCTION agent.create_from_draft(jsonb, text) IS
  'Saves a draft (from agent.draft, a template or hand-written) as an agent owned by by_user, after validating it again: keys and shapes, every grant re-checked against by_user''s own ACL (42501), every trigger validated (cron via agent.cron_valid, event fields, filter via agent.validate_filter; a watched resource must be readable by by_user). Every trigger is created disabled. The agent is created in the session''s workspace: a draft''s workspace_id must be it (42501 otherwise). Writes version 1 and an audit row; returns the agent id.';

CREATE OR REPLACE FUNCTION agent.send_message(agent_id bigint, user_id text, text text,
                                   INOUT conversation_id bigint DEFAULT NULL, OUT run_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_text  text := text;
  v_conv  bigint := conversation_id;
  a       agent.agents%ROWTYPE;
  v_run   bigint;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name user_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(send_message.user_id, ''), true);
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_text IS NULL OR pg_catalog.btrim(v_text) = '' THEN
    RAISE EXCEPTION 'message text must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the agent's own
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = v_agent;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = v_agent;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', v_agent USING ERRCODE = 'undefined_object';
  END IF;
  IF v_conv IS NOT NULL THEN
    -- only the user's own chat with this agent can be continued; anything
    -- else (another user's, the autonomous log, another workspace's) does
    -- not exist
    PERFORM 1 FROM agent.conversations c
     WHERE c.workspace_id = a.workspace_id AND c.id = v_conv AND c.agent_id = a.id
       AND c.kind = 'chat' AND c.user_id = v_user
       FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'conversation % does not exist', v_conv USING ERRCODE = 'undefined_object';
    END IF;
  END IF;
  IF v_conv IS NULL THEN
    INSERT INTO agent.conversations AS c (workspace_id, agent_id, kind, user_id)
    VALUES (a.workspace_id, a.id, 'chat', v_user)
    RETURNING c.id INTO v_conv;
  END IF;
  -- the chat level is checked here (42501 without it; everything rolls back)
  v_run := agent.start_run(a.id, v_user,
                           pg_catalog.jsonb_build_object('message', v_text, 'conversation_id', v_conv),
                           'manual', 'chat');
  INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
  VALUES (a.workspace_id, v_conv, 'user', v_text, v_run, agent._message_tokens(v_text));
  send_message.conversation_id := v_conv;
  send_message.run_id := v_run;
END
$$;

COMMENT ON FUNCTION agent.send_message(bigint, text, text, bigint) IS
  'Sends a user''s message to an agent: appends it to the user''s chat (a new one when conversation_id is NULL; only the user''s own chat with this agent can be continued, anything else is unknown, 42704) and queues a manual chat run (the chat level is required, 42501) that receives the earlier turns within pg_agents.conversation_window. The run''s final answer is appended when it ends. Returns one row: the conversation and the run.';

CREATE OR REPLACE FUNCTION agent.send_to_run(run_id bigint, message text, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  v_id    bigint;
  v_owner text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(send_to_run.by_user, ''), true);
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- a run of another workspace is an unknown run (agent._lock_run checks
  -- before any lock)
  r := agent._lock_run(send_to_run.run_id);
  IF NOT agent.user_can(by_user, r.agent_id, 'chat') THEN
    RAISE EXCEPTION 'user "%" may not send messages to run %', by_user, r.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Sending to a run requires the chat level on its agent.';
  END IF;
  v_id := agent._teams_post(r, 'user:' || by_user, message);
  SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id;
  PERFORM agent._audit_event('run.message', 'success', 'run', r.id::text, r.workspace_id, v_owner,
                             jsonb_build_object('message_id', v_id, 'by_user', by_user),
                             format('%s sent a message to run %s', by_user, r.id));
  RETURN v_id;
END
$$;

COMMENT ON FUNCTION agent.send_to_run(bigint, text, text) IS
  'A human with the chat level on the agent queues a message for a queued, running or waiting run (42704 unknown run or a run of another workspace than the session''s, 42501 no chat level, 55000 the run has ended, 22023 empty message). The worker gives it to the model at the next safe point; a run waiting_input takes it as its answer and is re-queued. Returns the message id.';

CREATE OR REPLACE FUNCTION agent.cancel_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                  status text DEFAULT NULL, by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_super boolean := current_setting('is_superuser') = 'on';
  v_ws    text := agent._session_workspace();
  a       agent.agents%ROWTYPE;
  c       record;
  v_who   text;
  v_n     integer := 0;
  v_per   jsonb := '{}';
  k       text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(cancel_runs.by_user, ''), true);
  IF status IS NOT NULL AND status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children') THEN
    RAISE EXCEPTION 'invalid status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Only active runs are cancelled: queued, running, waiting_approval, waiting_input or waiting_children.';
  END IF;
  IF NOT v_super AND (by_user IS NULL OR by_user = '') THEN
    RAISE EXCEPTION 'by_user must not be empty'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The application cancels runs on behalf of a user, who is audited.';
  END IF;
  IF agent_id IS NULL AND workspace_id IS NULL AND v_ws IS NULL THEN
    RAISE EXCEPTION 'agent.cancel_runs needs an agent or a workspace'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name agent_id or workspace_id (or set pg_agents.workspace).';
  END IF;
  IF agent_id IS NOT NULL THEN
    -- the session's workspace (a superuser session bound to none: the agent's own)
    k := v_ws;
    IF k IS NULL THEN
      SELECT y.workspace_id INTO k FROM agent.agents y WHERE y.id = agent_id;
    END IF;
    SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = k AND x.id = agent_id;
    IF NOT FOUND
       OR (workspace_id IS NOT NULL AND a.workspace_id IS DISTINCT FROM workspace_id) THEN
      RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT v_super AND NOT coalesce(agent.user_can(by_user, agent_id, 'edit_settings'), false) THEN
      RAISE EXCEPTION 'user "%" may not cancel the runs of agent %', by_user, agent_id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Cancelling the runs of an agent requires the edit level on it.';
    END IF;
  END IF;
  -- another workspace than the session's holds no run for this session
  IF workspace_id IS NOT NULL AND NOT agent._workspace_ok(workspace_id) THEN
    RETURN 0;
  END IF;
  workspace_id := coalesce(workspace_id, a.workspace_id, v_ws);
  v_who := coalesce(nullif(by_user, ''), 'dba:' || session_user::text);

  FOR c IN
    SELECT x.id, x.workspace_id AS ws,
           coalesce((SELECT rt.id FROM agent.runs rt
                      WHERE rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id), x.id) AS root
      FROM agent.runs x
     WHERE x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
       AND (status IS NULL OR x.status = status)
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
     ORDER BY x.id
  LOOP
    PERFORM agent._lock_tree(c.root);
    -- still active (and still of that status) once its tree is ours
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = c.ws AND x.id = c.id
                                 AND x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                                 AND (status IS NULL OR x.status = status));
    IF agent._finish_run(c.id, 'cancelled', NULL, format('cancelled by %s (bulk cancel)', v_who)) THEN
      v_n := v_n + 1;
      k := c.ws;
      v_per := jsonb_set(v_per, ARRAY[k], to_jsonb(coalesce((v_per ->> k)::integer, 0) + 1));
    END IF;
  END LOOP;

  -- one audit row per workspace touched (each run also has its run.finish row)
  FOR k IN SELECT jsonb_object_keys(v_per) LOOP
    PERFORM agent._audit_event('runs.cancel', 'success', 'workspace', k, k, NULL,
                               jsonb_build_object('agent_id', agent_id, 'status', status, 'by_user', by_user,
                                                  'db_user', session_user::text, 'cancelled', (v_per ->> k)::integer),
                               format('%s runs cancelled by %s', v_per ->> k, v_who), NULL);
  END LOOP;
  RETURN v_n;
END
$$;

COMMENT ON FUNCTION agent.cancel_runs(bigint, text, text, text) IS
  'Cancels the active runs of an agent or of a workspace (optionally of one status), with their active descendants; a worker holding one of them drops it at its next step. Superuser: any workspace. The application: within the session''s workspace, on behalf of by_user (edit level on the agent when one is named). Audited (one runs.cancel row per workspace, one run.finish row per run). Returns how many matching runs were cancelled.';

CREATE OR REPLACE FUNCTION agent.requeue_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                   status text DEFAULT 'failed',
                                   since timestamptz DEFAULT now() - interval '1 hour',
                                   by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  o    agent.runs%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_n  integer := 0;
  v_who text := coalesce(nullif(by_user, ''), 'dba:' || session_user::text);
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(requeue_runs.by_user, ''), true);
  IF status IS NULL OR status NOT IN ('failed', 'budget_exceeded', 'cancelled', 'expired') THEN
    RAISE EXCEPTION 'invalid status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Runs that ended failed, budget_exceeded, cancelled or expired are run again.';
  END IF;
  IF agent_id IS NULL AND workspace_id IS NULL THEN
    RAISE EXCEPTION 'agent.requeue_runs needs an agent or a workspace'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF since IS NULL THEN
    RAISE EXCEPTION 'since must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF agent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.id = agent_id) THEN
    RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
  END IF;
  FOR o IN
    SELECT x.* FROM agent.runs x
      JOIN agent.agents a ON a.workspace_id = x.workspace_id AND a.id = x.agent_id
     WHERE x.status = status AND x.finished_at >= since AND x.parent_run_id IS NULL
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
       AND a.deleted_at IS NULL AND (x.regime = 'manual' OR a.status = 'active')
       -- not re-run already (by an earlier call)
       AND NOT EXISTS (SELECT 1 FROM agent.runs y
                        WHERE y.workspace_id = x.workspace_id AND y.agent_id = x.agent_id
                          AND y.created_at >= x.finished_at
                          AND y.origin = 'rerun' AND y.input ->> 'rerun_of' = x.id::text)
     ORDER BY x.id
  LOOP
    v_id := agent._enqueue_run(o.agent_id, o.regime, 'rerun', o.input || jsonb_build_object('rerun_of', o.id),
                               NULL, o.requested_by);
    SELECT * INTO n FROM agent.runs x WHERE x.workspace_id = o.workspace_id AND x.id = v_id;
    PERFORM agent._audit_run('run.rerun', n, 'success',
                             jsonb_build_object('rerun_of', o.id, 'by_user', by_user, 'db_user', session_user::text,
                                                'status', n.status, 'bulk', true),
                             format('run %s re-runs run %s (bulk, by %s)', v_id, o.id, v_who));
    v_n := v_n + 1;
  END LOOP;
  RETURN v_n;
END
$$;

COMMENT ON FUNCTION agent.requeue_runs(bigint, text, text, timestamptz, text) IS
  'Runs again the root runs of an agent or a workspace that ended with this status (default failed) since the given time (default: the last hour), e.g. after a provider outage: each gets a new linked run (origin rerun, input.rerun_of) through the same queue and caps; a run already re-run is skipped, as are runs of deleted agents and autonomous runs of suspended ones. Superuser only; audited. Returns how many runs were queued.';

DROP TRIGGER IF EXISTS triggers_history_upd ON agent.triggers;
CREATE TRIGGER triggers_history_upd
  AFTER UPDATE OF workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter, schedule,
                  timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_history();
COMMENT ON TRIGGER triggers_history_upd ON agent.triggers IS
  'Versions and audits a change of a trigger''s settings by a direct UPDATE (agent._triggers_history).';

-- Where the key file of the secrets store lies (src/secret_keyfile.c).
CREATE FUNCTION agent.secret_key_file(setting text DEFAULT NULL, config_file text DEFAULT NULL,
                                      data_dir text DEFAULT NULL,
                                      OUT path text, OUT inside_data_directory boolean)
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'pg_agents_secret_key_file_info';
COMMENT ON FUNCTION agent.secret_key_file(text, text, text) IS
  'The key file of the secrets store and whether it lies inside the data directory (a base backup then holds key and ciphertext together): pg_agents.secret_key_file when set (relative: from the data directory), else pg_agents.key beside config_file when that lies outside the data directory, else in the data directory (a key file left there by an earlier version is kept). Without arguments, this server''s file; with any, the choice for those values (NULL: the server''s). Superusers only.';
