-- ===========================================================================
-- triggers: triggers are settings (issue 15, part 5) and the confused deputy
-- (issue 14, attack 9).  As in sql/src/100_access.sql and 400_events.sql.
-- ===========================================================================

-- the tenant boundary of the lifecycle API
CREATE FUNCTION agent._agent_named(p_agent_id bigint, p_by_user text, p_action text,
                                   p_allow_system boolean DEFAULT false)
RETURNS agent.agents
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws text;
BEGIN
  IF p_agent_id IS NOT NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = p_agent_id;
    IF NOT agent._workspace_ok(v_ws) THEN
      RAISE EXCEPTION 'agent % does not exist', p_agent_id USING ERRCODE = 'undefined_object';
    END IF;
  END IF;
  RETURN agent._agent_for(p_agent_id, p_by_user, p_action, p_allow_system);
END
$$;
COMMENT ON FUNCTION agent._agent_named(bigint, text, text, boolean) IS
  'Internal: agent._agent_for behind the tenant boundary (an agent of another workspace than the session''s is 42704, like a missing one).';

-- a trigger's settings (snapshots, audit rows); the snapshot uses it
CREATE FUNCTION agent._trigger_json(t agent.triggers) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT jsonb_build_object(
    'id', t.id, 'kind', t.kind, 'event_name', t.event_name,
    'resource_type', t.resource_type, 'resource_id', t.resource_id,
    'filter', t.filter, 'schedule', t.schedule, 'timezone', t.timezone,
    'prompt', t.prompt, 'enabled', t.enabled,
    'allow_self_retrigger', t.allow_self_retrigger,
    'show_typing', t.show_typing, 'run_as', t.run_as)
$$;
COMMENT ON FUNCTION agent._trigger_json(agent.triggers) IS
  'Internal: the settings of a trigger (id, kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as), as snapshots and audit rows hold them.';

CREATE OR REPLACE FUNCTION agent._check_settings(p_settings jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k text;
  v jsonb;
  e jsonb;
  t text;
BEGIN
  IF p_settings IS NULL OR jsonb_typeof(p_settings) <> 'object' THEN
    RAISE EXCEPTION 'settings must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, v IN SELECT * FROM jsonb_each(p_settings) LOOP
    t := jsonb_typeof(v);
    CASE k
      WHEN 'instructions', 'name' THEN
        IF t <> 'string' THEN
          RAISE EXCEPTION 'settings key "%" must be a string', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF k = 'name' AND length(btrim(v #>> '{}')) NOT BETWEEN 1 AND 200 THEN
          RAISE EXCEPTION 'settings key "name" must have 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'instruction_page_id', 'model' THEN
        IF t NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'settings key "%" must be a string or null', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'approval_mode' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('none', 'writes', 'all') THEN
          RAISE EXCEPTION 'settings key "approval_mode" must be none, writes or all' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'scope' THEN
        IF t <> 'object' THEN
          RAISE EXCEPTION 'settings key "scope" must be an object' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'web_access' THEN
        IF t <> 'boolean' THEN
          RAISE EXCEPTION 'settings key "web_access" must be a boolean' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'delegation' THEN
        IF t <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) x
                                    WHERE jsonb_typeof(x) <> 'number' OR (x #>> '{}') !~ '^[0-9]{1,18}$') THEN
          RAISE EXCEPTION 'settings key "delegation" must be an array of agent ids' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'max_iterations', 'hourly_run_cap', 'credit_limit_monthly', 'default_token_budget' THEN
        IF NOT (t = 'number' AND (v #>> '{}') ~ '^[0-9]{1,9}$'
                OR t = 'null' AND k IN ('hourly_run_cap', 'credit_limit_monthly')) THEN
          RAISE EXCEPTION 'settings key "%" must be a non-negative integer%', k,
                CASE WHEN k IN ('hourly_run_cap', 'credit_limit_monthly') THEN ' or null' ELSE '' END
            USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF k = 'max_iterations' AND (v #>> '{}')::integer NOT BETWEEN 1 AND 200 THEN
          RAISE EXCEPTION 'settings key "max_iterations" must be between 1 and 200' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'access' THEN
        IF t <> 'array' THEN
          RAISE EXCEPTION 'settings key "access" must be an array of grants' USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'A grant is {"resource_type": ..., "resource_id": ..., "access": "read" | "edit"}.';
        END IF;
        FOR e IN SELECT * FROM jsonb_array_elements(v) LOOP
          IF jsonb_typeof(e) <> 'object' OR EXISTS (SELECT 1 FROM jsonb_object_keys(e) ok
                                                     WHERE ok NOT IN ('resource_type', 'resource_id', 'access')) THEN
            RAISE EXCEPTION 'settings key "access" must be an array of grants' USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A grant is {"resource_type": ..., "resource_id": ..., "access": "read" | "edit"}.';
          END IF;
          PERFORM agent._check_grant(e ->> 'resource_type', e ->> 'resource_id', coalesce(e ->> 'access', 'read'));
        END LOOP;
      WHEN 'triggers' THEN
        RAISE EXCEPTION 'settings key "triggers" cannot be saved with the settings'
          USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use agent.set_trigger and agent.delete_trigger; the version snapshots record the triggers.';
      ELSE
        RAISE EXCEPTION 'unknown settings key "%"', k
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Known keys: name, instructions, instruction_page_id, model, approval_mode, scope, web_access, delegation, access, max_iterations, hourly_run_cap, credit_limit_monthly, default_token_budget.';
    END CASE;
  END LOOP;
END
$$;
COMMENT ON FUNCTION agent._check_settings(jsonb) IS
  'Internal: refuses (22023) settings with an unknown key or a value of the wrong shape, naming the key.';

CREATE OR REPLACE FUNCTION agent._snapshot(p_agent_id bigint) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
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
                          FROM agent.access g WHERE g.agent_id = a.id), '[]'),
    'triggers', coalesce((SELECT jsonb_agg(agent._trigger_json(t) ORDER BY t.id)
                            FROM agent.triggers t WHERE t.agent_id = a.id), '[]'))
  FROM agent.agents a WHERE a.id = p_agent_id
$$;
COMMENT ON FUNCTION agent._snapshot(bigint) IS
  'Internal: the agent''s settings as a version snapshot: instructions, instruction_page_id, model, approval_mode, scope, web_access, delegation, limits, access list and triggers.';

CREATE OR REPLACE FUNCTION agent.grant(agent_id bigint, resource_type text, resource_id text,
                            access text DEFAULT 'read', by_user text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a agent.agents%ROWTYPE;
BEGIN
  PERFORM agent._check_grant(resource_type, resource_id, access);
  a := agent._agent_named("grant".agent_id, by_user, 'edit_settings', true);
  -- the deputy rule: by_user grants only what they may read (edit) themselves
  PERFORM agent._deputy_filter(a.id, by_user,
            jsonb_build_object('access', jsonb_build_array(jsonb_build_object(
              'resource_type', "grant".resource_type, 'resource_id', "grant".resource_id,
              'access', "grant".access))), true);
  INSERT INTO agent.access AS g (workspace_id, agent_id, resource_type, resource_id, access, granted_by)
  VALUES (a.workspace_id, a.id, "grant".resource_type, "grant".resource_id, "grant".access, by_user)
  ON CONFLICT ON CONSTRAINT access_pkey
  DO UPDATE SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = now();
  PERFORM agent._write_version(a.id, by_user, format('granted %s on %s %s', access, resource_type, resource_id));
  PERFORM agent._audit_event('agent.grant', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('resource_type', resource_type, 'resource_id', resource_id,
                                                'access', access, 'by_user', by_user),
                             format('agent %s granted %s on %s %s', a.id, access, resource_type, resource_id));
END
$$;
REVOKE ALL ON FUNCTION agent.grant(bigint, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.grant(bigint, text, text, text, text) IS
  'Grants the agent read or edit on a resource (replacing a previous grant) and writes a version; by_user needs edit on the agent and, unless they own it, must read (for edit: edit) the resource themselves, 42501 otherwise (NULL: an application call, unchecked). An agent of another workspace is 42704.';

CREATE OR REPLACE FUNCTION agent.revoke(agent_id bigint, resource_type text, resource_id text,
                             by_user text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a agent.agents%ROWTYPE;
  n integer;
BEGIN
  a := agent._agent_named(revoke.agent_id, by_user, 'edit_settings', true);
  DELETE FROM agent.access g
   WHERE g.agent_id = a.id AND g.resource_type = revoke.resource_type AND g.resource_id = revoke.resource_id;
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
REVOKE ALL ON FUNCTION agent.revoke(bigint, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.revoke(bigint, text, text, text) IS
  'Removes the agent''s grant on a resource (writing a version when there was one); true when there was one. by_user needs edit (NULL: an application call). An agent of another workspace is 42704.';

CREATE OR REPLACE FUNCTION agent.save_settings(agent_id bigint, settings jsonb, by_user text, note text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a      agent.agents%ROWTYPE;
  v_prev jsonb;
  v_ver  bigint;
BEGIN
  a := agent._agent_named(save_settings.agent_id, by_user, 'edit_settings');
  PERFORM agent._check_settings(settings);
  -- the deputy rule: new or raised grants, a new instruction page and new
  -- delegable agents need by_user's own access (42501)
  PERFORM agent._deputy_filter(a.id, by_user, settings, true);
  v_prev := agent._snapshot(a.id);
  PERFORM agent._apply_settings(a.id, settings, by_user);
  v_ver := agent._write_version(a.id, by_user, note, v_prev);
  PERFORM agent._audit_event('agent.save_settings', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('settings', settings, 'by_user', by_user,
                                                'version_id', v_ver, 'note', note),
                             (SELECT format('%s saved agent %s settings (version %s: %s)', by_user, a.id,
                                            v.version, v.note)
                                FROM agent.versions v WHERE v.id = v_ver));
  RETURN v_ver;
END
$$;
REVOKE ALL ON FUNCTION agent.save_settings(bigint, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.save_settings(bigint, jsonb, text, text) IS
  'Saves settings (edit level): checks every key, applies them, writes a version whose note lists the changed sections, audits. A grant the agent does not hold yet (or raised to edit), a new instruction page and a new delegable agent need by_user''s own access (42501). Returns the version id.';

CREATE OR REPLACE FUNCTION agent.restore_version(version_id bigint, by_user text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
BEGIN
  SELECT * INTO v FROM agent.versions x WHERE x.id = version_id;
  IF NOT FOUND OR NOT agent._workspace_ok(v.workspace_id) THEN
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
REVOKE ALL ON FUNCTION agent.restore_version(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.restore_version(bigint, text) IS
  'Restores a version (edit level): a new version made from the old snapshot, grants and triggers included (triggers of the snapshot recreated or updated, the others disabled, never deleted); history is never rewritten. What by_user cannot read themselves is left out (NOTICE, version note, audit row). Returns the new version id.';



-- ---------------------------------------------------------------------------
-- The deputy rule (issue 14): whoever grants, grants only their own access
-- ---------------------------------------------------------------------------
-- An edit-level sharee could otherwise grant the agent a resource they cannot
-- read, then rewrite the instructions to copy it out.  What a change would
-- give the agent anew -- a grant it does not hold (or holds at read only and
-- would get at edit), an instruction page, a delegable agent -- needs
-- by_user's own access, as agent.duplicate already requires: what the agent
-- already holds is kept unchecked (a save that re-lists it grants nothing).
-- The owner's grants are not checked: an autonomous run reaches grants ∩
-- the owner's ACL, so the owner can never grant the agent more than they
-- read (their instruction page and delegable agents are checked: those do
-- not go through that intersection).  p_refuse: raise 42501 at the first
-- violation (grant, save_settings); otherwise leave it out and report it
-- (restore_version).  by_user NULL is an application call: the application
-- vouches, nothing is checked.
CREATE OR REPLACE FUNCTION agent._deputy_filter(p_agent_id bigint, p_by_user text, p_settings jsonb, p_refuse boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a         agent.agents%ROWTYPE;
  s         jsonb := p_settings;
  e         jsonb;
  v_list    jsonb;
  v_dropped jsonb := '[]';
  v_down    jsonb := '[]';
  v_want    integer;
  v_have    integer;
  v_own     integer;
  v_page    text;
BEGIN
  IF p_by_user IS NULL OR s IS NULL THEN
    RETURN jsonb_build_object('settings', s, 'dropped', v_dropped, 'downgraded', v_down);
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.id = p_agent_id;

  IF jsonb_typeof(s -> 'access') = 'array' AND p_by_user IS DISTINCT FROM a.owner_id THEN
    v_list := '[]';
    FOR e IN SELECT x FROM jsonb_array_elements(s -> 'access') x LOOP
      v_want := CASE coalesce(e ->> 'access', 'read') WHEN 'edit' THEN 2 ELSE 1 END;
      SELECT CASE g.access WHEN 'edit' THEN 2 ELSE 1 END INTO v_have
        FROM agent.access g
       WHERE g.agent_id = p_agent_id AND g.resource_type = e ->> 'resource_type'
         AND g.resource_id = e ->> 'resource_id';
      v_have := coalesce(v_have, 0);
      IF v_want > v_have THEN
        IF NOT agent._user_reads(p_agent_id, p_by_user, e ->> 'resource_type', e ->> 'resource_id') THEN
          v_own := 0;
        ELSIF v_want = 2 AND NOT agent._user_reads(p_agent_id, p_by_user, e ->> 'resource_type',
                                                   e ->> 'resource_id', 'edit') THEN
          v_own := 1;
        ELSE
          v_own := v_want;
        END IF;
      ELSE
        v_own := v_want;
      END IF;
      IF v_own >= v_want THEN
        v_list := v_list || e;
      ELSIF p_refuse THEN
        RAISE EXCEPTION 'user "%" cannot % % "%"', p_by_user, CASE v_want WHEN 2 THEN 'edit' ELSE 'read' END,
              e ->> 'resource_type', e ->> 'resource_id'
          USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A user grants an agent only what they may read (for edit: edit) themselves.',
                HINT = 'Grants the agent already holds are kept; only a new grant, or read raised to edit, is checked.';
      ELSIF greatest(v_have, v_own) = 0 THEN
        v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', e ->> 'resource_type',
                                                     'resource_id', e ->> 'resource_id',
                                                     'access', coalesce(e ->> 'access', 'read'),
                                                     'reason', 'no_read_access');
      ELSE
        v_list := v_list || jsonb_set(e, '{access}', '"read"');
        v_down := v_down || jsonb_build_object('kind', 'access', 'resource_type', e ->> 'resource_type',
                                               'resource_id', e ->> 'resource_id', 'from', 'edit', 'to', 'read',
                                               'reason', 'no_edit_access');
      END IF;
    END LOOP;
    s := jsonb_set(s, '{access}', v_list);
  END IF;

  v_page := s ->> 'instruction_page_id';
  IF v_page IS NOT NULL AND v_page IS DISTINCT FROM a.instruction_page_id
     AND NOT agent._user_reads(p_agent_id, p_by_user, 'page', v_page) THEN
    IF p_refuse THEN
      RAISE EXCEPTION 'user "%" cannot read page "%"', p_by_user, v_page
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'An instruction page is set only by a user who can read it.';
    END IF;
    s := s - 'instruction_page_id';
    v_dropped := v_dropped || jsonb_build_object('kind', 'instruction_page', 'resource_type', 'page',
                                                 'resource_id', v_page, 'reason', 'no_read_access');
  END IF;

  IF jsonb_typeof(s -> 'delegation') = 'array' THEN
    v_list := '[]';
    FOR e IN SELECT x FROM jsonb_array_elements(s -> 'delegation') x LOOP
      -- an unknown, deleted or other workspace's agent is kept here, so that
      -- agent._check_delegation refuses it as not existing (42704)
      IF coalesce(a.delegation, '[]') @> jsonb_build_array(e)
         OR jsonb_typeof(e) <> 'number'
         OR NOT EXISTS (SELECT 1 FROM agent.agents x
                         WHERE x.id = (e #>> '{}')::numeric AND x.deleted_at IS NULL
                           AND x.workspace_id = a.workspace_id AND agent._workspace_ok(x.workspace_id))
         OR agent._level_rank(agent._user_level(p_by_user, (e #>> '{}')::bigint)) >= 1 THEN
        v_list := v_list || e;
      ELSIF p_refuse THEN
        RAISE EXCEPTION 'user "%" cannot delegate to agent %', p_by_user, e #>> '{}'
          USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A user adds to the delegable agents only agents they may use themselves.';
      ELSE
        v_dropped := v_dropped || jsonb_build_object('kind', 'delegation', 'agent_id', e, 'reason', 'no_access');
      END IF;
    END LOOP;
    s := jsonb_set(s, '{delegation}', v_list);
  END IF;

  RETURN jsonb_build_object('settings', s, 'dropped', v_dropped, 'downgraded', v_down);
END
$$;
COMMENT ON FUNCTION agent._deputy_filter(bigint, text, jsonb, boolean) IS
  'Internal: the deputy rule. Settings keep what the agent already holds; a new or raised grant (unless by_user is the owner, whose ACL bounds the agent anyway), a new instruction page or a new delegable agent needs by_user''s own access: 42501 (p_refuse) or left out and reported. Returns {settings, dropped, downgraded}; by_user NULL (application call): unchecked.';

-- The items of a report in clear, for notes and notices.
CREATE FUNCTION agent._report_items(p_items jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT string_agg(CASE e ->> 'kind'
           WHEN 'access' THEN format('%s %s', e ->> 'resource_type', e ->> 'resource_id')
           WHEN 'instruction_page' THEN format('instruction page %s', e ->> 'resource_id')
           WHEN 'delegation' THEN format('delegation to agent %s', e ->> 'agent_id')
           WHEN 'trigger' THEN format('trigger %s%s', e ->> 'trigger_id',
                                      CASE WHEN e ? 'error' THEN format(' (%s)', e ->> 'error')
                                           ELSE format(' (watching %s %s)', e ->> 'resource_type', e ->> 'resource_id') END)
           ELSE e::text END, ', ' ORDER BY n)
  FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x(e, n)
$$;
COMMENT ON FUNCTION agent._report_items(jsonb) IS
  'Internal: the dropped or downgraded items of a report as one line (page p1, trigger 12 (watching collection c), ...).';

-- ---------------------------------------------------------------------------
-- Triggers are settings (issue 15): versioned and audited on every path
-- ---------------------------------------------------------------------------
-- agent.set_trigger / agent.delete_trigger check the edit level, validate,
-- write the row, then one version (the note names the trigger) and one
-- audit row (agent.trigger.create / update / delete).  A direct write to
-- agent.triggers (applications and DBAs may make them) is versioned and
-- audited the same way by the row triggers below, so no path escapes
-- history.  The extension's own functions that write triggers and version
-- the change themselves (set_trigger, delete_trigger, restore_version) hold
-- the agent in agent._history_holds for their writes, so that a change
-- makes one version, not two.  That table has no grants: a direct writer
-- cannot hold an agent to escape history.

CREATE TABLE agent._history_holds (
    xact         bigint NOT NULL,
    agent_id     bigint NOT NULL,
    workspace_id text NOT NULL,
    PRIMARY KEY (xact, agent_id)
);
COMMENT ON TABLE agent._history_holds IS
  'Internal: agents whose trigger writes the running transaction''s extension function versions itself (rows live only inside that function); no grants, so a direct writer cannot escape history with it.';
COMMENT ON COLUMN agent._history_holds.xact IS 'Transaction (txid_current()) holding the agent.';
COMMENT ON COLUMN agent._history_holds.agent_id IS 'Agent held.';
COMMENT ON COLUMN agent._history_holds.workspace_id IS 'Workspace of the agent.';

CREATE FUNCTION agent._history_hold(p_agent_id bigint, p_hold boolean) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_hold THEN
    INSERT INTO agent._history_holds (xact, agent_id, workspace_id)
    SELECT txid_current(), a.id, a.workspace_id FROM agent.agents a WHERE a.id = p_agent_id
    ON CONFLICT DO NOTHING;
  ELSE
    DELETE FROM agent._history_holds h WHERE h.xact = txid_current() AND h.agent_id = p_agent_id;
  END IF;
END
$$;
COMMENT ON FUNCTION agent._history_hold(bigint, boolean) IS
  'Internal: holds (true) or releases (false) the agent''s trigger writes of this transaction from the history triggers; the caller versions and audits them itself.';

-- A trigger in a few words, for notes and summaries.
CREATE FUNCTION agent._trigger_label(p jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE p ->> 'kind'
           WHEN 'event' THEN format('event %s on %s', p ->> 'event_name',
                                    CASE WHEN p ->> 'resource_type' IS NULL THEN 'any resource'
                                         ELSE concat_ws(' ', p ->> 'resource_type', coalesce(p ->> 'resource_id', '(any)')) END)
           WHEN 'schedule' THEN format('schedule "%s" %s', p ->> 'schedule', p ->> 'timezone')
           WHEN 'mention' THEN 'mention' || coalesce(' on ' || concat_ws(' ', p ->> 'resource_type', p ->> 'resource_id'), '')
           ELSE coalesce(p ->> 'kind', '?') END
$$;
COMMENT ON FUNCTION agent._trigger_label(jsonb) IS
  'Internal: a trigger''s settings in a few words (event collection.row_added on collection c1, schedule "0 9 * * 1" UTC, ...).';

-- The keys whose values differ between two trigger settings, comma-separated.
CREATE FUNCTION agent._trigger_changes(p_old jsonb, p_new jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce(string_agg(k, ', ' ORDER BY k), '')
  FROM (SELECT jsonb_object_keys(coalesce(p_old, '{}') || coalesce(p_new, '{}')) AS k) x
  WHERE (p_old -> k) IS DISTINCT FROM (p_new -> k)
$$;
COMMENT ON FUNCTION agent._trigger_changes(jsonb, jsonb) IS
  'Internal: the settings keys that differ between two trigger settings (enabled, prompt, ...), comma-separated.';

-- Writes the version and the audit row of one trigger change.
CREATE FUNCTION agent._trigger_history(p_agent agent.agents, p_op text, p_trigger_id bigint,
                                       p_old jsonb, p_new jsonb, p_by_user text, p_direct boolean)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_what  text := agent._trigger_label(coalesce(p_new, p_old));
  v_chg   text := agent._trigger_changes(p_old, p_new);
  v_note  text;
  v_ver   bigint;
  v_who   text := CASE WHEN p_direct THEN format('a direct write by %s', session_user)
                       ELSE coalesce(p_by_user, 'the application') END;
BEGIN
  v_note := format('%s trigger %s%s', CASE p_op WHEN 'create' THEN 'created' WHEN 'update' THEN 'changed'
                                                  ELSE 'deleted' END,
                   p_trigger_id, CASE WHEN p_direct THEN ' by a direct write' ELSE '' END)
            || CASE WHEN p_op = 'update' THEN ': ' || CASE WHEN v_chg = '' THEN 'no changes' ELSE v_chg END
                    ELSE format(' (%s)', v_what) END;
  v_ver := agent._write_version(p_agent.id, p_by_user, v_note);
  PERFORM agent._audit_event('agent.trigger.' || p_op, 'success', 'trigger', p_trigger_id::text,
                             p_agent.workspace_id, p_agent.owner_id,
                             jsonb_build_object('agent_id', p_agent.id, 'by_user', p_by_user, 'direct', p_direct,
                                                'version_id', v_ver, 'trigger', coalesce(p_new, p_old),
                                                'changed', CASE WHEN p_op = 'update' THEN v_chg END,
                                                'before', CASE WHEN p_op = 'update' THEN p_old END),
                             format('%s %s trigger %s of agent %s (%s)', v_who,
                                    CASE p_op WHEN 'create' THEN 'created' WHEN 'update' THEN 'changed' ELSE 'deleted' END,
                                    p_trigger_id, p_agent.id,
                                    CASE WHEN p_op = 'update' THEN coalesce(nullif(v_chg, ''), 'no changes') ELSE v_what END));
  RETURN v_ver;
END
$$;
COMMENT ON FUNCTION agent._trigger_history(agent.agents, text, bigint, jsonb, jsonb, text, boolean) IS
  'Internal: the version (note naming the trigger) and the audit row (agent.trigger.create/update/delete) of one trigger change; returns the version id.';

-- Row triggers on agent.triggers: a write not held by the extension's own
-- function is versioned and audited here.  Rows for an agent that has no
-- version yet are part of its creation (agent.duplicate, create_from_draft):
-- the first version, written at the end of it, records them.  A trigger of
-- an agent outside the session's workspace is refused like a missing agent.
CREATE FUNCTION agent._trigger_direct_write(p_agent_id bigint, p_op text, p_trigger_id bigint,
                                            p_old jsonb, p_new jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a agent.agents%ROWTYPE;
BEGIN
  IF EXISTS (SELECT 1 FROM agent._history_holds h WHERE h.xact = txid_current() AND h.agent_id = p_agent_id) THEN
    RETURN;   -- the extension's own function versions this write
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.id = p_agent_id;
  IF NOT FOUND THEN
    RETURN;   -- the agent itself is being deleted (ON DELETE CASCADE)
  END IF;
  IF NOT agent._workspace_ok(a.workspace_id) THEN
    RAISE EXCEPTION 'agent % does not exist', a.id USING ERRCODE = 'undefined_object';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.versions v WHERE v.agent_id = a.id) THEN
    RETURN;   -- being created: its first version records the trigger
  END IF;
  PERFORM agent._trigger_history(a, p_op, p_trigger_id, p_old, p_new, NULL, true);
END
$$;
COMMENT ON FUNCTION agent._trigger_direct_write(bigint, text, bigint, jsonb, jsonb) IS
  'Internal (agent._triggers_history): versions and audits one direct trigger write, unless the agent is held, being deleted or being created; an agent outside the session''s workspace is 42704.';

CREATE FUNCTION agent._triggers_history() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM agent._trigger_direct_write(NEW.agent_id, 'create', NEW.id, NULL, agent._trigger_json(NEW));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM agent._trigger_direct_write(OLD.agent_id, 'delete', OLD.id, agent._trigger_json(OLD), NULL);
  ELSIF OLD.agent_id <> NEW.agent_id THEN
    -- moved to another agent: it leaves the one and joins the other
    PERFORM agent._trigger_direct_write(OLD.agent_id, 'delete', OLD.id, agent._trigger_json(OLD), NULL);
    PERFORM agent._trigger_direct_write(NEW.agent_id, 'create', NEW.id, NULL, agent._trigger_json(NEW));
  ELSIF agent._trigger_json(OLD) IS DISTINCT FROM agent._trigger_json(NEW) THEN
    PERFORM agent._trigger_direct_write(NEW.agent_id, 'update', NEW.id, agent._trigger_json(OLD),
                                        agent._trigger_json(NEW));
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._triggers_history() IS
  'Trigger: versions and audits a direct write to agent.triggers (one version and one agent.trigger.* audit row per trigger changed); writes the extension versions itself are held out, bookkeeping columns (last_*, next_run_at, updated_at) are not settings.';
CREATE TRIGGER triggers_history_ins AFTER INSERT ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_history();
CREATE TRIGGER triggers_history_upd
  AFTER UPDATE OF workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter, schedule,
                  timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_history();
CREATE TRIGGER triggers_history_del AFTER DELETE ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_history();
COMMENT ON TRIGGER triggers_history_ins ON agent.triggers IS
  'Versions and audits a trigger created by a direct INSERT (agent._triggers_history).';
COMMENT ON TRIGGER triggers_history_upd ON agent.triggers IS
  'Versions and audits a change of a trigger''s settings by a direct UPDATE (agent._triggers_history).';
COMMENT ON TRIGGER triggers_history_del ON agent.triggers IS
  'Versions and audits a trigger removed by a direct DELETE (agent._triggers_history).';

CREATE FUNCTION agent.set_trigger(agent_id bigint, "trigger" jsonb, by_user text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
  PERFORM agent._check_trigger(p, false);
  a := agent._agent_named($1, by_user, 'edit_settings', true);
  IF p ? 'id' AND jsonb_typeof(p -> 'id') <> 'null' THEN
    v_id := (p ->> 'id')::bigint;
    SELECT * INTO t FROM agent.triggers x WHERE x.id = v_id FOR UPDATE;
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
                            'allow_self_retrigger', false, 'show_typing', true, 'run_as', 'creator')
         || (p - 'id');
  END IF;
  IF jsonb_typeof(m -> 'filter') IS DISTINCT FROM 'object' THEN
    m := jsonb_set(m, '{filter}', '{}');
  END IF;
  IF jsonb_typeof(m -> 'timezone') IS DISTINCT FROM 'string' THEN
    m := jsonb_set(m, '{timezone}', '"UTC"');
  END IF;
  PERFORM agent._check_trigger(m, true);
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
                                     run_as, created_by)
    VALUES (a.workspace_id, a.id, m ->> 'kind', m ->> 'event_name', m ->> 'resource_type', m ->> 'resource_id',
            m -> 'filter', m ->> 'schedule', m ->> 'timezone', m ->> 'prompt', (m ->> 'enabled')::boolean,
            (m ->> 'allow_self_retrigger')::boolean, (m ->> 'show_typing')::boolean, m ->> 'run_as', by_user)
    RETURNING * INTO t;
  ELSE
    UPDATE agent.triggers x
       SET kind = m ->> 'kind', event_name = m ->> 'event_name', resource_type = m ->> 'resource_type',
           resource_id = m ->> 'resource_id', filter = m -> 'filter', schedule = m ->> 'schedule',
           timezone = m ->> 'timezone', prompt = m ->> 'prompt', enabled = (m ->> 'enabled')::boolean,
           allow_self_retrigger = (m ->> 'allow_self_retrigger')::boolean,
           show_typing = (m ->> 'show_typing')::boolean, run_as = m ->> 'run_as', updated_at = now()
     WHERE x.id = v_id
    RETURNING * INTO t;
  END IF;
  PERFORM agent._history_hold(a.id, false);
  PERFORM agent._trigger_history(a, v_op, t.id, v_old, agent._trigger_json(t), by_user, false);
  RETURN t.id;
END
$$;
REVOKE ALL ON FUNCTION agent.set_trigger(bigint, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.set_trigger(bigint, jsonb, text) IS
  'Creates a trigger of the agent, or changes it when "trigger" has an id (keys given replace, others are kept); edit level (42501; by_user NULL: an application call). Keys: kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as; validated as every trigger write (22023). A watched page, collection, skill or agent must be readable by by_user. Writes one version (its note names the trigger) and one audit row (agent.trigger.create/update). An agent or trigger of another workspace is 42704. Returns the trigger id.';

CREATE FUNCTION agent.delete_trigger(trigger_id bigint, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t agent.triggers%ROWTYPE;
  a agent.agents%ROWTYPE;
BEGIN
  IF $1 IS NULL THEN
    RAISE EXCEPTION 'trigger_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO t FROM agent.triggers x WHERE x.id = $1;
  IF NOT FOUND OR NOT agent._workspace_ok(t.workspace_id) THEN
    RAISE EXCEPTION 'trigger % does not exist', $1 USING ERRCODE = 'undefined_object';
  END IF;
  a := agent._agent_named(t.agent_id, by_user, 'edit_settings', true);
  SELECT * INTO t FROM agent.triggers x WHERE x.id = $1 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'trigger % does not exist', $1 USING ERRCODE = 'undefined_object';
  END IF;
  PERFORM agent._history_hold(a.id, true);
  DELETE FROM agent.triggers x WHERE x.id = t.id;
  PERFORM agent._history_hold(a.id, false);
  PERFORM agent._trigger_history(a, 'delete', t.id, agent._trigger_json(t), NULL, by_user, false);
END
$$;
REVOKE ALL ON FUNCTION agent.delete_trigger(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.delete_trigger(bigint, text) IS
  'Deletes a trigger; edit level on its agent (42501; by_user NULL: an application call). Writes one version (its note names the trigger) and one audit row (agent.trigger.delete). A trigger of another workspace is 42704.';

-- The triggers of a snapshot, back (agent.restore_version, which holds the
-- agent): a trigger of the snapshot is updated in place when its row still
-- belongs to the agent, recreated under its old id when that id is free, or
-- under a new id otherwise; the agent's triggers the snapshot does not hold
-- are disabled, never deleted.  A trigger that would newly watch a resource
-- by_user cannot read, or that no longer validates, is left out (and its
-- row, if any, disabled) and reported.  Schedules: next_run_at follows from
-- the save (agent._schedule_before_save), and is computed for an enabled
-- schedule that has none.
CREATE FUNCTION agent._restore_triggers(p_agent_id bigint, p_triggers jsonb, p_by_user text)
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
BEGIN
  SELECT * INTO a FROM agent.agents x WHERE x.id = p_agent_id;
  FOR s IN SELECT x FROM jsonb_array_elements(p_triggers) x ORDER BY (x ->> 'id')::bigint LOOP
    v_sid := (s ->> 'id')::bigint;
    SELECT * INTO cur FROM agent.triggers x WHERE x.id = v_sid FOR UPDATE;
    v_free := NOT FOUND;
    v_mine := FOUND AND cur.agent_id = p_agent_id;
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
                 run_as = coalesce(s ->> 'run_as', 'creator'), updated_at = now()
           WHERE x.id = v_sid;
          v_upd := v_upd || to_jsonb(v_sid);
        END IF;
        v_id := v_sid;
      ELSE
        v_id := CASE WHEN v_free THEN v_sid ELSE nextval(pg_get_serial_sequence('agent.triggers', 'id')) END;
        INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, resource_id,
                                    filter, schedule, timezone, prompt, enabled, allow_self_retrigger,
                                    show_typing, run_as, created_by)
        VALUES (v_id, a.workspace_id, a.id, s ->> 'kind', s ->> 'event_name', s ->> 'resource_type',
                s ->> 'resource_id',
                CASE WHEN jsonb_typeof(s -> 'filter') = 'object' THEN s -> 'filter' ELSE '{}' END, s ->> 'schedule',
                coalesce(s ->> 'timezone', 'UTC'), s ->> 'prompt', coalesce((s ->> 'enabled')::boolean, true),
                coalesce((s ->> 'allow_self_retrigger')::boolean, false),
                coalesce((s ->> 'show_typing')::boolean, true), coalesce(s ->> 'run_as', 'creator'), p_by_user);
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
     WHERE x.agent_id = p_agent_id AND x.enabled AND NOT (x.id = ANY (v_keep))
    RETURNING x.id)
  SELECT coalesce(jsonb_agg(d.id ORDER BY d.id), '[]') INTO v_dis FROM d;

  UPDATE agent.triggers x SET next_run_at = agent.cron_next(x.schedule, now(), x.timezone)
   WHERE x.id = ANY (v_keep) AND x.kind = 'schedule' AND x.enabled AND x.next_run_at IS NULL;

  RETURN jsonb_build_object('recreated', v_recr, 'updated', v_upd, 'disabled', v_dis, 'dropped', v_dropped);
END
$$;
COMMENT ON FUNCTION agent._restore_triggers(bigint, jsonb, text) IS
  'Internal (agent.restore_version): brings the triggers of a snapshot back (updated in place, recreated under their id when free or a new one), disables the agent''s others; a trigger newly watching what by_user cannot read, or invalid now, is left out. Returns {recreated, updated, disabled, dropped}.';

-- ---------------------------------------------------------------------------
-- agent.set_trigger's argument (the function is in 100_access.sql: triggers
-- are settings).  The shape of the jsonb is checked here; the rules of a
-- trigger row (event name, filter, schedule and time zone) stay with the
-- row triggers above and in the cron module, which every write passes.
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._check_trigger(p_trigger jsonb, p_complete boolean) RETURNS void
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
      ELSE
        RAISE EXCEPTION 'unknown trigger key "%"', k
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Known keys: id, kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as.';
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

REVOKE ALL ON FUNCTION agent._agent_named(bigint, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._deputy_filter(bigint, text, jsonb, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._history_hold(bigint, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._trigger_history(agent.agents, text, bigint, jsonb, jsonb, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._trigger_direct_write(bigint, text, bigint, jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._triggers_history() FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._restore_triggers(bigint, jsonb, text) FROM PUBLIC;
REVOKE ALL ON TABLE agent._history_holds FROM PUBLIC;
