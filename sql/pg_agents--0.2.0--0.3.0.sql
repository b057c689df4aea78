-- pg_agents 0.2.0 -> 0.3.0: generated from sql/upgrade/0.2.0--0.3.0/*.sql and sql/src/990_privileges.sql by make; do not edit.
\echo Use "ALTER EXTENSION pg_agents UPDATE" to load this file. \quit

-- ---- sql/upgrade/0.2.0--0.3.0/000_README.sql ----
-- Parts of the 0.2.0 -> 0.3.0 upgrade script, concatenated in name order by
-- make (then sql/src/990_privileges.sql).  One file per area, numbered like
-- sql/src/: each holds the whole new definition of every object the area
-- changed since 0.2.0 (CREATE OR REPLACE, new objects, ALTERs), so that
-- test/t/010_upgrade.t finds an upgraded 0.2.0 identical to a fresh 0.3.0.

-- ---- sql/upgrade/0.2.0--0.3.0/010_core.sql ----
-- ===========================================================================
-- The roles of the privilege model (as in sql/src/010_core.sql).
-- ===========================================================================
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT * FROM (VALUES
      ('agents_app', 'pg_agents: the application; may call the API that takes user ids on trust (by_user, requested_by, user_id) and write the documented tables.'),
      ('agents_executor', 'pg_agents: an external executor; may claim runs, record usage and finish them.'),
      ('agents_reader', 'pg_agents: analytics; reads the audit and run views of the workspace named by pg_agents.workspace.'))
      AS v(name, note)
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r.name) THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', r.name);
      EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', r.name, r.note);
    END IF;
  END LOOP;
END
$$;

-- ---------------------------------------------------------------------------
-- The tenant boundary (docs/security.md, "Tenants")
-- ---------------------------------------------------------------------------
-- Every API call works inside the session's workspace, pg_agents.workspace
-- (set by the application per request, or defaulted per database with ALTER
-- DATABASE ... SET).  An object of another workspace named in an argument is
-- treated as if it did not exist.  A superuser session that sets no
-- workspace is not bound to one (maintenance, DBA tooling); any other
-- session that sets none is refused.  is_superuser reflects the session's
-- role (SET ROLE included), not the owner of a SECURITY DEFINER function.
CREATE FUNCTION agent._session_workspace() RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF ws IS NULL AND pg_catalog.current_setting('is_superuser') <> 'on' THEN
    RAISE EXCEPTION 'pg_agents.workspace is not set'
      USING ERRCODE = '42501',
            DETAIL = 'Every call of the pg_agents API works inside the session''s workspace.',
            HINT = 'SET LOCAL pg_agents.workspace = ''<workspace id>'' for each request (or ALTER DATABASE ... SET pg_agents.workspace for a single-tenant database).';
  END IF;
  RETURN ws;
END
$$;
COMMENT ON FUNCTION agent._session_workspace() IS
  'Internal: the session''s workspace (pg_agents.workspace); NULL for a superuser session that sets none (not bound to a workspace); raises 42501 for any other session that sets none.';

CREATE FUNCTION agent._workspace_ok(p_workspace_id text) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  ws text := agent._session_workspace();
BEGIN
  RETURN ws IS NULL OR ws IS NOT DISTINCT FROM p_workspace_id;
END
$$;
COMMENT ON FUNCTION agent._workspace_ok(text) IS
  'Internal: true when an object of this workspace may be named by the session (its own workspace; any, for a superuser session that sets none). Callers treat false as "does not exist".';

-- ---- sql/upgrade/0.2.0--0.3.0/100_triggers.sql ----
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

-- ---- sql/upgrade/0.2.0--0.3.0/200_privileges.sql ----
-- ===========================================================================
-- Privilege boundaries (lead): the caller's role, audit_table as SECURITY
-- DEFINER on the caller's own tables, the read policies and reader bindings,
-- agent._allowlist_denied hardened, insights scoped.  Grants: 990_privileges.
-- ===========================================================================

CREATE FUNCTION agent._caller() RETURNS regrole
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_caller';
COMMENT ON FUNCTION agent._caller() IS
  'Internal: the role the session acts as (after SET ROLE), also inside a SECURITY DEFINER function; the extension checks the caller''s rights on the caller''s own objects with it.';


CREATE OR REPLACE FUNCTION agent.audit_table(tbl regclass, target_type text DEFAULT NULL,
                                  owner_column name DEFAULT NULL,
                                  workspace_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_rel  pg_catalog.pg_class%ROWTYPE;
  v_ws   name := workspace_column;
  v_type text := coalesce(target_type, '');
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO v_rel FROM pg_catalog.pg_class WHERE oid = tbl;
  IF tbl = 'agent.audit_log'::pg_catalog.regclass THEN
    RAISE EXCEPTION 'cannot audit agent.audit_log'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The audit log records changes to other tables; it is append-only itself.';
  END IF;
  IF v_rel.relpersistence = 't' THEN
    RAISE EXCEPTION 'cannot audit temporary table %', tbl
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'A temporary table is seen by its own session only; its changes are not history.';
  END IF;
  IF v_rel.relkind NOT IN ('r', 'p') THEN
    RAISE EXCEPTION '"%" is not a table', tbl
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only tables and partitioned tables can be audited.';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(), v_rel.relowner, 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF target_type IS NOT NULL AND pg_catalog.btrim(target_type) = '' THEN
    RAISE EXCEPTION 'target_type must not be empty'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass NULL to use the table name.';
  END IF;
  IF owner_column IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute
        WHERE attrelid = tbl AND attname = owner_column AND attnum > 0 AND NOT attisdropped) THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', owner_column, tbl
      USING ERRCODE = 'undefined_column';
  END IF;
  IF v_ws IS NULL THEN
    SELECT a.attname INTO v_ws FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = 'workspace_id' AND a.attnum > 0 AND NOT a.attisdropped;
  ELSIF NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute
        WHERE attrelid = tbl AND attname = v_ws AND attnum > 0 AND NOT attisdropped) THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', v_ws, tbl
      USING ERRCODE = 'undefined_column';
  END IF;

  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_truncate ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_stmt ON %s', tbl);
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH ROW EXECUTE FUNCTION agent._audit_trigger(%L, %L, %L)',
    tbl, v_type, coalesce(owner_column, ''), coalesce(v_ws, ''));
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit_truncate AFTER TRUNCATE ON %s '
    'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_trigger(%L, %L, %L)',
    tbl, v_type, '', '');
  -- after the statement's rows: releases the log the row trigger kept open
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit_stmt AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_trigger()', tbl);
  PERFORM agent._audit_table_event(tbl, 'audit.table', nullif(v_type, ''));
END
$$;
COMMENT ON FUNCTION agent.audit_table(regclass, text, name, name) IS
  'Attaches the C audit trigger to a table: INSERT (new row), UPDATE (changed columns only), DELETE (old row) and TRUNCATE are recorded in agent.audit_log, redacted. Re-running it updates the settings.';

CREATE OR REPLACE FUNCTION agent.unaudit_table(tbl regclass) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_had boolean;
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT relowner FROM pg_catalog.pg_class WHERE oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                  WHERE tgrelid = tbl AND tgname IN ('pg_agents_audit', 'pg_agents_audit_truncate'))
    INTO v_had;
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_truncate ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_stmt ON %s', tbl);
  IF v_had THEN
    PERFORM agent._audit_table_event(tbl, 'audit.untable', NULL);
  END IF;
  RETURN v_had;
END
$$;
COMMENT ON FUNCTION agent.unaudit_table(regclass) IS
  'Removes the audit trigger from a table; returns false when the table was not audited. Recorded as audit.untable.';

DROP POLICY audit_log_workspace_read ON agent.audit_log;

CREATE TABLE agent.reader_workspaces (
    workspace_id text NOT NULL,
    role_id      regrole NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, role_id)
);
COMMENT ON TABLE agent.reader_workspaces IS
  'The workspaces a DBA bound to an analytics role (agent.bind_reader): members of that role read the audit and run rows of these workspaces only.';
COMMENT ON COLUMN agent.reader_workspaces.workspace_id IS 'Workspace the role may read.';
COMMENT ON COLUMN agent.reader_workspaces.role_id IS 'The role (its members inherit the binding).';
COMMENT ON COLUMN agent.reader_workspaces.created_at IS 'When the binding was made.';
ALTER TABLE agent.reader_workspaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY reader_workspaces_own ON agent.reader_workspaces FOR SELECT
  USING (pg_catalog.pg_has_role(role_id, 'USAGE'));
COMMENT ON POLICY reader_workspaces_own ON agent.reader_workspaces IS
  'A role sees the bindings of the roles it has the privileges of.';

CREATE FUNCTION agent._may_read_workspace(p_workspace_id text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p_workspace_id IS NOT NULL
     AND (pg_catalog.pg_has_role('agents_app', 'USAGE')
          OR EXISTS (SELECT 1 FROM agent.reader_workspaces b
                      WHERE b.workspace_id = p_workspace_id
                        AND coalesce(pg_catalog.pg_has_role(b.role_id, 'USAGE'), false)))
$$;
COMMENT ON FUNCTION agent._may_read_workspace(text) IS
  'Internal to the read policies: whether the current role may read the rows of a workspace (the application may read any; an analytics role those bound to it; superusers all).';

CREATE FUNCTION agent.bind_reader(role_id regrole, workspace_id text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF workspace_id IS NULL OR workspace_id = '' THEN
    RAISE EXCEPTION 'workspace id must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF role_id IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO agent.reader_workspaces AS b (workspace_id, role_id)
  VALUES (bind_reader.workspace_id, bind_reader.role_id)
  ON CONFLICT ON CONSTRAINT reader_workspaces_pkey DO NOTHING;
  PERFORM agent._audit_event('agent.bind_reader', 'success', 'workspace', bind_reader.workspace_id,
                             bind_reader.workspace_id, NULL,
                             pg_catalog.jsonb_build_object('role', bind_reader.role_id::text), NULL, NULL);
END
$$;
COMMENT ON FUNCTION agent.bind_reader(regrole, text) IS
  'Lets the members of a role (an analytics role, usually a member of agents_reader) read the audit and run rows of a workspace. Superuser only; audited.';

CREATE FUNCTION agent.unbind_reader(role_id regrole, workspace_id text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
BEGIN
  DELETE FROM agent.reader_workspaces b
   WHERE b.workspace_id = unbind_reader.workspace_id AND b.role_id = unbind_reader.role_id;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN
    PERFORM agent._audit_event('agent.unbind_reader', 'success', 'workspace', unbind_reader.workspace_id,
                               unbind_reader.workspace_id, NULL,
                               pg_catalog.jsonb_build_object('role', unbind_reader.role_id::text), NULL, NULL);
  END IF;
  RETURN n > 0;
END
$$;
COMMENT ON FUNCTION agent.unbind_reader(regrole, text) IS
  'Removes a binding made by agent.bind_reader; true when there was one. Superuser only; audited.';

-- The policies: one workspace, the session's, and only a readable one.  The
-- check of the workspace is a constant of the query (an InitPlan), so that
-- the policy costs one probe, not one per row.
ALTER TABLE agent.audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_log_workspace_read ON agent.audit_log FOR SELECT TO agents_app, agents_reader
  USING (workspace_id = agent.current_workspace()
         AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON POLICY audit_log_workspace_read ON agent.audit_log IS
  'The application and analytics roles read only the rows of the session''s workspace (pg_agents.workspace), and only of a workspace they may read (agent.bind_reader).';

ALTER TABLE agent.runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY runs_workspace_read ON agent.runs FOR SELECT TO agents_app, agents_reader
  USING (workspace_id = agent.current_workspace()
         AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON POLICY runs_workspace_read ON agent.runs IS
  'The application and analytics roles read only the runs of the session''s workspace, and only of a workspace they may read.';

ALTER TABLE agent.run_steps ENABLE ROW LEVEL SECURITY;
CREATE POLICY run_steps_workspace_read ON agent.run_steps FOR SELECT TO agents_app, agents_reader
  USING (workspace_id = agent.current_workspace()
         AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON POLICY run_steps_workspace_read ON agent.run_steps IS
  'The application and analytics roles read only the steps of the session''s workspace, and only of a workspace they may read.';

CREATE OR REPLACE FUNCTION agent._allowlist_denied(p_to_type text, p_reason text, p_target_id text, p_detail jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_agent  bigint := agent.current_agent_id();
  v_run    bigint;
  v_ws     text;
  v_seq    integer;
  v_reason text := CASE WHEN p_reason IN ('not_granted', 'grant_read_only', 'owner_denied', 'agent_suspended',
                                         'agent_deleted', 'agent_not_found')
                        THEN p_reason ELSE 'not_granted' END;
  v_det    jsonb := agent.redact(coalesce(p_detail, '{}'::jsonb));
  v_type   text := pg_catalog.left(coalesce(p_to_type, ''), 200);
  v_target text := pg_catalog.left(p_target_id, 200);
BEGIN
  IF v_agent IS NULL THEN
    RETURN;
  END IF;
  IF pg_catalog.octet_length(v_det::text) > 4096 THEN
    v_det := pg_catalog.jsonb_build_object('truncated', true);
  END IF;
  BEGIN
    v_run := nullif(pg_catalog.current_setting('pg_agents.run_id', true), '')::bigint;
  EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
    v_run := NULL;
  END;
  IF v_run IS NOT NULL THEN
    SELECT r.workspace_id INTO v_ws FROM agent.runs r
     WHERE r.id = v_run AND r.agent_id = v_agent AND r.status = 'running' FOR UPDATE;
    IF FOUND THEN
      SELECT coalesce(max(s.seq), 0) + 1 INTO v_seq FROM agent.run_steps s WHERE s.run_id = v_run;
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, finished_at)
      VALUES (v_ws, v_run, v_seq, 'denied', 'follow_relation', v_det,
              pg_catalog.jsonb_build_object('resource_type', v_type, 'reason', v_reason), 'denied',
              pg_catalog.clock_timestamp());
    END IF;
  END IF;
  SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM agent._audit_event('agent.follow_relation', 'denied', v_type, v_target, v_ws, NULL,
                             v_det, pg_catalog.format('relation to a %s cut: %s', v_type, v_reason), v_reason);
END
$$;
COMMENT ON FUNCTION agent._allowlist_denied(text, text, text, jsonb) IS
  'Internal to agent.follow_relation: records a cut relation target as a denied step of the current run (only a running run of the session''s own agent; type and a known reason code only; redacted, bounded detail) and as a denied audit row in the agent''s workspace. Executable by agents_tool and agents_app only.';



COMMENT ON VIEW agent.insights IS
  'Runs per agent, UTC day (of created_at) and status, for analytics: runs, own tokens (the run''s own tokens_in + tokens_out, never the rolled-up tokens_total, so that sums do not count a child twice), average duration, and the day''s run count and failure rate (failed, budget_exceeded, expired over finished runs). Scoped to the session''s workspace (pg_agents.workspace), and only one the role may read (agents_app: any; agents_reader: those bound by agent.bind_reader); a superuser session without a workspace sees all.';
CREATE OR REPLACE FUNCTION agent.set_acl_function(fn regprocedure) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  p pg_catalog.pg_proc%ROWTYPE;
BEGIN
  IF fn IS NOT NULL THEN
    SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = fn;
    IF p.pronargs <> 4
       OR array_to_string(p.proargtypes::oid[], ',') <> array_to_string(ARRAY['text'::regtype, 'text'::regtype, 'text'::regtype, 'text'::regtype]::oid[], ',')
       OR p.prorettype <> 'boolean'::regtype OR p.proretset THEN
      RAISE EXCEPTION 'function % does not have the signature of an ACL function', fn
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'An ACL function is (user_id text, resource_type text, resource_id text, mode text) RETURNS boolean.',
              HINT = 'It is called with user_id NULL to ask whether the resource is shared with the whole workspace.';
    END IF;
    -- it is called inside the extension's SECURITY DEFINER functions: an
    -- invoker function of another role would run with the extension's rights
    IF NOT p.prosecdef AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = p.proowner) THEN
      RAISE EXCEPTION 'ACL function % must be SECURITY DEFINER or owned by a superuser', fn
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'agent.can_access calls it inside the extension''s own SECURITY DEFINER functions, where an invoker function of another role would run with the extension''s rights.',
              HINT = 'ALTER FUNCTION ... SECURITY DEFINER (it then runs with its owner''s rights), with SET search_path.';
    END IF;
  END IF;
  UPDATE agent.access_config SET acl_function = fn, updated_by = session_user, updated_at = now();
  PERFORM agent._audit_event('agent.set_acl_function', 'success', 'access_config', NULL, NULL, NULL,
                             jsonb_build_object('acl_function', fn::text),
                             CASE WHEN fn IS NULL THEN 'ACL from agent.resource_acl (default)'
                                  ELSE 'ACL from ' || fn::text END);
END
$$;
REVOKE ALL ON FUNCTION agent.set_acl_function(regprocedure) FROM PUBLIC;
COMMENT ON FUNCTION agent.set_acl_function(regprocedure) IS
  'Plugs the application''s ACL in: fn(user_id, resource_type, resource_id, mode) RETURNS boolean (user_id NULL: shared with the whole workspace?); NULL goes back to agent.resource_acl.';

CREATE OR REPLACE FUNCTION agent.unwatch_table(tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
  END IF;
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_watch ON %s', tbl);
END
$$;
COMMENT ON FUNCTION agent.unwatch_table(regclass) IS
  'Removes the watcher agent.watch_table installed (no error when the table is not watched); on the caller''s own tables only.';


-- ---- sql/upgrade/0.2.0--0.3.0/300_claim.sql ----
-- ===========================================================================
-- Fair claiming (branch claim; docs/runs.md "Fair claiming", docs/worker.md):
-- agent.claim_runs serves workspaces in turn and honours
-- pg_agents.max_runs_per_workspace.
-- ===========================================================================
-- fair claiming (agent.claim_runs): the workspaces with queued runs (a skip
-- scan) and the first runs of each, interactive first, then oldest
CREATE INDEX runs_queue_ws_idx ON agent.runs (workspace_id, priority DESC, id) WHERE status = 'queued';

-- Fair claiming (docs/runs.md, "Fair claiming").  Each workspace has its
-- own queue, interactive runs first (priority), then oldest (id); a claim
-- serves the workspaces in turn:
--   - interactive runs before autonomous ones, whatever their workspace;
--   - then the run whose turn comes first: its workspace's runs running
--     now plus its place in the workspace's queue of that priority, so that
--     the workspace with the fewest runs in flight is served first and a
--     claim takes every workspace's next run before anyone's second;
--   - then the oldest.
-- The lone run of a workspace with nothing running waits only for
-- interactive runs and for the older next runs of other workspaces with
-- nothing running (one each), never behind a backlog.  pg_agents.max_runs_per_workspace (0: no cap) caps the runs
-- of a workspace that are running (waiting runs hold no slot): a workspace
-- at its cap is skipped, not waited for.
--
-- A session bound to a workspace (pg_agents.workspace) claims only that
-- workspace's runs.
--
-- When one workspace has queued runs, its queue is claimed in one statement
-- (interactive first, then oldest, LIMIT n FOR UPDATE SKIP LOCKED).  With
-- several, the claim runs in passes.  One pass:
--   1. the workspaces with queued runs, by a skip scan of runs_queue_ws_idx
--      (one index descent per workspace, however many runs each has queued),
--      and how many runs each has running (runs_lease_idx);
--   2. the first k queued runs of each workspace with room, k = n - W + 1
--      for W such workspaces (at least 1; less when the cap leaves less
--      room): never more than that from one workspace in one claim, and
--      n candidates whenever n runs can be claimed;
--   3. the candidates in that order, each locked by primary key with SKIP
--      LOCKED until n are locked, and claimed.
-- A candidate locked by a concurrent claimer (or claimed by one since the
-- candidates were read) is skipped: when a pass ends short because of that,
-- another pass runs without those candidates, so that a claim never comes
-- back short while claimable runs remain (each such pass excludes at least
-- one more run).  With the cap on, claims are serialised (a transaction
-- advisory lock) so that two claimers never both fill the same room; the
-- running runs are then counted by a statement that starts after the lock.
CREATE OR REPLACE FUNCTION agent.claim_runs(n int) RETURNS SETOF agent.runs
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
ROWS 16   -- a claim returns a few runs: the worker's join on it stays a nested loop
SET search_path = pg_catalog, pg_temp
-- the first runs of a workspace are read in index order and no further: a
-- bitmap scan (chosen while the LIMIT is unknown to the plan) read all of
-- a workspace's queued runs at each claim
SET enable_bitmapscan = off
-- and the cost estimates of the plan, inflated by that unknown LIMIT, must
-- not make it JIT-compiled at every claim (40 ms for a claim of 1 ms)
SET jit = off
AS $$
DECLARE
  v_lease interval := pg_catalog.current_setting('pg_agents.run_lease')::interval;
  v_cap   integer := coalesce(nullif(pg_catalog.current_setting('pg_agents.max_runs_per_workspace', true), '')::integer, 0);
  -- the tenant boundary: a session bound to a workspace claims only its
  -- runs (42501 for a non-superuser session bound to none); a superuser
  -- session that sets none, such as the worker's, claims for all
  v_ws    text := agent._session_workspace();
  v_skip  bigint[] := '{}';
  v_rows  agent.runs[] := '{}';
  v_pass  agent.runs[];
  v_cand  bigint[];
  v_more  boolean;
  v_want  integer;
  v_one   text;
  v_room  integer;
BEGIN
  IF n IS NULL OR n < 1 THEN
    RAISE EXCEPTION 'number of runs to claim must be positive'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_cap > 0 THEN
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('pg_agents.claim'), 0);
  END IF;

  -- One workspace with queued runs (or a session bound to one): its own
  -- queue order is the fair order, claimed as the first-come queue was, in
  -- one statement (the whole machinery below costs about 0.3 ms a claim).
  v_one := v_ws;
  IF v_one IS NULL THEN
    SELECT q.workspace_id INTO v_one FROM agent.runs q
     WHERE q.status = 'queued' ORDER BY q.workspace_id LIMIT 1;
    IF v_one IS NULL THEN
      RETURN;
    END IF;
    -- (ORDER BY ... LIMIT 1, as the skip scan below: as an EXISTS, the
    -- generic plan scanned the whole table)
    IF (SELECT q.workspace_id FROM agent.runs q
         WHERE q.status = 'queued' AND q.workspace_id > v_one ORDER BY q.workspace_id LIMIT 1) IS NOT NULL THEN
      v_one := NULL;
    END IF;
  END IF;
  IF v_one IS NOT NULL THEN
    v_room := n;
    IF v_cap > 0 THEN
      -- a statement after the lock: the runs of the claimer before are seen running
      SELECT v_cap - pg_catalog.count(*)::integer INTO v_room FROM agent.runs r
       WHERE r.status = 'running' AND r.workspace_id = v_one;
      IF v_room <= 0 THEN
        RETURN;
      END IF;
    END IF;
    WITH c AS (
        SELECT q.id FROM agent.runs q
         WHERE q.status = 'queued' AND q.workspace_id = v_one
           AND (SELECT a.deleted_at FROM agent.agents a WHERE a.id = q.agent_id) IS NULL
         -- workspace_id first (constant here): the order of runs_queue_ws_idx,
         -- so that the plan never reads runs_queue_idx through the other
         -- workspaces' runs
         ORDER BY q.workspace_id, q.priority DESC, q.id
         LIMIT least(n, v_room)
         FOR UPDATE OF q SKIP LOCKED
      ), u AS (
        UPDATE agent.runs x
           SET status = 'running', attempts = x.attempts + 1,
               started_at = coalesce(x.started_at, pg_catalog.now()), lease_until = pg_catalog.now() + v_lease
          FROM c
         WHERE x.id = c.id   -- by primary key (see below)
        RETURNING x AS run
      )
    SELECT pg_catalog.array_agg(u.run ORDER BY (u.run).priority DESC, (u.run).id) INTO v_pass FROM u;
    v_rows := coalesce(v_pass, '{}');
  END IF;

  -- Several workspaces (and a session bound to none): passes as described
  -- above.
  WHILE v_one IS NULL LOOP
    v_want := n - pg_catalog.cardinality(v_rows);
    WITH RECURSIVE ws(w) AS (
        SELECT (SELECT q.workspace_id FROM agent.runs q
                 WHERE q.status = 'queued' ORDER BY q.workspace_id LIMIT 1)
      UNION ALL
        SELECT (SELECT q.workspace_id FROM agent.runs q
                 WHERE q.status = 'queued' AND q.workspace_id > ws.w ORDER BY q.workspace_id LIMIT 1)
          FROM ws WHERE ws.w IS NOT NULL
    ), busy AS MATERIALIZED (
        -- runs claimed by an earlier pass of this claim count too
        SELECT r.workspace_id AS w, pg_catalog.count(*)::integer AS running FROM agent.runs r
         WHERE r.status = 'running' GROUP BY r.workspace_id
    ), wsr AS MATERIALIZED (
        SELECT x.w, x.running, CASE WHEN v_cap > 0 THEN v_cap - x.running ELSE v_want END AS room
          FROM (SELECT ws.w, coalesce(b.running, 0) AS running
                  FROM ws LEFT JOIN busy b ON b.w = ws.w WHERE ws.w IS NOT NULL) x
         WHERE v_cap = 0 OR x.running < v_cap
    ), cand AS MATERIALIZED (
        SELECT o.w, k.k, k.k < o.room AS k_binds, l.id, l.priority,
               o.running + pg_catalog.row_number() OVER (PARTITION BY o.w, l.priority ORDER BY l.id) AS turn
          FROM wsr o
         CROSS JOIN (SELECT greatest(1, v_want - pg_catalog.count(*) + 1) AS k FROM wsr) k
         CROSS JOIN LATERAL (
               SELECT q.id, q.priority FROM agent.runs q
                WHERE q.status = 'queued' AND q.workspace_id = o.w AND q.id <> ALL (v_skip)
                  AND (SELECT a.deleted_at FROM agent.agents a WHERE a.id = q.agent_id) IS NULL
                ORDER BY q.workspace_id, q.priority DESC, q.id   -- runs_queue_ws_idx (as above)
                LIMIT least(k.k, o.room)) l
    ), c AS (
        SELECT o.ord, l.id
          FROM (SELECT pg_catalog.row_number() OVER (ORDER BY cand.priority DESC, cand.turn, cand.id) AS ord, cand.id
                  FROM cand ORDER BY 1) o
         -- one primary-key probe per candidate, in that order, until v_want
         -- are locked (texteq rather than =, so that the partial queue
         -- indexes, whose estimates lag behind bursts, never drive it; the
         -- status is re-checked on the newest version of a run that a
         -- concurrent claimer updated)
         CROSS JOIN LATERAL (
               SELECT q.id FROM agent.runs q
                WHERE q.id = o.id AND pg_catalog.texteq(q.status, 'queued')
                FOR UPDATE OF q SKIP LOCKED) l
         LIMIT v_want
    ), u AS (
      UPDATE agent.runs x
         SET status = 'running', attempts = x.attempts + 1,
             started_at = coalesce(x.started_at, pg_catalog.now()), lease_until = pg_catalog.now() + v_lease
        FROM c
       -- by primary key: c locked these rows while they were queued, so no
       -- status test here (with one, a stale estimate of the small partial
       -- queue index made the planner scan every queued run per claim)
       WHERE x.id = c.id
      RETURNING x AS run, c.ord
    )
    SELECT (SELECT pg_catalog.array_agg(u.run ORDER BY u.ord) FROM u), (SELECT pg_catalog.array_agg(cand.id) FROM cand),
           EXISTS (SELECT 1 FROM cand GROUP BY cand.w HAVING pg_catalog.bool_and(cand.k_binds) AND pg_catalog.count(*) >= pg_catalog.min(cand.k))
      INTO v_pass, v_cand, v_more;
    v_rows := v_rows || coalesce(v_pass, '{}');
    -- done: n claimed, no candidate left, or every candidate claimed and
    -- none of the workspaces cut at k candidates (W also counts workspaces
    -- whose queued runs all belong to deleted agents: then k was too small)
    EXIT WHEN pg_catalog.cardinality(v_rows) >= n OR v_cand IS NULL
           OR (pg_catalog.cardinality(v_cand) = coalesce(pg_catalog.cardinality(v_pass), 0) AND NOT v_more);
    -- some candidates were taken by concurrent claimers: look past them
    v_skip := v_skip || ARRAY(SELECT x FROM pg_catalog.unnest(v_cand) x
                               WHERE x <> ALL (ARRAY(SELECT p.id FROM pg_catalog.unnest(v_pass) p)));
  END LOOP;
  IF pg_catalog.cardinality(v_rows) = 0 THEN
    RETURN;
  END IF;
  -- one audit row per claimed run (agent._audit_run), in claim order
  PERFORM agent._audit_event('run.claim', 'success', 'run', r.id::text, r.workspace_id,
                             (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
                             pg_catalog.jsonb_build_object('agent_id', r.agent_id, 'status', 'running', 'attempts', r.attempts),
                             pg_catalog.format('run %s claimed (attempt %s)', r.id, r.attempts), NULL)
     FROM pg_catalog.unnest(v_rows) r;
  RETURN QUERY SELECT * FROM pg_catalog.unnest(v_rows);
END
$$;
COMMENT ON FUNCTION agent.claim_runs(int) IS
  'Claims up to n queued runs of agents not deleted, serving workspaces in turn: interactive runs first, then the run whose workspace has the fewest runs running counting those ahead of it in its queue, then the oldest; at most n - W + 1 runs of one workspace when W workspaces have queued runs; workspaces with pg_agents.max_runs_per_workspace runs running are skipped (0: no cap); a session bound to a workspace (pg_agents.workspace) claims only its runs. FOR UPDATE SKIP LOCKED, never the same run twice: running, attempts + 1, started_at on the first claim, lease_until = now() + pg_agents.run_lease. Returns the runs in claim order.';

-- ---- sql/upgrade/0.2.0--0.3.0/400_events.sql ----
-- ===========================================================================
-- events: the hourly cap's memo in backend memory (issue 14, attack 8), a
-- workspace for every event (issue 15), filter views read with the saving
-- role's rights (issue 14, attack 1), withholding of unreadable rows at
-- enqueue (issue 15), as in sql/src/010_core.sql, 400_events.sql and
-- 800_activity.sql.
-- ===========================================================================
-- The hourly cap's count, carried for the rest of the transaction once
-- counted (src/capmemo.c).
CREATE FUNCTION agent._cap_memo(p_agent_id bigint) RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_cap_memo';
REVOKE ALL ON FUNCTION agent._cap_memo(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._cap_memo(bigint) IS
  'Internal (agent._enqueue_run): the agent''s autonomous runs of the last hour as counted earlier in this transaction, or NULL when not counted yet. Backend memory, forgotten at transaction end, restored by a rolled-back subtransaction.';

CREATE FUNCTION agent._cap_memo_set(p_agent_id bigint, p_count bigint) RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_cap_memo_set';
REVOKE ALL ON FUNCTION agent._cap_memo_set(bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._cap_memo_set(bigint, bigint) IS
  'Internal (agent._enqueue_run): records the agent''s count of autonomous runs of the last hour for the rest of this transaction (undone if the current subtransaction rolls back).';

CREATE OR REPLACE FUNCTION agent._enqueue_run(p_agent_id bigint, p_regime text, p_origin text,
                                   p_input jsonb DEFAULT '{}',
                                   p_trigger_id bigint DEFAULT NULL,
                                   p_requested_by text DEFAULT NULL,
                                   p_parent_run_id bigint DEFAULT NULL,
                                   p_token_budget bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a        agent.agents%ROWTYPE;
  p        agent.runs%ROWTYPE;
  v_cap    integer;
  v_recent bigint;
  v_status text := 'queued';
  v_error  text;
  v_id     bigint;
BEGIN
  SELECT * INTO a FROM agent.agents WHERE id = p_agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF p_parent_run_id IS NOT NULL THEN
    SELECT * INTO p FROM agent.runs WHERE id = p_parent_run_id;
  END IF;
  IF p_regime = 'autonomous' THEN
    v_cap := coalesce(a.hourly_run_cap, current_setting('pg_agents.hourly_run_cap')::integer);
    -- one queue decision at a time per agent, so that concurrent events respect the cap
    PERFORM pg_advisory_xact_lock(hashtext('pg_agents.cap'), hashtext(p_agent_id::text));
    -- Counting stops at the cap: the check costs at most cap rows.  While this
    -- transaction holds the lock no other one queues for the agent, and now()
    -- does not move, so the count only grows by the runs queued here: it is
    -- counted once per transaction and then carried in backend memory
    -- (agent._cap_memo, src/capmemo.c: undone with a rolled-back
    -- subtransaction, like the rows; never a setting a session could set).
    v_recent := agent._cap_memo(p_agent_id);
    IF v_recent IS NULL THEN
      SELECT count(*) INTO v_recent FROM (
        SELECT 1 FROM agent.runs r
         WHERE r.agent_id = p_agent_id AND r.regime = 'autonomous'
           AND r.created_at > now() - interval '1 hour' AND r.status <> 'budget_exceeded'
         LIMIT v_cap) s;
    END IF;
    IF v_recent >= v_cap THEN
      v_status := 'budget_exceeded';
      v_error := format('hourly run cap of %s reached', v_cap);
    END IF;
  END IF;
  -- the id is taken first so that a root run is its own root in one INSERT
  v_id := nextval(pg_get_serial_sequence('agent.runs', 'id'));
  INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, parent_run_id, root_run_id, depth, regime,
                          origin, requested_by, status, priority, input, error, token_budget, finished_at)
  VALUES (v_id, a.workspace_id, p_agent_id, p_trigger_id, p_parent_run_id, coalesce(p.root_run_id, v_id),
          coalesce(p.depth + 1, 0), p_regime, p_origin, p_requested_by, v_status,
          CASE WHEN p_regime = 'manual' THEN 10 ELSE 0 END,
          coalesce(p_input, '{}'), v_error, p_token_budget,
          CASE WHEN v_status <> 'queued' THEN now() END);
  IF p_regime = 'autonomous' THEN
    PERFORM agent._cap_memo_set(p_agent_id, v_recent + CASE WHEN v_status = 'queued' THEN 1 ELSE 0 END);
  END IF;
  PERFORM pg_notify('agent_runs', json_build_object('run_id', v_id, 'agent_id', p_agent_id,
                                                    'status', v_status)::text);
  IF v_status = 'queued' THEN
    PERFORM agent._request_wake();  -- sets the worker's latch at commit
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) IS
  'Internal: queues one run (hourly cap for autonomous runs, NOTIFY agent_runs, worker wake-up at commit); the one path every origin uses.';

-- The candidate index leads with the workspace.
DROP INDEX agent.triggers_event_idx;
CREATE INDEX triggers_event_idx ON agent.triggers (workspace_id, event_name, resource_type, resource_id)
  WHERE enabled AND kind IN ('event', 'mention');
COMMENT ON INDEX agent.triggers_event_idx IS
  'Candidate lookup of agent.fire_event: (the event''s workspace, event_name, resource_type or NULL = any, resource_id or NULL = any).';

ALTER TABLE agent.triggers ADD COLUMN saved_by regrole;
COMMENT ON COLUMN agent.triggers.saved_by IS
  'Role that saved the trigger''s filter (the session''s outer role: SET ROLE counts, a SECURITY DEFINER function does not); a filter view is read with its rights. Set by triggers_validate_event, not by the writer.';

CREATE FUNCTION agent._saving_role(requested regrole DEFAULT NULL) RETURNS regrole
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'pg_agents_saving_role';
REVOKE ALL ON FUNCTION agent._saving_role(regrole) FROM PUBLIC;
COMMENT ON FUNCTION agent._saving_role(regrole) IS
  'Internal (triggers_validate_event): the session''s outer role (the one SET ROLE chose, else the session user), which SECURITY DEFINER functions do not change; requested instead when the outer role is a superuser.';

-- Triggers saved before 0.3.0 recorded no saving role: a filter view is
-- read as the view's owner (its own rights), which the superuser running
-- the upgrade records (before the validation trigger is replaced, so that
-- an old row that would not validate today does not stop the upgrade).
DROP TRIGGER triggers_validate_event ON agent.triggers;
DROP TRIGGER triggers_changed_upd ON agent.triggers;
UPDATE agent.triggers t
   SET saved_by = c.relowner::regrole
  FROM pg_catalog.pg_class c
 WHERE t.filter ? 'view' AND c.oid = pg_catalog.to_regclass(t.filter ->> 'view');

CREATE OR REPLACE FUNCTION agent._triggers_validate_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.saved_by := agent._saving_role(NEW.saved_by);
  ELSIF NEW.filter IS DISTINCT FROM OLD.filter OR NEW.saved_by IS DISTINCT FROM OLD.saved_by THEN
    NEW.saved_by := agent._saving_role(CASE WHEN NEW.saved_by IS DISTINCT FROM OLD.saved_by
                                            THEN NEW.saved_by END);
  END IF;
  IF NEW.kind IN ('event', 'mention') THEN
    IF NEW.kind = 'event' AND (NEW.event_name IS NULL OR btrim(NEW.event_name) = '') THEN
      RAISE EXCEPTION 'invalid event trigger: event_name is required'
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Name the event, e.g. collection.row_added.';
    END IF;
    IF NEW.event_name IS NOT NULL AND NEW.event_name !~ '^[A-Za-z0-9_.:-]{1,200}$' THEN
      RAISE EXCEPTION 'invalid event trigger: invalid event_name "%"', NEW.event_name
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'An event name has 1 to 200 letters, digits, dots, colons, dashes or underscores.';
    END IF;
  END IF;
  IF NEW.filter IS NULL THEN
    NEW.filter := '{}';
  END IF;
  PERFORM agent.validate_filter(NEW.filter);
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION agent._triggers_validate_event() IS
  'Trigger: refuses an invalid filter (a view the saving role may not read included), or an event trigger without a valid event_name, when agent.triggers is written; sets saved_by to the saving role when the filter is saved.';
CREATE TRIGGER triggers_validate_event
  BEFORE INSERT OR UPDATE OF kind, event_name, resource_type, resource_id, filter, saved_by ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_validate_event();

CREATE TRIGGER triggers_changed_upd
  AFTER UPDATE OF workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                  prompt, enabled, allow_self_retrigger, saved_by ON agent.triggers
  FOR EACH STATEMENT EXECUTE FUNCTION agent._triggers_changed();

COMMENT ON FUNCTION agent.validate_filter(jsonb) IS
  'Raises 22023 "invalid filter: ..." naming the bad part of a trigger filter (42501 for a view the session''s outer role may not read); returns nothing when the filter is valid.';

COMMENT ON FUNCTION agent.filter_matches(jsonb, jsonb) IS
  'Whether an event payload satisfies a trigger filter (the evaluator agent.fire_event uses; a view is read with the caller''s rights, within pg_agents.filter_view_timeout); a NULL or empty filter matches.';

REVOKE ALL ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text) IS
  'Matches an event of the session''s workspace (pg_agents.workspace) to the enabled event/mention triggers of that workspace (filters, anti-loop, suspension, dedup, hourly cap) and queues one autonomous run per match in the caller''s transaction; returns the runs made. A superuser session without a workspace fires an event of no workspace: it wakes nobody and is counted (agent.unknown_workspace_events).';

CREATE FUNCTION agent.unknown_workspace_events(
    OUT events bigint, OUT last_at timestamptz, OUT last_event text,
    OUT last_resource_type text, OUT last_resource_id text)
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_unknown_workspace_events';
REVOKE ALL ON FUNCTION agent.unknown_workspace_events() FROM PUBLIC;
COMMENT ON FUNCTION agent.unknown_workspace_events() IS
  'Events of this database whose workspace was unknown (no workspace column value and no session pg_agents.workspace), which woke nobody: how many since the server started (counted in shared memory, so rolled-back transactions count too) and the last one. For the DBA.';

-- ---------------------------------------------------------------------------
-- Withholding: nothing the agent may not read is stored for it
-- ---------------------------------------------------------------------------
-- A run's input is a log: it reaches agent.runs.input, claim_runs (external
-- executors), the activity and run_detail.  So the payload is stored as the
-- run's identity may see it.  Called by the dispatcher for every run it
-- queues (events and mentions); the reusable entry point for any other path
-- that stores resource rows for a run.
CREATE FUNCTION agent._withhold_payload(p_agent_id bigint, p_payload jsonb,
                                        p_regime text DEFAULT 'autonomous',
                                        p_user_id text DEFAULT NULL,
                                        p_resource_type text DEFAULT NULL,
                                        p_resource_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v      jsonb := p_payload;
  v_rt   text;
  v_ok   boolean;
  v_why  text;
  v_ref  jsonb;
BEGIN
  IF v IS NULL OR pg_catalog.jsonb_typeof(v) <> 'object' THEN
    RETURN v;
  END IF;
  -- the event's own resource, when it is of a registered type
  IF p_resource_type IS NOT NULL AND p_resource_id IS NOT NULL
     AND EXISTS (SELECT 1 FROM agent.resource_tables r WHERE r.resource_type = p_resource_type) THEN
    SELECT e.allowed, e.reason INTO v_ok, v_why
      FROM agent.explain_access(p_agent_id, p_resource_type, p_resource_id, 'read', p_regime, p_user_id) e;
    IF NOT coalesce(v_ok, false) THEN
      RETURN pg_catalog.jsonb_build_object('resource_type', p_resource_type, 'resource_id', p_resource_id,
                                           'withheld', coalesce(v_why, 'not_granted'));
    END IF;
  END IF;
  -- a row of a registered table (the watchers' shape: table, row_id, row, old)
  IF v ? 'table' AND (v ? 'row' OR v ? 'old') THEN
    SELECT r.resource_type INTO v_rt
      FROM agent.resource_tables r
      JOIN pg_catalog.pg_class c ON c.oid = r.tbl
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) c.relname = v ->> 'table'
     LIMIT 1;
    IF v_rt IS NOT NULL THEN
      IF v ->> 'row_id' IS NULL THEN
        v_ok := false;
        v_why := 'not_granted';
      ELSE
        SELECT e.allowed, e.reason INTO v_ok, v_why
          FROM agent.explain_access(p_agent_id, v_rt, v ->> 'row_id', 'read', p_regime, p_user_id) e;
      END IF;
      IF NOT coalesce(v_ok, false) THEN
        v_ref := pg_catalog.jsonb_build_object('resource_type', v_rt, 'resource_id', v ->> 'row_id',
                                               'withheld', coalesce(v_why, 'not_granted'));
        v := (v - 'row' - 'old') || pg_catalog.jsonb_build_object('row', v_ref)
             || CASE WHEN v ? 'old' THEN pg_catalog.jsonb_build_object('old', v_ref) ELSE '{}' END;
      END IF;
    END IF;
  END IF;
  RETURN v;
END
$$;
REVOKE ALL ON FUNCTION agent._withhold_payload(bigint, jsonb, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._withhold_payload(bigint, jsonb, text, text, text, text) IS
  'Internal: the payload as the run''s identity (agent, regime, user for manual runs) may see it. A row of a registered resource table it may not read ({"table", "row_id", "row", "old"}) has row and old replaced by {"resource_type", "resource_id", "withheld": <agent.explain_access reason>}; when the event''s own resource (p_resource_type, p_resource_id) is of a registered type and unreadable, the whole payload is that reference. Anything else is returned unchanged.';

DROP FUNCTION agent.watch_table(regclass, text, name, text[]);
CREATE OR REPLACE FUNCTION agent.watch_table(tbl regclass, resource_type text, id_column name DEFAULT 'id',
                                  mention_columns text[] DEFAULT NULL, workspace_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_args text;
  v_col  text;
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- SECURITY DEFINER (agent._watch_row is nobody's to attach): on the
  -- caller's own tables only
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF resource_type IS NULL OR btrim(resource_type) = '' THEN
    RAISE EXCEPTION 'resource_type must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = tbl AND c.relkind IN ('r', 'p')) THEN
    RAISE EXCEPTION '"%" is not a table', tbl
      USING ERRCODE = 'wrong_object_type', HINT = 'Only tables can be watched.';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                 WHERE a.attrelid = tbl AND a.attname = id_column AND a.attnum > 0 AND NOT a.attisdropped) THEN
    RAISE EXCEPTION 'column "%" of table "%" does not exist', id_column, tbl
      USING ERRCODE = 'undefined_column', HINT = 'Pass the id column of the table as id_column.';
  END IF;
  IF workspace_column IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = tbl AND a.attname = workspace_column AND a.attnum > 0 AND NOT a.attisdropped) THEN
    RAISE EXCEPTION 'workspace column "%" of table "%" does not exist', workspace_column, tbl
      USING ERRCODE = 'undefined_column',
            HINT = 'Pass the column holding each row''s workspace id, or NULL to use the session''s pg_agents.workspace.';
  END IF;
  v_args := pg_catalog.quote_literal(resource_type) || ', ' || pg_catalog.quote_literal(id_column::text)
            || ', ' || pg_catalog.quote_literal('workspace_column=' || coalesce(workspace_column::text, ''));
  FOREACH v_col IN ARRAY coalesce(mention_columns, '{}'::text[]) LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid = tbl AND a.attname = v_col AND a.attnum > 0 AND NOT a.attisdropped) THEN
      RAISE EXCEPTION 'mention column "%" of table "%" does not exist', v_col, tbl
        USING ERRCODE = 'undefined_column';
    END IF;
    v_args := v_args || ', ' || pg_catalog.quote_literal(v_col);
  END LOOP;
  EXECUTE pg_catalog.format(
    'CREATE OR REPLACE TRIGGER pg_agents_watch AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH ROW EXECUTE FUNCTION agent._watch_row(%s)', tbl, v_args);
END
$$;
COMMENT ON FUNCTION agent.watch_table(regclass, text, name, text[], name) IS
  'Installs the pg_agents_watch row trigger: rows added, updated and removed become collection events (and agent.mentioned for [[agent:ID]] tokens added to mention_columns) of the row''s workspace: the value of workspace_column, or without one the writing session''s pg_agents.workspace; an event of no workspace wakes nobody and is counted (agent.unknown_workspace_events). On the caller''s own tables only.';

-- Trigger arguments: resource_type, id_column, 'workspace_column=<name>'
-- (absent in watchers installed before 0.3.0), mention columns...
CREATE OR REPLACE VIEW agent.watched_tables AS
SELECT w.tbl, w.args[1] AS resource_type, w.args[2] AS id_column,
       CASE WHEN w.args[3] LIKE 'workspace_column=%' THEN w.args[4:w.n] ELSE w.args[3:w.n] END AS mention_columns,
       CASE WHEN w.args[3] LIKE 'workspace_column=%'
            THEN nullif(pg_catalog.substr(w.args[3], 18), '') END AS workspace_column
FROM (SELECT t.tgrelid::regclass AS tbl, t.tgnargs AS n,
             pg_catalog.string_to_array(pg_catalog.encode(t.tgargs, 'escape'), E'\\000') AS args
        FROM pg_catalog.pg_trigger t
       WHERE t.tgname = 'pg_agents_watch' AND NOT t.tgisinternal) w;
COMMENT ON VIEW agent.watched_tables IS 'Tables watched by agent.watch_table, with their resource type, id column, mention columns and workspace column.';
COMMENT ON COLUMN agent.watched_tables.tbl IS 'Watched table.';
COMMENT ON COLUMN agent.watched_tables.resource_type IS 'Resource type of its events.';
COMMENT ON COLUMN agent.watched_tables.id_column IS 'Column giving row_id.';
COMMENT ON COLUMN agent.watched_tables.mention_columns IS 'Columns scanned for [[agent:ID]] mentions.';
COMMENT ON COLUMN agent.watched_tables.workspace_column IS 'Column giving each row''s workspace; NULL: the writing session''s pg_agents.workspace.';

-- What is wrong with one trigger of a draft (NULL when it is valid).
CREATE OR REPLACE FUNCTION agent._draft_trigger_problem(t jsonb) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k    text;
  kind text;
BEGIN
  IF t IS NULL OR jsonb_typeof(t) <> 'object' THEN
    RETURN 'a trigger must be a JSON object';
  END IF;
  FOR k IN SELECT jsonb_object_keys(t) LOOP
    IF k NOT IN ('kind', 'event_name', 'resource_type', 'resource_id', 'filter', 'schedule', 'timezone',
                 'prompt', 'allow_self_retrigger', 'show_typing', 'run_as', 'enabled') THEN
      RETURN format('unknown key "%s"', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['kind', 'event_name', 'resource_type', 'resource_id', 'schedule',
                                      'timezone', 'prompt', 'run_as']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) NOT IN ('string', 'null') THEN
      RETURN format('"%s" must be a string', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['allow_self_retrigger', 'show_typing', 'enabled']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) <> 'boolean' THEN
      RETURN format('"%s" must be a boolean', k);
    END IF;
  END LOOP;
  kind := t ->> 'kind';
  IF kind IS NULL OR kind NOT IN ('schedule', 'event', 'mention', 'api') THEN
    RETURN format('kind "%s" is not schedule, event, mention or api', coalesce(kind, 'NULL'));
  END IF;
  IF kind = 'schedule' THEN
    IF t ->> 'schedule' IS NULL OR NOT agent.cron_valid(t ->> 'schedule') THEN
      RETURN format('invalid schedule "%s"', coalesce(t ->> 'schedule', 'NULL'));
    END IF;
  END IF;
  IF t ->> 'timezone' IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = t ->> 'timezone') THEN
    RETURN format('unknown time zone "%s"', t ->> 'timezone');
  END IF;
  IF kind = 'event' THEN
    IF coalesce(btrim(t ->> 'event_name'), '') = '' THEN
      RETURN 'an event trigger needs event_name';
    END IF;
    IF (t ->> 'event_name') !~ '^[A-Za-z0-9_.:-]{1,200}$' THEN
      RETURN format('invalid event_name "%s"', t ->> 'event_name');
    END IF;
    IF coalesce(btrim(t ->> 'resource_type'), '') = '' THEN
      RETURN 'an event trigger needs resource_type';
    END IF;
  END IF;
  IF t ->> 'resource_id' IS NOT NULL AND t ->> 'resource_type' IS NULL THEN
    RETURN 'resource_id needs resource_type';
  END IF;
  IF t ->> 'run_as' IS NOT NULL AND t ->> 'run_as' NOT IN ('creator', 'shared') THEN
    RETURN format('run_as "%s" is not creator or shared', t ->> 'run_as');
  END IF;
  IF t ? 'filter' AND jsonb_typeof(t -> 'filter') <> 'null' THEN
    -- a filter view must be readable by the session's outer role (the
    -- application's, not the owner of a SECURITY DEFINER caller such as
    -- create_from_draft): it is read with that role's rights, which become
    -- the trigger's saved_by.  Validation never runs the view.
    BEGIN
      PERFORM agent.validate_filter(t -> 'filter');
    EXCEPTION WHEN invalid_parameter_value OR insufficient_privilege THEN
      RETURN SQLERRM;
    END;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._draft_trigger_problem(jsonb) IS
  'Internal: why a draft trigger is invalid (keys and types, kind, cron via agent.cron_valid, time zone, event name and resource type, run_as, filter via agent.validate_filter, whose view the session''s outer role must be allowed to read), or NULL when it is valid.';

-- ---- sql/upgrade/0.2.0--0.3.0/520_vector.sql ----
-- ===========================================================================
-- vector: semantic search with pgvector (docs/allowlist.md, "Semantic
-- search").  The registry names an optional embedding column; the
-- registration function takes it (a new signature: dropped and recreated).
-- ===========================================================================
ALTER TABLE agent.resource_tables ADD COLUMN embedding_column name;
COMMENT ON COLUMN agent.resource_tables.embedding_column IS 'Optional pgvector column (type vector) holding each row''s embedding, filled by the application; search_resources ranks the table by vector similarity to the embedded query when pg_agents.embedding_model is set (docs/allowlist.md, "Semantic search"). NULL: full-text only.';

DROP FUNCTION agent.register_resource_table(text, regclass, name, name, name);
CREATE FUNCTION agent.register_resource_table(resource_type text, tbl regclass, id_column name,
                                              title_column name, body_column name,
                                              embedding_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_vector oid;
  v_col    pg_attribute;
BEGIN
  PERFORM agent._rls_check_type(resource_type);
  PERFORM agent._rls_check_table(tbl);
  PERFORM agent._rls_column(tbl, id_column, 'id');
  PERFORM agent._rls_column(tbl, title_column, 'title');
  PERFORM agent._rls_column(tbl, body_column, 'body');
  IF embedding_column IS NOT NULL THEN
    -- pgvector is optional: the type of its extension, wherever it lives
    SELECT t.oid INTO v_vector
      FROM pg_extension x JOIN pg_type t ON t.typnamespace = x.extnamespace AND t.typname = 'vector'
     WHERE x.extname = 'vector';
    IF v_vector IS NULL THEN
      RAISE EXCEPTION 'semantic search needs the pgvector extension'
        USING ERRCODE = 'feature_not_supported',
              DETAIL = 'An embedding column is a column of type vector, which this database does not have.',
              HINT = 'Install pgvector (the Debian package postgresql-NN-pgvector) and run CREATE EXTENSION vector, or register the table without an embedding column.';
    END IF;
    v_col := agent._rls_column(tbl, embedding_column, 'embedding');
    IF v_col.atttypid <> v_vector THEN
      RAISE EXCEPTION 'column "%" of relation "%" is not of type vector', embedding_column, tbl
        USING ERRCODE = 'datatype_mismatch',
              DETAIL = pg_catalog.format('Its type is %s; an embedding column is a pgvector vector column.',
                                         pg_catalog.format_type(v_col.atttypid, v_col.atttypmod));
    END IF;
  END IF;
  INSERT INTO agent.resource_tables AS r (tbl, resource_type, id_column, title_column, body_column,
                                          embedding_column)
  VALUES (register_resource_table.tbl, register_resource_table.resource_type,
          register_resource_table.id_column, register_resource_table.title_column,
          register_resource_table.body_column, register_resource_table.embedding_column)
  ON CONFLICT ON CONSTRAINT resource_tables_pkey DO UPDATE
     SET resource_type = EXCLUDED.resource_type, id_column = EXCLUDED.id_column,
         title_column = EXCLUDED.title_column, body_column = EXCLUDED.body_column,
         embedding_column = EXCLUDED.embedding_column,
         registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at;
  -- the built-in tools read (and write_resource updates) it as agents_tool
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agents_tool') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO agents_tool',
                   (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl));
    EXECUTE format('GRANT SELECT, UPDATE ON %s TO agents_tool', tbl);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; grants agents_tool USAGE on its schema and SELECT, UPDATE on it. Row access is then decided by agent.enable_allowlist and the tools'' gates.';


-- ---- sql/upgrade/0.2.0--0.3.0/600_worker.sql ----
-- worker: the LLM endpoint allowlist (pg_agents.llm_url_allowlist) and the
-- API key only ever sent to pg_agents.llm_url; approvals that show exactly
-- what runs (pg_agents.approval_max_input, no credential stored); MCP
-- scoping by workspace and by the run's user.  (sql/src/600_worker.sql,
-- 300_runs.sql, 700_mcp.sql, 000_schema.sql)

-- ---------------------------------------------------------------------------
-- Where the API key goes (docs/worker.md, "LLM endpoints and the API key")
-- ---------------------------------------------------------------------------
-- An agent's settings may name their own LLM endpoint (scope.llm_url) only
-- when a superuser listed it in pg_agents.llm_url_allowlist (or it is
-- pg_agents.llm_url itself).  Checked on every write of the scope (save,
-- create, restore, a direct UPDATE) and again by the worker before each
-- run, since the allowlist may change.  pg_agents.llm_api_key is only ever
-- sent to pg_agents.llm_url: an allowlisted agent endpoint gets no key.
CREATE FUNCTION agent._llm_url_allowed(url text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_llm_url_allowed';
COMMENT ON FUNCTION agent._llm_url_allowed(text) IS
  'Internal: whether an agent may name this LLM endpoint: pg_agents.llm_url, or an entry of pg_agents.llm_url_allowlist (exact match once trailing slashes are trimmed).';

CREATE FUNCTION agent._agents_llm_url_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_url jsonb := NEW.scope -> 'llm_url';
BEGIN
  IF v_url IS NULL OR (TG_OP = 'UPDATE' AND v_url IS NOT DISTINCT FROM OLD.scope -> 'llm_url') THEN
    RETURN NEW;
  END IF;
  IF pg_catalog.jsonb_typeof(v_url) <> 'string' THEN
    RAISE EXCEPTION 'scope key "llm_url" must be a string'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT agent._llm_url_allowed(v_url #>> '{}') THEN
    RAISE EXCEPTION 'scope llm_url "%" is not an allowed LLM endpoint', v_url #>> '{}'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An agent''s settings may only name an endpoint listed in pg_agents.llm_url_allowlist, which a superuser sets; the API key is only ever sent to pg_agents.llm_url.',
            HINT = 'Remove llm_url from the scope to use the cluster''s endpoint, or ask a superuser to add it to pg_agents.llm_url_allowlist.';
  END IF;
  RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION agent._agents_llm_url_check() FROM PUBLIC;
COMMENT ON FUNCTION agent._agents_llm_url_check() IS
  'Internal trigger: refuses (22023) an agent scope whose llm_url changed to an endpoint outside pg_agents.llm_url_allowlist.';

CREATE TRIGGER agents_llm_url_check BEFORE INSERT OR UPDATE OF scope ON agent.agents
  FOR EACH ROW EXECUTE FUNCTION agent._agents_llm_url_check();
COMMENT ON TRIGGER agents_llm_url_check ON agent.agents IS
  'scope.llm_url must be an endpoint a superuser allowed (pg_agents.llm_url_allowlist).';

-- ---------------------------------------------------------------------------
-- Approvals show what runs (agent.request_approval)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._has_credential(input jsonb) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_has_credential';
COMMENT ON FUNCTION agent._has_credential(jsonb) IS
  'Internal: whether redaction of credentials (agent.redact''s rules, without its size cuts) would change the value: a value under a credential-shaped key, or a credential-shaped string.';

-- ---------------------------------------------------------------------------
-- agent.request_approval (sql/src/300_runs.sql)
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION agent.request_approval(run_id bigint, tool text, input jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r     agent.runs%ROWTYPE;
  v_in  jsonb := coalesce(request_approval.input, '{}');
  v_key text;
  v_id  bigint;
  v_len bigint;
  v_max bigint;
BEGIN
  IF tool IS NULL THEN
    RAISE EXCEPTION 'tool name must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the approver sees exactly what will run: the whole input, or no approval
  v_len := pg_catalog.octet_length(v_in::text);
  v_max := pg_catalog.pg_size_bytes(pg_catalog.current_setting('pg_agents.approval_max_input'));
  IF v_len > v_max THEN
    RAISE EXCEPTION 'tool input of % bytes is too large to be approved', v_len
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = pg_catalog.format('An approval shows the whole input of the call it authorises, up to pg_agents.approval_max_input (%s bytes).', v_max),
            HINT = 'Make the change in smaller calls, or ask a superuser to raise pg_agents.approval_max_input.';
  END IF;
  IF agent._has_credential(v_in) THEN
    RAISE EXCEPTION 'tool input holds a credential-shaped value'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An approval stores the input exactly as it will run, and a credential is never stored: the call is refused.',
            HINT = 'Refer to the secret (e.g. by the name of a configured connection) instead of passing it.';
  END IF;
  v_key := agent.approval_key(tool, v_in);
  r := agent._lock_run(request_approval.run_id);
  IF r.status NOT IN ('running', 'waiting_approval') THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run asks for an approval.', r.status);
  END IF;
  SELECT p.id INTO v_id FROM agent.approvals p
   WHERE p.run_id = r.id AND p.approval_key = v_key AND p.status = 'pending';
  IF NOT FOUND THEN
    INSERT INTO agent.approvals (workspace_id, run_id, approval_key, tool, input, status, expires_at)
    VALUES (r.workspace_id, r.id, v_key, tool, v_in, 'pending',
            now() + current_setting('pg_agents.approval_ttl')::interval)
    RETURNING id INTO v_id;
    PERFORM agent._audit_event('approval.request', 'success', 'approval', v_id::text, r.workspace_id,
                               (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
                               jsonb_build_object('run_id', r.id, 'tool', tool, 'approval_key', v_key,
                                                  'input', agent.redact(v_in)),
                               format('run %s asks approval for %s', r.id, tool));
  END IF;
  IF r.status <> 'waiting_approval' THEN
    UPDATE agent.runs x SET status = 'waiting_approval', lease_until = NULL WHERE x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_approval'),
                             format('run %s waits for approval of %s', r.id, tool));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_approval');
  END IF;
  RETURN v_key;
END
$$;
COMMENT ON FUNCTION agent.request_approval(bigint, text, jsonb) IS
  'Pauses a running run on a tool call that needs approval: stores a pending approval (key, the input exactly as it will run, expires_at = now() + pg_agents.approval_ttl), the run goes to waiting_approval. An input larger than pg_agents.approval_max_input (54000) or holding a credential-shaped value (22023) is refused. Asking twice for the same call reuses the pending approval. Returns the approval key.';
COMMENT ON COLUMN agent.approvals.input IS 'Tool input, exactly as the approved call runs (never cut; a call whose input holds a credential-shaped value or exceeds pg_agents.approval_max_input is refused).';

-- ---------------------------------------------------------------------------
-- MCP: personal servers serve only their user's runs; the catalogue and its
-- status inside the session's workspace (sql/src/700_mcp.sql)
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION agent._mcp_server_id(p_name text, p_workspace_id text, p_owner_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  IF p_workspace_id IS NULL THEN
    RAISE EXCEPTION 'workspace_id is required'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass workspace_id or set pg_agents.workspace.';
  END IF;
  IF NOT agent._workspace_ok(p_workspace_id) THEN
    v_id := NULL;             -- another workspace: as if it did not exist
  ELSIF p_owner_id IS NULL THEN
    SELECT s.id INTO v_id FROM agent.mcp_servers s
     WHERE s.workspace_id = p_workspace_id AND s.scope = 'workspace' AND s.name = p_name;
  ELSE
    SELECT s.id INTO v_id FROM agent.mcp_servers s
     WHERE s.workspace_id = p_workspace_id AND s.scope = 'user' AND s.owner_id = p_owner_id
       AND s.name = p_name;
  END IF;
  IF v_id IS NULL THEN
    RAISE EXCEPTION 'MCP server "%" does not exist', p_name
      USING ERRCODE = 'undefined_object',
            DETAIL = CASE WHEN p_owner_id IS NULL
                          THEN format('No workspace server of that name in workspace "%s".', p_workspace_id)
                          ELSE format('No personal server of that name for user "%s" in workspace "%s".',
                                      p_owner_id, p_workspace_id) END;
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._mcp_server_id(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_server_id(text, text, text) IS
  'Internal: the id of a server by name (a personal one when owner_id is given), or an undefined_object error.';

CREATE OR REPLACE FUNCTION agent.mcp_add_server(name text, url text, headers jsonb DEFAULT '{}',
                                     scope text DEFAULT 'workspace',
                                     workspace_id text DEFAULT agent.current_workspace(),
                                     owner_id text DEFAULT NULL,
                                     description text DEFAULT NULL,
                                     refresh boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  IF name IS NULL OR name !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$' THEN
    RAISE EXCEPTION 'invalid MCP server name "%"', name
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A server name is 1 to 48 letters, digits, "_", "." or "-", starting with a letter or a digit.';
  END IF;
  IF scope IS NULL OR scope NOT IN ('workspace', 'user') THEN
    RAISE EXCEPTION 'invalid MCP server scope "%"', scope
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A scope is workspace or user.';
  END IF;
  IF workspace_id IS NULL THEN
    RAISE EXCEPTION 'workspace_id is required'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass workspace_id or set pg_agents.workspace.';
  END IF;
  IF NOT agent._workspace_ok(workspace_id) THEN
    RAISE EXCEPTION 'workspace "%" is not the session''s workspace', workspace_id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'An MCP server is added to the workspace named by pg_agents.workspace.';
  END IF;
  IF scope = 'user' AND owner_id IS NULL THEN
    RAISE EXCEPTION 'a user-scope MCP server needs an owner_id'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF scope = 'workspace' AND owner_id IS NOT NULL THEN
    RAISE EXCEPTION 'a workspace-scope MCP server has no owner_id'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Use scope => ''user'' for a personal server.';
  END IF;
  IF url IS NULL OR agent._mcp_url_problem(url) IS NOT NULL THEN
    RAISE EXCEPTION 'URL of MCP server "%" is not allowed', name
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = coalesce(agent._mcp_url_problem(url), 'The URL is empty.');
  END IF;
  IF headers IS NULL OR jsonb_typeof(headers) <> 'object' THEN
    RAISE EXCEPTION 'headers of MCP server "%" must be a JSON object', name
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT 1 FROM agent.mcp_servers s
              WHERE s.workspace_id = mcp_add_server.workspace_id AND s.scope = mcp_add_server.scope
                AND s.owner_id IS NOT DISTINCT FROM mcp_add_server.owner_id
                AND s.name = mcp_add_server.name) THEN
    RAISE EXCEPTION 'MCP server "%" already exists', name
      USING ERRCODE = 'unique_violation',
            HINT = 'Remove it first with agent.mcp_remove_server, or choose another name.';
  END IF;
  INSERT INTO agent.mcp_servers (workspace_id, name, scope, owner_id, url, headers, description)
  VALUES (mcp_add_server.workspace_id, mcp_add_server.name, mcp_add_server.scope,
          mcp_add_server.owner_id, mcp_add_server.url, mcp_add_server.headers,
          mcp_add_server.description)
  RETURNING id INTO v_id;
  PERFORM agent._audit_event('mcp.add_server', 'success', 'mcp_server', v_id::text,
                             mcp_add_server.workspace_id, mcp_add_server.owner_id,
                             jsonb_build_object('name', mcp_add_server.name, 'scope', mcp_add_server.scope,
                                                'url', mcp_add_server.url,
                                                'header_names', (SELECT coalesce(jsonb_agg(k ORDER BY k), '[]')
                                                                   FROM jsonb_object_keys(mcp_add_server.headers) k)),
                             format('MCP server "%s" added', mcp_add_server.name));
  IF refresh THEN
    PERFORM agent.mcp_refresh(v_id);
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_add_server(text, text, jsonb, text, text, text, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_add_server(text, text, jsonb, text, text, text, text, boolean) IS
  'Adds an MCP server (https://, or http:// to a loopback host) and, unless refresh is false, connects to it at once and lists its tools; a server that cannot be reached is still added, with its error in agent.mcp_status. Returns its id.';

CREATE OR REPLACE FUNCTION agent.mcp_remove_server(server_id bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
BEGIN
  DELETE FROM agent.mcp_servers m WHERE m.id = server_id AND agent._workspace_ok(m.workspace_id) RETURNING * INTO s;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM agent._audit_event('mcp.remove_server', 'success', 'mcp_server', s.id::text,
                             s.workspace_id, s.owner_id,
                             jsonb_build_object('name', s.name, 'scope', s.scope),
                             format('MCP server "%s" removed', s.name));
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_remove_server(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_remove_server(bigint) IS
  'Removes an MCP server and its tools; agents stop seeing them at their next turn. Returns false when there was no such server.';

CREATE OR REPLACE FUNCTION agent.mcp_set_enabled(server_id bigint, enabled boolean) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  UPDATE agent.mcp_servers s SET enabled = mcp_set_enabled.enabled
   WHERE s.id = server_id AND agent._workspace_ok(s.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', server_id USING ERRCODE = 'undefined_object';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_set_enabled(bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_enabled(bigint, boolean) IS
  'Enables or disables an MCP server (a disabled server is neither refreshed nor offered to agents).';

CREATE OR REPLACE FUNCTION agent.mcp_set_tool_approval(server_id bigint, tool text, needs_approval boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  UPDATE agent.mcp_tools t SET needs_approval = mcp_set_tool_approval.needs_approval
   WHERE t.server_id = mcp_set_tool_approval.server_id AND t.name = tool
     AND agent._workspace_ok(t.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP tool "%" of server % does not exist', tool, server_id
      USING ERRCODE = 'undefined_object', HINT = 'Refresh the server first with agent.mcp_refresh.';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_set_tool_approval(bigint, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_tool_approval(bigint, text, boolean) IS
  'Marks an MCP tool as needing human approval (a call pauses the run in waiting_approval), or not.';

CREATE OR REPLACE FUNCTION agent.mcp_refresh(server_id bigint)
RETURNS TABLE(id bigint, name text, connected boolean, tool_count integer, error text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
  t jsonb;
  v_names text[] := '{}';
  v_name text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m
   WHERE m.id = mcp_refresh.server_id AND agent._workspace_ok(m.workspace_id) FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_refresh.server_id USING ERRCODE = 'undefined_object';
  END IF;
  r := agent._mcp_list(s.id, s.url, s.headers);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_servers m SET last_error = r->>'error' WHERE m.id = s.id;
    RETURN QUERY SELECT s.id, s.name, false, NULL::integer, r->>'error';
    RETURN;
  END IF;
  FOR t IN SELECT * FROM jsonb_array_elements(r->'tools') LOOP
    v_name := t->>'name';
    IF v_name IS NULL OR v_name = ANY (v_names) THEN
      CONTINUE;
    END IF;
    v_names := v_names || v_name;
    INSERT INTO agent.mcp_tools AS mt (workspace_id, server_id, name, exposed_name, description,
                                       input_schema, annotations, refreshed_at)
    VALUES (s.workspace_id, s.id, v_name, agent._mcp_exposed_name(s.id, v_name), t->>'description',
            CASE WHEN jsonb_typeof(t->'inputSchema') = 'object' THEN t->'inputSchema'
                 ELSE '{"type": "object"}' END,
            t->'annotations', now())
    ON CONFLICT ON CONSTRAINT mcp_tools_pkey DO UPDATE
       SET description = EXCLUDED.description, input_schema = EXCLUDED.input_schema,
           annotations = EXCLUDED.annotations, refreshed_at = EXCLUDED.refreshed_at;
  END LOOP;
  DELETE FROM agent.mcp_tools mt WHERE mt.server_id = s.id AND NOT (mt.name = ANY (v_names));
  UPDATE agent.mcp_servers m
     SET last_error = NULL, tools_refreshed_at = now(),
         protocol_version = r->>'protocolVersion', server_info = r->'serverInfo'
   WHERE m.id = s.id;
  RETURN QUERY SELECT s.id, s.name, true, cardinality(v_names), NULL::text;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh(bigint) IS
  'Connects to one MCP server from this backend (initialize, tools/list to the last page) and replaces its tools in agent.mcp_tools; a failure is recorded in last_error and returned, never raised.';

CREATE OR REPLACE FUNCTION agent.mcp_refresh(server text DEFAULT NULL,
                                  workspace_id text DEFAULT agent.current_workspace(),
                                  owner_id text DEFAULT NULL)
RETURNS TABLE(id bigint, name text, connected boolean, tool_count integer, error text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  IF server IS NOT NULL THEN
    RETURN QUERY SELECT * FROM agent.mcp_refresh(agent._mcp_server_id(server, workspace_id, owner_id));
    RETURN;
  END IF;
  -- every enabled server of the workspace (of every workspace when NULL),
  -- personal ones limited to owner_id when it is given
  FOR v_id IN SELECT s.id FROM agent.mcp_servers s
               WHERE s.enabled
                 AND (mcp_refresh.workspace_id IS NULL OR s.workspace_id = mcp_refresh.workspace_id)
                 AND agent._workspace_ok(s.workspace_id)
                 AND (mcp_refresh.owner_id IS NULL OR s.scope = 'workspace' OR s.owner_id = mcp_refresh.owner_id)
               ORDER BY s.id LOOP
    RETURN QUERY SELECT * FROM agent.mcp_refresh(v_id);
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh(text, text, text) IS
  'Refreshes one MCP server by name, or with no name every enabled server of the workspace; one row per server: connected, tool count or error. Broken servers are skipped with their error, the others refresh.';

CREATE OR REPLACE FUNCTION agent.mcp_call(server_id bigint, tool text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m
   WHERE m.id = mcp_call.server_id AND agent._workspace_ok(m.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_call.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF tool IS NULL OR tool = '' THEN
    RAISE EXCEPTION 'tool name is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF arguments IS NOT NULL AND jsonb_typeof(arguments) <> 'object' THEN
    RAISE EXCEPTION 'arguments of MCP tool "%" must be a JSON object', tool
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  r := agent._mcp_call(s.id, s.url, s.headers, tool, coalesce(arguments, '{}'));
  IF (r->>'ok')::boolean THEN
    RETURN r->'result';
  END IF;
  IF r ? 'rpc_error' THEN
    RETURN agent._mcp_failed_result(r->>'error', r->'rpc_error');
  END IF;
  RAISE EXCEPTION 'could not call MCP tool "%" on server "%"', tool, s.name
    USING ERRCODE = 'connection_failure', DETAIL = r->>'error';
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_call(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_call(bigint, text, jsonb) IS
  'Admin and testing: one tools/call from this backend. Returns the CallToolResult (isError true for a failed tool or a JSON-RPC error); raises connection_failure when the server cannot be reached.';

CREATE FUNCTION agent._mcp_run_user(p_run_id bigint) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE WHEN r.regime = 'manual' THEN r.requested_by ELSE a.owner_id END
    FROM agent.runs r JOIN agent.agents a ON a.id = r.agent_id
   WHERE r.id = p_run_id
$$;
REVOKE ALL ON FUNCTION agent._mcp_run_user(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_run_user(bigint) IS
  'Internal: whose personal MCP servers serve the run: its requester for a manual run, the agent''s owner for an autonomous one.';

CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint, user_id text)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT t.exposed_name, s.id, s.name, t.name, t.description, t.input_schema,
         t.needs_approval OR agent._mcp_match(t.exposed_name, a.scope->'needs_approval'),
         coalesce((t.annotations->>'readOnlyHint')::boolean, false)
    FROM agent.agents a
    JOIN agent.mcp_servers s ON s.workspace_id = a.workspace_id
                            AND (s.scope = 'workspace'
                                 OR (s.scope = 'user' AND s.owner_id = mcp_agent_tools.user_id))
    JOIN agent.mcp_tools t ON t.server_id = s.id
   WHERE a.id = mcp_agent_tools.agent_id AND a.deleted_at IS NULL AND s.enabled
     AND (agent._mcp_match(s.name, a.scope->'mcp_servers')
          OR agent._mcp_match(t.exposed_name, a.scope->'mcp_tools'))
   ORDER BY t.exposed_name
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_tools(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_tools(bigint, text) IS
  'MCP tools an agent may use in a run of user_id: enabled servers of its workspace and user_id''s own personal ones (none when NULL), filtered by the agent''s scope (mcp_servers: server names or patterns; mcp_tools: exposed names or patterns; none by default). needs_approval is the tool''s flag or a match in scope.needs_approval (names or * patterns). The worker passes agent._mcp_run_user(run).';

CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT * FROM agent.mcp_agent_tools(mcp_agent_tools.agent_id,
                                      (SELECT a.owner_id FROM agent.agents a WHERE a.id = mcp_agent_tools.agent_id))
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_tools(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_tools(bigint) IS
  'MCP tools of the agent''s autonomous runs: agent.mcp_agent_tools(agent_id, <its owner>) (the workspace servers and its owner''s personal ones).';

CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb, user_id text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
BEGIN
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
REVOKE ALL ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb, text) IS
  'Worker entry point: calls an MCP tool by its exposed name for an agent in a run of user_id (checked against agent.mcp_agent_tools(agent_id, user_id)); returns {"ok", "server", "tool", "result": CallToolResult, "error"?}; a refused, failed or unreachable call is a failed result, never an exception.';

CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT agent.mcp_agent_call(mcp_agent_call.agent_id, mcp_agent_call.exposed_name, mcp_agent_call.arguments,
                              (SELECT a.owner_id FROM agent.agents a WHERE a.id = mcp_agent_call.agent_id))
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb) IS
  'agent.mcp_agent_call(agent_id, exposed_name, arguments, <its owner>): a call as in the agent''s autonomous runs.';

CREATE OR REPLACE VIEW agent.mcp_status WITH (security_barrier) AS
  SELECT s.id AS server_id, s.workspace_id, s.scope, s.owner_id, s.name, s.url, s.description,
         s.enabled,
         (s.enabled AND s.last_error IS NULL AND s.tools_refreshed_at IS NOT NULL) AS connected,
         (SELECT count(*) FROM agent.mcp_tools t WHERE t.server_id = s.id)::integer AS tool_count,
         s.last_error, s.tools_refreshed_at, s.protocol_version, s.server_info
    FROM agent.mcp_servers s
   WHERE s.workspace_id = nullif(pg_catalog.current_setting('pg_agents.workspace', true), '')
      OR (nullif(pg_catalog.current_setting('pg_agents.workspace', true), '') IS NULL
          AND pg_catalog.current_setting('is_superuser') = 'on');
REVOKE ALL ON agent.mcp_status FROM PUBLIC;
COMMENT ON VIEW agent.mcp_status IS 'MCP servers without their headers: configured, connected, tool count, last error; the session''s workspace (pg_agents.workspace) only; every workspace for a superuser session that sets none.';
COMMENT ON COLUMN agent.mcp_status.server_id IS 'Server id.';
COMMENT ON COLUMN agent.mcp_status.workspace_id IS 'Workspace of the server.';
COMMENT ON COLUMN agent.mcp_status.scope IS 'workspace or user.';
COMMENT ON COLUMN agent.mcp_status.owner_id IS 'Owner of a personal server.';
COMMENT ON COLUMN agent.mcp_status.name IS 'Server name.';
COMMENT ON COLUMN agent.mcp_status.url IS 'Endpoint URL.';
COMMENT ON COLUMN agent.mcp_status.description IS 'Description.';
COMMENT ON COLUMN agent.mcp_status.enabled IS 'Whether the server is enabled.';
COMMENT ON COLUMN agent.mcp_status.connected IS 'Enabled, refreshed, and the last refresh succeeded.';
COMMENT ON COLUMN agent.mcp_status.tool_count IS 'Tools listed at the last successful refresh.';
COMMENT ON COLUMN agent.mcp_status.last_error IS 'Error of the last refresh.';
COMMENT ON COLUMN agent.mcp_status.tools_refreshed_at IS 'Last successful refresh.';
COMMENT ON COLUMN agent.mcp_status.protocol_version IS 'Negotiated MCP protocol version.';
COMMENT ON COLUMN agent.mcp_status.server_info IS 'serverInfo reported by the server.';

CREATE OR REPLACE FUNCTION agent.mcp_status(workspace_id text DEFAULT agent.current_workspace(),
                                 owner_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH w AS (SELECT agent._session_workspace() AS ws),
  s AS (
    SELECT m.*, (m.enabled AND m.last_error IS NULL AND m.tools_refreshed_at IS NOT NULL) AS connected
      FROM agent.mcp_servers m, w
     WHERE m.workspace_id = mcp_status.workspace_id
       AND (w.ws IS NULL OR m.workspace_id = w.ws)
       AND (m.scope = 'workspace' OR m.owner_id = mcp_status.owner_id)
  )
  SELECT jsonb_build_object(
    'configuredServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.enabled),
    'connectedServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.connected),
    'totalTools', (SELECT count(*) FROM s JOIN agent.mcp_tools t ON t.server_id = s.id WHERE s.connected),
    'tools', (SELECT coalesce(jsonb_agg(jsonb_build_object('source', s.name, 'name', t.exposed_name,
                                                           'description', t.description)
                                        ORDER BY t.exposed_name), '[]')
                FROM s JOIN agent.mcp_tools t ON t.server_id = s.id WHERE s.connected),
    'errors', (SELECT coalesce(jsonb_object_agg(s.name, s.last_error), '{}')
                 FROM s WHERE s.enabled AND s.last_error IS NOT NULL))
$$;
REVOKE ALL ON FUNCTION agent.mcp_status(text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_status(text, text) IS
  'MCP client status of a workspace (and of one user''s personal servers), shaped like /mcp/status: configuredServers, connectedServers, totalTools, tools [{source, name, description}], errors {server: error}. Only the session''s workspace (pg_agents.workspace): another workspace is reported empty, as if it had no server; a superuser session that sets none may name any.';


-- ---- sql/upgrade/0.2.0--0.3.0/700_mcp_protocol.sql ----
-- mcp branch (0.2.0 -> 0.3.0): the MCP protocol work of 0.3.0 in SQL: OAuth 2.1
-- for remote servers and elicitation through people.  Every object here is
-- new; the same definitions as sql/src/705_mcp_oauth.sql and
-- sql/src/706_mcp_elicitation.sql and sql/src/707_mcp_refresh.sql (keep them
-- identical).

CREATE FUNCTION agent._mcp_oauth_begin(url text, config jsonb, state jsonb) RETURNS jsonb
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_oauth_begin';
COMMENT ON FUNCTION agent._mcp_oauth_begin(text, jsonb, jsonb) IS
  'Internal: discovery, client registration and the authorization URL (or the client-credentials tokens) for an MCP server; returns {"ok", "state", "authorization_url"?, "oauth_state"?, "authorized"?, "expires_at"?} or {"ok": false, "error"}.';

CREATE FUNCTION agent._mcp_oauth_complete(config jsonb, state jsonb, code text, oauth_state text, iss text)
RETURNS jsonb
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_oauth_complete';
COMMENT ON FUNCTION agent._mcp_oauth_complete(jsonb, jsonb, text, text, text) IS
  'Internal: checks the authorization response (state, RFC 9207 iss) and exchanges the code (PKCE) for tokens.';

CREATE FUNCTION agent._mcp_oauth_refresh(config jsonb, state jsonb) RETURNS jsonb
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_oauth_refresh';
COMMENT ON FUNCTION agent._mcp_oauth_refresh(jsonb, jsonb) IS
  'Internal: new tokens from the refresh token (or the client credentials again).';

CREATE TABLE agent.mcp_oauth (
    server_id       bigint PRIMARY KEY,
    workspace_id    text NOT NULL,
    config          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
    state           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(state) = 'object'),
    status          text NOT NULL DEFAULT 'unauthorized'
                    CHECK (status IN ('unauthorized', 'pending', 'authorized', 'lapsed')),
    pending_state   text UNIQUE,
    pending_by_user text,
    pending_at      timestamptz,
    authorized_by   text,
    authorized_at   timestamptz,
    expires_at      timestamptz,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, server_id) REFERENCES agent.mcp_servers (workspace_id, id) ON DELETE CASCADE
);
REVOKE ALL ON agent.mcp_oauth FROM PUBLIC;
COMMENT ON TABLE agent.mcp_oauth IS 'OAuth 2.1 configuration and state of MCP servers: client credentials, tokens, pending authorizations; secrets, readable by superusers only (others read agent.mcp_oauth_status).';
COMMENT ON COLUMN agent.mcp_oauth.server_id IS 'The MCP server.';
COMMENT ON COLUMN agent.mcp_oauth.workspace_id IS 'Workspace of the server.';
COMMENT ON COLUMN agent.mcp_oauth.config IS 'Client settings: client_id, client_secret, client_metadata_url, scope, grant (authorization_code or client_credentials), private_key_pem, signing_alg, auth_method; secret.';
COMMENT ON COLUMN agent.mcp_oauth.state IS 'What the client learnt and obtained: metadata, registration, access and refresh tokens, the pending state and PKCE verifier; secret.';
COMMENT ON COLUMN agent.mcp_oauth.status IS 'unauthorized, pending (an authorization URL was handed out), authorized, or lapsed (expired and not renewable: authorize again).';
COMMENT ON COLUMN agent.mcp_oauth.pending_state IS 'OAuth state parameter of the pending authorization (unguessable, single use).';
COMMENT ON COLUMN agent.mcp_oauth.pending_by_user IS 'User who asked for the pending authorization.';
COMMENT ON COLUMN agent.mcp_oauth.pending_at IS 'When the pending authorization was asked for; it expires after pg_agents.approval_ttl.';
COMMENT ON COLUMN agent.mcp_oauth.authorized_by IS 'User whose consent obtained the tokens (or the caller of a client-credentials authorization).';
COMMENT ON COLUMN agent.mcp_oauth.authorized_at IS 'When the tokens were obtained.';
COMMENT ON COLUMN agent.mcp_oauth.expires_at IS 'When the access token expires (NULL when the authorization server did not say).';
COMMENT ON COLUMN agent.mcp_oauth.last_error IS 'Error of the last authorization or refresh.';
COMMENT ON COLUMN agent.mcp_oauth.updated_at IS 'Last change.';

CREATE VIEW agent.mcp_oauth_status WITH (security_barrier) AS
  SELECT o.server_id, o.workspace_id, s.name, o.status, o.config->>'grant' AS grant_type,
         o.authorized_by, o.authorized_at, o.expires_at, o.last_error
    FROM agent.mcp_oauth o JOIN agent.mcp_servers s ON s.id = o.server_id
   WHERE o.workspace_id = pg_catalog.current_setting('pg_agents.workspace', true)
      OR pg_catalog.current_setting('is_superuser') = 'on';
COMMENT ON VIEW agent.mcp_oauth_status IS 'OAuth state of the MCP servers of the session''s workspace (pg_agents.workspace; every workspace for a superuser), without any secret: status, who authorized and when, expiry, last error.';
COMMENT ON COLUMN agent.mcp_oauth_status.server_id IS 'The MCP server.';
COMMENT ON COLUMN agent.mcp_oauth_status.workspace_id IS 'Workspace of the server.';
COMMENT ON COLUMN agent.mcp_oauth_status.name IS 'Server name.';
COMMENT ON COLUMN agent.mcp_oauth_status.status IS 'unauthorized, pending, authorized or lapsed.';
COMMENT ON COLUMN agent.mcp_oauth_status.grant_type IS 'client_credentials, or NULL for the authorization code grant.';
COMMENT ON COLUMN agent.mcp_oauth_status.authorized_by IS 'User whose consent obtained the tokens.';
COMMENT ON COLUMN agent.mcp_oauth_status.authorized_at IS 'When the tokens were obtained.';
COMMENT ON COLUMN agent.mcp_oauth_status.expires_at IS 'When the access token expires.';
COMMENT ON COLUMN agent.mcp_oauth_status.last_error IS 'Error of the last authorization or refresh.';

-- The access token as the server's Authorization header (NULL: removed).
CREATE FUNCTION agent._mcp_oauth_apply(p_server_id bigint, p_token text) RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
  UPDATE agent.mcp_servers m
     SET headers = CASE WHEN p_token IS NULL THEN m.headers - 'Authorization'
                        ELSE m.headers || pg_catalog.jsonb_build_object('Authorization', 'Bearer ' || p_token) END
   WHERE m.id = p_server_id
$$;
COMMENT ON FUNCTION agent._mcp_oauth_apply(bigint, text) IS
  'Internal: sets (or with NULL removes) the bearer token of an OAuth server in its headers.';

CREATE FUNCTION agent.mcp_set_oauth(server_id bigint, config jsonb DEFAULT '{}') RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  k text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = mcp_set_oauth.server_id;
  IF NOT FOUND OR NOT agent._workspace_ok(s.workspace_id) THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_set_oauth.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF config IS NULL OR pg_catalog.jsonb_typeof(config) <> 'object' THEN
    RAISE EXCEPTION 'OAuth configuration must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k IN SELECT pg_catalog.jsonb_object_keys(config) LOOP
    IF NOT k = ANY (ARRAY['client_id', 'client_secret', 'client_metadata_url', 'scope', 'grant',
                          'private_key_pem', 'signing_alg', 'auth_method']) THEN
      RAISE EXCEPTION 'unknown OAuth setting "%"', k
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'The settings are client_id, client_secret, client_metadata_url, scope, grant, private_key_pem, signing_alg and auth_method.';
    END IF;
    IF pg_catalog.jsonb_typeof(config->k) <> 'string' THEN
      RAISE EXCEPTION 'OAuth setting "%" must be a string', k USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;
  IF config->>'grant' IS NOT NULL AND NOT (config->>'grant' IN ('authorization_code', 'client_credentials')) THEN
    RAISE EXCEPTION 'OAuth grant must be authorization_code or client_credentials' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF config->>'grant' = 'client_credentials' AND config->>'client_id' IS NULL THEN
    RAISE EXCEPTION 'the client credentials grant needs a client_id' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO agent.mcp_oauth AS o (server_id, workspace_id, config)
  VALUES (s.id, s.workspace_id, config)
  ON CONFLICT ON CONSTRAINT mcp_oauth_pkey DO UPDATE
     SET config = EXCLUDED.config, state = '{}', status = 'unauthorized', pending_state = NULL,
         pending_by_user = NULL, pending_at = NULL, expires_at = NULL, last_error = NULL, updated_at = now();
  PERFORM agent._mcp_oauth_apply(s.id, NULL);
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) IS
  'Admin: makes an MCP server use OAuth 2.1, with optional client settings (a pre-registered client_id and client_secret, a client ID metadata document URL, a scope, the client_credentials grant with a secret or a private key for machine-to-machine servers); forgets any previous tokens. Then agent.mcp_authorize.';

CREATE FUNCTION agent.mcp_authorize(server_id bigint, by_user text, redirect_uri text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_problem text;
BEGIN
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
  SELECT * INTO o FROM agent.mcp_oauth m WHERE m.server_id = s.id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server "%" does not use OAuth', s.name
      USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Configure it with agent.mcp_set_oauth first.';
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
REVOKE ALL ON FUNCTION agent.mcp_authorize(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_authorize(bigint, text, text) IS
  'Application: starts the OAuth authorization of an MCP server of the session''s workspace for by_user (taken on trust; a personal server by its owner only): returns the authorization URL to send the user to, whose redirect to redirect_uri the application hands to agent.mcp_authorization_callback. For the client credentials grant it authorizes at once and returns NULL.';

CREATE FUNCTION agent.mcp_authorization_callback(state text, code text, iss text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_name text;
BEGIN
  IF state IS NULL OR state = '' THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO o FROM agent.mcp_oauth m WHERE m.pending_state = mcp_authorization_callback.state FOR UPDATE;
  IF NOT FOUND OR NOT agent._workspace_ok(o.workspace_id)
     OR o.pending_at < now() - pg_catalog.current_setting('pg_agents.approval_ttl')::interval THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
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
REVOKE ALL ON FUNCTION agent.mcp_authorization_callback(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_authorization_callback(text, text, text) IS
  'Application, from its OAuth redirect handler: completes the pending authorization named by state (single use, expires after pg_agents.approval_ttl) with the code and the iss of the redirect, then refreshes the server''s tools. Returns true when authorized; false (with a warning giving the reason) when the authorization server refused, the iss did not match or the code was wrong.';

CREATE FUNCTION agent.mcp_oauth_refresh_due(margin interval DEFAULT '5 minutes') RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  n integer := 0;
BEGIN
  FOR o IN SELECT * FROM agent.mcp_oauth m
            WHERE m.status = 'authorized' AND m.expires_at IS NOT NULL AND m.expires_at < now() + margin
              AND agent._workspace_ok(m.workspace_id)
            ORDER BY m.server_id FOR UPDATE SKIP LOCKED LOOP
    IF o.state ? 'refresh_token' OR o.config->>'grant' = 'client_credentials' THEN
      r := agent._mcp_oauth_refresh(o.config, o.state);
    ELSE
      r := pg_catalog.jsonb_build_object('ok', false, 'error', 'the access token expired and there is no refresh token');
    END IF;
    IF (r->>'ok')::boolean THEN
      UPDATE agent.mcp_oauth m
         SET state = r->'state', expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision),
             last_error = NULL, updated_at = now()
       WHERE m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, r->'state'->>'access_token');
      n := n + 1;
    ELSIF o.expires_at <= now() OR NOT (o.state ? 'refresh_token') THEN
      -- lapsed: the server's tools fail with a clear error, others go on
      UPDATE agent.mcp_oauth m
         SET status = 'lapsed', last_error = r->>'error', state = m.state - 'access_token' - 'refresh_token',
             updated_at = now()
       WHERE m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, NULL);
      UPDATE agent.mcp_servers m
         SET last_error = 'authorization lapsed: ' || (r->>'error') || '; authorize again with agent.mcp_authorize'
       WHERE m.id = o.server_id;
    ELSE
      UPDATE agent.mcp_oauth m SET last_error = r->>'error', updated_at = now() WHERE m.server_id = o.server_id;
    END IF;
  END LOOP;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_oauth_refresh_due(interval) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_oauth_refresh_due(interval) IS
  'Worker and admin: renews the OAuth tokens that expire within margin (refresh token, or client credentials again); an authorization that cannot be renewed and has expired is marked lapsed, its bearer header removed and the server''s last_error set. Returns how many were renewed.';

-- ---- elicitation (sql/src/706_mcp_elicitation.sql) ----

CREATE FUNCTION agent._mcp_call_input(server_id bigint, url text, headers jsonb, tool text, arguments jsonb,
                                      input_responses jsonb, request_state text)
RETURNS jsonb
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_call_input';
COMMENT ON FUNCTION agent._mcp_call_input(bigint, text, jsonb, text, jsonb, jsonb, text) IS
  'Internal: one tools/call that may come back input_required: {"ok": true, "result"}, {"ok": false, "input_required": true, "input_requests", "request_state"} or {"ok": false, "error", "rpc_error"?}; never raises for a remote failure.';

CREATE TABLE agent.mcp_elicitations (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id   text NOT NULL,
    run_id         bigint NOT NULL REFERENCES agent.runs (id) ON DELETE CASCADE,
    approval_key   text NOT NULL,
    server_id      bigint,
    exposed_name   text NOT NULL,
    input_requests jsonb NOT NULL CHECK (jsonb_typeof(input_requests) = 'object'),
    request_state  text,
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'consumed')),
    response       jsonb,
    answered_by    text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    answered_at    timestamptz
);
CREATE INDEX mcp_elicitations_run_idx ON agent.mcp_elicitations (run_id, approval_key);
REVOKE ALL ON agent.mcp_elicitations FROM PUBLIC;
COMMENT ON TABLE agent.mcp_elicitations IS 'Input an MCP server asked for during a run''s tool call, and the answer people gave; the application reads agent.mcp_pending_input.';
COMMENT ON COLUMN agent.mcp_elicitations.id IS 'Elicitation id.';
COMMENT ON COLUMN agent.mcp_elicitations.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.mcp_elicitations.run_id IS 'The waiting run.';
COMMENT ON COLUMN agent.mcp_elicitations.approval_key IS 'Key of the pending approval the run waits on (agent.approval_key of the call): what agent.answer_elicitation is given.';
COMMENT ON COLUMN agent.mcp_elicitations.server_id IS 'The MCP server that asked.';
COMMENT ON COLUMN agent.mcp_elicitations.exposed_name IS 'The tool called (mcp__<server>__<tool>).';
COMMENT ON COLUMN agent.mcp_elicitations.input_requests IS 'The server''s inputRequests: {key: {"method": "elicitation/create", "params": {"message", "requestedSchema"}}}.';
COMMENT ON COLUMN agent.mcp_elicitations.request_state IS 'The server''s requestState, echoed unchanged with the answer.';
COMMENT ON COLUMN agent.mcp_elicitations.status IS 'pending, answered, or consumed (sent to the server).';
COMMENT ON COLUMN agent.mcp_elicitations.response IS 'The answers, {key: ElicitResult}, defaults applied.';
COMMENT ON COLUMN agent.mcp_elicitations.answered_by IS 'Who answered.';
COMMENT ON COLUMN agent.mcp_elicitations.created_at IS 'When the server asked.';
COMMENT ON COLUMN agent.mcp_elicitations.expires_at IS 'When the question expires with its approval (pg_agents.approval_ttl).';
COMMENT ON COLUMN agent.mcp_elicitations.answered_at IS 'When it was answered.';

CREATE VIEW agent.mcp_pending_input WITH (security_barrier) AS
  SELECT e.approval_key, e.run_id, e.workspace_id, e.exposed_name, r.key AS input_key,
         r.value->'params'->>'message' AS message, r.value->'params'->'requestedSchema' AS requested_schema,
         e.created_at, e.expires_at
    FROM agent.mcp_elicitations e, pg_catalog.jsonb_each(e.input_requests) r
   WHERE e.status = 'pending' AND e.expires_at > pg_catalog.now()
     AND EXISTS (SELECT 1 FROM agent.runs x WHERE x.id = e.run_id AND x.status = 'waiting_approval')
     AND (e.workspace_id = pg_catalog.current_setting('pg_agents.workspace', true)
          OR pg_catalog.current_setting('is_superuser') = 'on');
COMMENT ON VIEW agent.mcp_pending_input IS 'Questions MCP servers are waiting on, of the session''s workspace: the form to show a person (message, requested JSON schema), the approval key to answer with.';
COMMENT ON COLUMN agent.mcp_pending_input.approval_key IS 'What agent.answer_elicitation is given.';
COMMENT ON COLUMN agent.mcp_pending_input.run_id IS 'The waiting run.';
COMMENT ON COLUMN agent.mcp_pending_input.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.mcp_pending_input.exposed_name IS 'The tool being called.';
COMMENT ON COLUMN agent.mcp_pending_input.input_key IS 'Key of the question among the server''s inputRequests.';
COMMENT ON COLUMN agent.mcp_pending_input.message IS 'The server''s question.';
COMMENT ON COLUMN agent.mcp_pending_input.requested_schema IS 'JSON schema of the expected answer (with defaults).';
COMMENT ON COLUMN agent.mcp_pending_input.created_at IS 'When the server asked.';
COMMENT ON COLUMN agent.mcp_pending_input.expires_at IS 'When the question (and the run) expires.';

-- One answer checked and completed: {"action", "content"?}, defaults of the
-- requested schema filled into an accepted content (SEP-1034).
CREATE FUNCTION agent._mcp_elicit_result(p_request jsonb, p_answer jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_content jsonb;
  k text;
  d jsonb;
BEGIN
  IF p_answer IS NULL OR pg_catalog.jsonb_typeof(p_answer) <> 'object'
     OR NOT coalesce(p_answer->>'action', '') IN ('accept', 'decline', 'cancel') THEN
    RAISE EXCEPTION 'an elicitation answer is {"action": "accept", "content": {...}}, {"action": "decline"} or {"action": "cancel"}'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_answer->>'action' <> 'accept' THEN
    RETURN pg_catalog.jsonb_build_object('action', p_answer->>'action');
  END IF;
  v_content := coalesce(p_answer->'content', '{}');
  IF pg_catalog.jsonb_typeof(v_content) <> 'object' THEN
    RAISE EXCEPTION 'the content of an accepted elicitation must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, d IN SELECT p.key, p.value->'default'
                FROM pg_catalog.jsonb_each(coalesce(p_request->'params'->'requestedSchema'->'properties', '{}')) p
               WHERE p.value ? 'default' LOOP
    IF NOT v_content ? k THEN
      v_content := v_content || pg_catalog.jsonb_build_object(k, d);
    END IF;
  END LOOP;
  RETURN pg_catalog.jsonb_build_object('action', 'accept', 'content', v_content);
END
$$;
COMMENT ON FUNCTION agent._mcp_elicit_result(jsonb, jsonb) IS
  'Internal: checks an elicitation answer and fills the requested schema''s defaults into an accepted content (SEP-1034).';

CREATE OR REPLACE FUNCTION agent.mcp_agent_call_input(agent_id bigint, run_id bigint, exposed_name text,
                                           arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  e agent.mcp_elicitations%ROWTYPE;
  r jsonb;
  v_key text;
  v_ws text;
BEGIN
  SELECT m.server_id, m.tool INTO v_server_id, v_tool
    FROM agent.mcp_agent_tools(mcp_agent_call_input.agent_id, agent._mcp_run_user(mcp_agent_call_input.run_id)) m
   WHERE m.exposed_name = mcp_agent_call_input.exposed_name;
  IF v_server_id IS NULL THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));   -- the refusal, as there
  END IF;
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = v_server_id;
  -- only the stateless generation asks its questions this way: any other
  -- server goes the usual way, with the session kept per server and process
  IF s.protocol_version IS DISTINCT FROM '2026-07-28' THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));
  END IF;
  IF arguments IS NULL OR pg_catalog.jsonb_typeof(arguments) <> 'object' THEN
    arguments := '{}';
  END IF;
  v_key := agent.approval_key(exposed_name, arguments);
  -- an answered question of this run for this very call: send it
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.run_id = mcp_agent_call_input.run_id AND x.approval_key = v_key AND x.status = 'answered'
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF FOUND THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.id = e.id;
    PERFORM agent.consume_approval(run_id, exposed_name, arguments);
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, e.response, e.request_state);
  ELSE
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, NULL, NULL);
  END IF;
  IF coalesce((r->>'input_required')::boolean, false) THEN
    IF pg_catalog.jsonb_typeof(r->'input_requests') IS DISTINCT FROM 'object' THEN
      RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                           'result', agent._mcp_failed_result(r->>'error'));
    END IF;
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = mcp_agent_call_input.run_id;
    v_key := agent.request_approval(run_id, exposed_name, arguments);
    INSERT INTO agent.mcp_elicitations (workspace_id, run_id, approval_key, server_id, exposed_name,
                                        input_requests, request_state, expires_at)
    VALUES (v_ws, run_id, v_key, s.id, exposed_name, r->'input_requests', r->>'request_state',
            now() + pg_catalog.current_setting('pg_agents.approval_ttl')::interval);
    RETURN pg_catalog.jsonb_build_object('ok', false, 'paused', true, 'server', s.name, 'tool', v_tool,
                                         'approval_key', v_key,
                                         'questions', (SELECT pg_catalog.jsonb_agg(q.value->'params'->>'message')
                                                         FROM pg_catalog.jsonb_each(r->'input_requests') q));
  END IF;
  IF (r->>'ok')::boolean THEN
    RETURN pg_catalog.jsonb_build_object('ok', NOT coalesce((r->'result'->>'isError')::boolean, false),
                                         'server', s.name, 'tool', v_tool, 'result', r->'result');
  END IF;
  RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                       'result', agent._mcp_failed_result(r->>'error', r->'rpc_error'));
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) IS
  'Worker entry point: agent.mcp_agent_call for a run, where a 2026-07-28 server (as recorded at its last refresh; any other goes to agent.mcp_agent_call) asking for input pauses the run: the question is stored (agent.mcp_elicitations), a pending approval of the call opened, {"ok": false, "paused": true, "approval_key"} returned; once answered (agent.answer_elicitation) the same call sends the answer with the server''s requestState.';

CREATE FUNCTION agent.answer_elicitation(key text, response jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_answers jsonb := '{}';
  v_one boolean;
  k text;
  q jsonb;
BEGIN
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.approval_key = answer_elicitation.key AND x.status = 'pending' AND x.expires_at > now()
     AND agent._workspace_ok(x.workspace_id)
     AND EXISTS (SELECT 1 FROM agent.runs r WHERE r.id = x.run_id AND r.status = 'waiting_approval')
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
   WHERE x.id = e.id;
  -- the run resumes like on an approval (edit level on the agent required)
  RETURN agent.approve(e.approval_key, by_user, e.run_id);
END
$$;
REVOKE ALL ON FUNCTION agent.answer_elicitation(text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.answer_elicitation(text, jsonb, text) IS
  'Answers the question an MCP server asked during a run''s tool call (key: the approval key shown in agent.mcp_pending_input) for by_user, who must be allowed to approve the run''s calls: {"action": "accept", "content": {...}} (the form''s defaults filled in), {"action": "decline"} or {"action": "cancel"}; several questions are answered as {input key: answer}. The run resumes and the server gets the answer. Returns the run id.';

-- ---- periodic refresh (sql/src/707_mcp_refresh.sql) ----

CREATE FUNCTION agent.mcp_refresh_due(max_age interval DEFAULT '1 hour', max_servers integer DEFAULT 5)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
  n integer := 0;
BEGIN
  IF max_age IS NULL OR max_age < interval '1 minute' THEN
    RAISE EXCEPTION 'max_age must be at least one minute' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR v_id IN SELECT s.id FROM agent.mcp_servers s
               WHERE s.enabled AND s.last_error IS NULL AND s.tools_refreshed_at < now() - max_age
                 AND agent._workspace_ok(s.workspace_id)
               ORDER BY s.tools_refreshed_at, s.id
               LIMIT greatest(coalesce(max_servers, 5), 1) LOOP
    PERFORM agent.mcp_refresh(v_id);
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh_due(interval, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh_due(interval, integer) IS
  'Worker and admin: lists again the tools of at most max_servers enabled servers whose last successful refresh is older than max_age (a failed one is left to the admin); returns how many were refreshed.';

-- ---- sql/upgrade/0.2.0--0.3.0/800_tenants.sql ----
-- ===========================================================================
-- Tenants, part 3 (branch tenants): the workspace boundary on the API paths
-- of activity, insights, drafts, teams, duplicate and delegation; delegation
-- lists of one workspace; workspace_shared of the agent's own workspace
-- (src/access.c, no SQL); delegation attachments checked against the
-- child's access.  docs/tenants.md.
-- ===========================================================================

-- ---------------------------------------------------------------------------
-- sql/src/100_access.sql
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION agent._check_delegation(p_agent_id bigint, p_delegation jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_bad text;
BEGIN
  SELECT e #>> '{}' INTO v_bad
    FROM agent.agents a, jsonb_array_elements(p_delegation) e
   WHERE a.id = p_agent_id
     AND NOT EXISTS (SELECT 1 FROM agent.agents d
                      WHERE d.id = CASE WHEN (e #>> '{}') ~ '^[0-9]{1,18}$' THEN (e #>> '{}')::bigint END
                        AND d.workspace_id = a.workspace_id
                        AND (d.deleted_at IS NULL
                             OR EXISTS (SELECT 1 FROM jsonb_array_elements(a.delegation) o
                                         WHERE (o #>> '{}') = (e #>> '{}'))))
   LIMIT 1;
  IF v_bad IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', v_bad
      USING ERRCODE = 'undefined_object',
            DETAIL = 'A delegation list names only agents of the delegating agent''s own workspace.';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._check_delegation(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._check_delegation(bigint, jsonb) IS
  'Internal: refuses (42704, as an unknown agent) a delegation list naming anything but agents of the delegating agent''s workspace (not deleted, unless already listed).';

CREATE OR REPLACE FUNCTION agent._apply_settings(p_agent_id bigint, p_settings jsonb, p_by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s jsonb := p_settings;
BEGIN
  IF s ? 'delegation' THEN
    PERFORM agent._check_delegation(p_agent_id, s -> 'delegation');
  END IF;
  UPDATE agent.agents a SET
    name                 = CASE WHEN s ? 'name' THEN btrim(s ->> 'name') ELSE a.name END,
    instructions         = CASE WHEN s ? 'instructions' THEN s ->> 'instructions' ELSE a.instructions END,
    instruction_page_id  = CASE WHEN s ? 'instruction_page_id' THEN s ->> 'instruction_page_id' ELSE a.instruction_page_id END,
    model                = CASE WHEN s ? 'model' THEN s ->> 'model' ELSE a.model END,
    approval_mode        = CASE WHEN s ? 'approval_mode' THEN s ->> 'approval_mode' ELSE a.approval_mode END,
    scope                = CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END,
    web_access           = CASE WHEN s ? 'web_access' THEN (s ->> 'web_access')::boolean ELSE a.web_access END,
    delegation           = CASE WHEN s ? 'delegation' THEN s -> 'delegation' ELSE a.delegation END,
    max_iterations       = CASE WHEN s ? 'max_iterations' THEN (s ->> 'max_iterations')::integer ELSE a.max_iterations END,
    hourly_run_cap       = CASE WHEN s ? 'hourly_run_cap' THEN (s ->> 'hourly_run_cap')::integer ELSE a.hourly_run_cap END,
    credit_limit_monthly = CASE WHEN s ? 'credit_limit_monthly' THEN (s ->> 'credit_limit_monthly')::integer ELSE a.credit_limit_monthly END,
    default_token_budget = CASE WHEN s ? 'default_token_budget' THEN (s ->> 'default_token_budget')::bigint ELSE a.default_token_budget END,
    updated_at           = now()
  WHERE a.id = p_agent_id;
  IF s ? 'access' THEN
    DELETE FROM agent.access g
     WHERE g.agent_id = p_agent_id
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(s -> 'access') e
                        WHERE e ->> 'resource_type' = g.resource_type AND e ->> 'resource_id' = g.resource_id);
    INSERT INTO agent.access AS g (workspace_id, agent_id, resource_type, resource_id, access, granted_by)
    SELECT DISTINCT ON (e ->> 'resource_type', e ->> 'resource_id')
           a.workspace_id, p_agent_id, e ->> 'resource_type', e ->> 'resource_id',
           coalesce(e ->> 'access', 'read'), p_by_user
      FROM agent.agents a, jsonb_array_elements(s -> 'access') WITH ORDINALITY AS x(e, n)
     WHERE a.id = p_agent_id
     ORDER BY e ->> 'resource_type', e ->> 'resource_id', n DESC
    ON CONFLICT (agent_id, resource_type, resource_id) DO UPDATE
      SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = now()
      WHERE g.access IS DISTINCT FROM EXCLUDED.access;
  END IF;
END
$$;
COMMENT ON FUNCTION agent._apply_settings(bigint, jsonb, text) IS
  'Internal: writes checked settings to the agent; an "access" list replaces its grants; a "delegation" list may name only agents of the agent''s workspace (agent._check_delegation).';

CREATE OR REPLACE FUNCTION agent._user_reads(p_agent_id bigint, p_user text, p_type text, p_id text, p_mode text DEFAULT 'read')
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE
    WHEN p_type = 'workspace_shared' THEN true
    WHEN p_type = 'agent' THEN
      CASE WHEN p_id !~ '^[0-9]{1,18}$' THEN false
           -- an agent of another workspace is no agent the user can reach here
           WHEN NOT EXISTS (SELECT 1 FROM agent.agents t JOIN agent.agents s ON s.id = p_agent_id
                             WHERE t.id = p_id::bigint AND t.workspace_id = s.workspace_id) THEN false
           ELSE agent._level_rank(agent._user_level(p_user, p_id::bigint)) >= CASE p_mode WHEN 'edit' THEN 2 ELSE 1 END
      END
    ELSE agent.can_access(p_agent_id, p_type, p_id, p_mode, 'manual', p_user)
  END
$$;
COMMENT ON FUNCTION agent._user_reads(bigint, text, text, text, text) IS
  'Internal: does the user''s own access reach the resource (agents: their share level, on agents of the same workspace only; other resources: their ACL)?';

CREATE OR REPLACE FUNCTION agent._duplicate(p_agent_id bigint, by_user text, OUT new_agent_id bigint, OUT report jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
BEGIN
  a := agent._agent_named(p_agent_id, by_user, 'duplicate');
  SELECT max(v.version) INTO v_srcver FROM agent.versions v WHERE v.agent_id = a.id;

  -- the instruction page is kept only when by_user can read it
  v_page := a.instruction_page_id;
  IF v_page IS NOT NULL AND NOT agent._user_reads(a.id, by_user, 'page', v_page) THEN
    v_dropped := v_dropped || jsonb_build_object('kind', 'instruction_page', 'resource_type', 'page',
                                                 'resource_id', v_page, 'reason', 'no_read_access');
    v_page := NULL;
  END IF;
  -- delegable agents: only those of the same workspace by_user can see
  FOR d IN SELECT x FROM jsonb_array_elements(a.delegation) x LOOP
    IF (d #>> '{}') ~ '^[0-9]{1,18}$'
       AND EXISTS (SELECT 1 FROM agent.agents x WHERE x.id = (d #>> '{}')::bigint AND x.workspace_id = a.workspace_id)
       AND agent._level_rank(agent._user_level(by_user, (d #>> '{}')::bigint)) >= 1 THEN
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
  FOR g IN SELECT * FROM agent.access x WHERE x.agent_id = a.id ORDER BY x.resource_type, x.resource_id LOOP
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
  FOR t IN SELECT * FROM agent.triggers x WHERE x.agent_id = a.id ORDER BY x.id LOOP
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
REVOKE ALL ON FUNCTION agent._duplicate(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._duplicate(bigint, text) IS
  'Internal: the body of agent.duplicate.';

CREATE OR REPLACE FUNCTION agent.duplicate(agent_id bigint, by_user text)
RETURNS TABLE(agent_id bigint, report jsonb)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT d.new_agent_id, d.report FROM agent._duplicate($1, $2) d $$;
REVOKE ALL ON FUNCTION agent.duplicate(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.duplicate(bigint, text) IS
  'Private copy owned by by_user (duplicate level; an agent of another workspace than the session''s is unknown, 42704): name suffixed " (copy)", instructions and model kept; grants, triggers (copied disabled), instruction page and delegation filtered by by_user''s own access; the report lists exactly what was dropped and why. Shares, tool connections (scope), limits and history are not copied.';


-- ---------------------------------------------------------------------------
-- sql/src/300_runs.sql
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION agent.delegate(parent_run_id bigint, child_agent_id bigint, task text,
                               attachments jsonb DEFAULT '[]', token_budget int DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT (agent._delegate($1, $2, $3, coalesce($4, '[]'::jsonb), $5, true) ->> 'child_run_id')::bigint
$$;
COMMENT ON FUNCTION agent.delegate(bigint, bigint, text, jsonb, int) IS
  'Queues a child run of a running run (of the session''s workspace: another workspace''s run is unknown, 42704) for an agent in the parent agent''s delegation list (active, same workspace): autonomous, origin delegation, depth + 1, input {task, attachments, parent_run_id} (an attachment naming a resource the child may not read is replaced by {resource_type, resource_id, withheld}), budget reserved from the parent''s envelope, audited. Refusals raise (depth 54000, cycle 42P19, budget 54000, unlisted 42501, ...). Writes no step on the parent (the caller records its tool step). Returns the child run id.';

CREATE OR REPLACE FUNCTION agent.try_delegate(parent_run_id bigint, child_agent_id bigint, task text,
                                   attachments jsonb DEFAULT '[]', token_budget int DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT agent._delegate($1, $2, $3, coalesce($4, '[]'::jsonb), $5, false)
$$;
COMMENT ON FUNCTION agent.try_delegate(bigint, bigint, text, jsonb, int) IS
  'Like agent.delegate, for executors, with the step bookkeeping: an accepted delegation gets a delegate step on the parent whose output becomes the child''s result when it ends; a refusal is returned ({"ok": false, "reason", "error", "detail", "sqlstate"}) instead of raised, and its denied audit row and denied step on the parent are kept. Success: {"ok": true, "child_run_id", "token_budget", "depth", "status"}.';

CREATE OR REPLACE FUNCTION agent.delegation_context(run_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  a       agent.agents%ROWTYPE;
  v_max   int := agent.delegation_depth_limit();
  v_chain bigint[];
  v_to    jsonb;
BEGIN
  SELECT * INTO r FROM agent.runs x WHERE x.id = delegation_context.run_id;
  -- a run of another workspace is an unknown run
  IF NOT agent._workspace_ok(r.workspace_id) OR r.id IS NULL THEN
    RAISE EXCEPTION 'run % does not exist', delegation_context.run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.id = r.agent_id;
  WITH RECURSIVE c(id, parent, agent_id, n) AS (
    SELECT x.id, x.parent_run_id, x.agent_id, 0 FROM agent.runs x WHERE x.id = r.id
    UNION ALL
    SELECT x.id, x.parent_run_id, x.agent_id, c.n + 1 FROM agent.runs x JOIN c ON x.id = c.parent WHERE c.n < 16)
  SELECT array_agg(c.agent_id ORDER BY c.n DESC) INTO v_chain FROM c;
  SELECT coalesce(jsonb_agg(jsonb_build_object('agent_id', d.id, 'name', d.name) ORDER BY d.id), '[]')
    INTO v_to
    FROM agent.agents d
   WHERE d.id IN (SELECT (e #>> '{}')::bigint FROM jsonb_array_elements(a.delegation) e
                   WHERE (e #>> '{}') ~ '^[0-9]{1,18}$')
     AND d.workspace_id = a.workspace_id AND d.deleted_at IS NULL AND d.status = 'active'
     AND d.id <> ALL (v_chain);
  RETURN jsonb_build_object(
    'depth', r.depth, 'max_depth', v_max, 'chain', to_jsonb(v_chain),
    'can_delegate', r.depth < v_max AND jsonb_array_length(v_to) > 0,
    'delegates', CASE WHEN r.depth < v_max THEN v_to ELSE '[]'::jsonb END,
    'remaining_budget', coalesce(r.token_budget, a.default_token_budget) - r.tokens_total - r.tokens_reserved);
END
$$;
REVOKE ALL ON FUNCTION agent.delegation_context(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.delegation_context(bigint) IS
  'For the executor: where a run stands in its delegation tree: {"depth", "max_depth", "chain" (agent ids from the root), "can_delegate", "delegates" (agents it may hand work to now: listed, active, same workspace, not on the chain, and only below the depth limit), "remaining_budget"}. The delegate_to_agent tool is offered only when can_delegate. A run of another workspace than the session''s is unknown (42704).';

CREATE OR REPLACE FUNCTION agent._delegation_attachment(p_child_agent_id bigint, p_attachment jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_type   text;
  v_id     text;
  v_key    text;
  v_val    jsonb;
  v_ok     boolean;
  v_reason text;
BEGIN
  IF jsonb_typeof(p_attachment) IS DISTINCT FROM 'object' THEN
    RETURN p_attachment;
  END IF;
  IF p_attachment ? 'resource_type' OR p_attachment ? 'resource_id' THEN
    IF jsonb_typeof(p_attachment -> 'resource_type') IS DISTINCT FROM 'string'
       OR coalesce(jsonb_typeof(p_attachment -> 'resource_id'), 'null') NOT IN ('string', 'number') THEN
      RETURN jsonb_build_object('resource_type', p_attachment -> 'resource_type',
                                'resource_id', p_attachment -> 'resource_id', 'withheld', 'invalid_reference');
    END IF;
    v_type := p_attachment ->> 'resource_type';
    v_id := p_attachment ->> 'resource_id';
  ELSE
    SELECT e.key, e.value INTO v_key, v_val FROM jsonb_each(p_attachment) e;
    IF (SELECT count(*) FROM jsonb_object_keys(p_attachment)) <> 1
       OR coalesce(jsonb_typeof(v_val), 'null') NOT IN ('string', 'number')
       OR NOT (v_key IN ('page', 'collection', 'skill', 'agent')
               OR EXISTS (SELECT 1 FROM agent.resource_tables t WHERE t.resource_type = v_key)) THEN
      RETURN p_attachment;
    END IF;
    v_type := v_key;
    v_id := v_val #>> '{}';
  END IF;
  SELECT x.allowed, x.reason INTO v_ok, v_reason
    FROM agent.explain_access(p_child_agent_id, v_type, v_id, 'read', 'autonomous') x;
  IF v_ok THEN
    RETURN p_attachment;
  END IF;
  RETURN jsonb_build_object('resource_type', v_type, 'resource_id', v_id, 'withheld', coalesce(v_reason, 'not_granted'));
END
$$;
REVOKE ALL ON FUNCTION agent._delegation_attachment(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegation_attachment(bigint, jsonb) IS
  'Internal (agent.delegate): one attachment as the child run receives it: a resource reference ({"resource_type", "resource_id", ...}, or {"<type>": "<id>"} for a built-in or registered type) that the child agent may not read autonomously becomes {"resource_type", "resource_id", "withheld": <reason of agent.explain_access>} (its other fields dropped); a malformed reference is withheld as invalid_reference; anything else passes as given.';


-- ---------------------------------------------------------------------------
-- sql/src/800_activity.sql
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION agent._check_workspace_arg(p_workspace_id text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NOT agent._workspace_ok(p_workspace_id) THEN
    RAISE EXCEPTION 'workspace "%" is not the session''s workspace', p_workspace_id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Every call of the pg_agents API works inside the session''s workspace (pg_agents.workspace).';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._check_workspace_arg(text) IS
  'Internal: refuses (42501) a workspace id named in an argument or a draft that the session may not name (agent._workspace_ok).';

CREATE OR REPLACE FUNCTION agent.activity(agent_id bigint, user_id text, status text DEFAULT NULL,
                               trigger_id bigint DEFAULT NULL, since timestamptz DEFAULT NULL,
                               until timestamptz DEFAULT NULL, lim int DEFAULT 50)
RETURNS TABLE(run_id bigint, created_at timestamptz, trigger_label text, origin text, regime text,
              requested_by text, run_status text, started_at timestamptz, finished_at timestamptz,
              duration interval, model text, tokens_in bigint, tokens_out bigint, tokens_total bigint,
              skills text[], tools text[], resources_read text[], resources_written text[],
              denied_steps integer, error text, rerun_of bigint, parent_run_id bigint, run_trigger_id bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_scope text;
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_status text := status;
  v_trig  bigint := trigger_id;
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_status IS NOT NULL AND v_status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children', 'succeeded', 'failed',
                                               'budget_exceeded', 'cancelled', 'expired') THEN
    RAISE EXCEPTION 'invalid run status "%"', v_status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A run status is queued, running, waiting_approval, waiting_input, waiting_children, succeeded, failed, budget_exceeded, cancelled or expired.';
  END IF;
  IF lim IS NULL OR lim < 1 OR lim > 1000 THEN
    RAISE EXCEPTION 'lim must be between 1 and 1000' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF since IS NOT NULL AND until IS NOT NULL AND since > until THEN
    RAISE EXCEPTION 'since must not be after until' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- full: every run; edit, interact: their own manual runs; none (or an
  -- unknown or deleted agent, or one of another workspace): nothing,
  -- indistinguishably
  IF NOT agent._workspace_ok((SELECT a.workspace_id FROM agent.agents a WHERE a.id = v_agent)) THEN
    RETURN;
  END IF;
  v_scope := agent.activity_scope(v_user, v_agent);
  IF v_scope IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT r.id, r.created_at,
         agent._trigger_label(r.origin, r.input, r.trigger_id, r.parent_run_id),
         r.origin, r.regime, r.requested_by, r.status, r.started_at, r.finished_at,
         r.finished_at - r.started_at, r.model, r.tokens_in, r.tokens_out, r.tokens_total,
         st.skills, st.tools, st.reads, st.writes, st.denied,
         coalesce(r.error, st.last_error),
         CASE WHEN (r.input ->> 'rerun_of') ~ '^[0-9]{1,18}$' THEN (r.input ->> 'rerun_of')::bigint END,
         r.parent_run_id, r.trigger_id
    FROM (SELECT x.* FROM agent.runs x
           WHERE x.agent_id = v_agent
             AND (v_scope = 'all' OR (x.regime = 'manual' AND x.requested_by = v_user))
             AND (v_status IS NULL OR x.status = v_status)
             AND (v_trig IS NULL OR x.trigger_id = v_trig)
             AND (since IS NULL OR x.created_at >= since)
             AND (until IS NULL OR x.created_at < until)
           ORDER BY x.created_at DESC, x.id DESC
           LIMIT lim) r
    LEFT JOIN LATERAL (
      SELECT coalesce(array_agg(DISTINCT coalesce(s.output ->> 'resource_id', s.input ->> 'resource_id'))
                        FILTER (WHERE s.kind = 'read' AND coalesce(s.output ->> 'resource_type', s.input ->> 'resource_type') = 'skill'),
                      '{}') AS skills,
             coalesce(array_agg(DISTINCT s.name) FILTER (WHERE s.kind IN ('tool', 'read', 'write', 'delegate')
                                                         AND s.name IS NOT NULL), '{}') AS tools,
             coalesce(array_agg(DISTINCT agent._step_resource(s.input, s.output))
                        FILTER (WHERE s.kind = 'read' AND agent._step_resource(s.input, s.output) IS NOT NULL), '{}') AS reads,
             coalesce(array_agg(DISTINCT agent._step_resource(s.input, s.output))
                        FILTER (WHERE s.kind = 'write' AND agent._step_resource(s.input, s.output) IS NOT NULL), '{}') AS writes,
             (count(*) FILTER (WHERE s.kind = 'denied'))::integer AS denied,
             (array_agg(coalesce(s.output ->> 'error', s.output::text) ORDER BY s.seq DESC)
                FILTER (WHERE s.kind = 'error' AND coalesce(s.status, 'error') <> 'retry'))[1] AS last_error
        FROM agent.run_steps s WHERE s.run_id = r.id
    ) st ON true
   ORDER BY r.created_at DESC, r.id DESC;
END
$$;
COMMENT ON FUNCTION agent.activity(bigint, text, text, bigint, timestamptz, timestamptz, int) IS
  'The agent''s runs, newest first, as the user may see them (full: all; edit, interact: their own manual runs; no access, unknown agent or an agent of another workspace than the session''s: nothing): trigger label, status, duration, model, tokens, skills, tools and resources used (from run_steps), error in clear, re-run and delegation links. Filters: status, trigger, period [since, until) on created_at, lim (1-1000).';

CREATE OR REPLACE FUNCTION agent.run_detail(run_id bigint, user_id text)
RETURNS TABLE(seq integer, at timestamptz, kind text, name text, status text, summary text,
              resource text, tokens integer, duration interval, input jsonb, output jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r       agent.runs%ROWTYPE;
  v_scope text;
  v_run   bigint := run_id;
  v_user  text := user_id;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  SELECT * INTO r FROM agent.runs x WHERE x.id = v_run;
  -- a run of another workspace is an unknown run
  IF NOT agent._workspace_ok(r.workspace_id) OR r.id IS NULL THEN
    RETURN;
  END IF;
  v_scope := agent.activity_scope(v_user, r.agent_id);
  -- the user who asked for a draft sees its steps (the assistant itself is nobody's)
  IF r.origin = 'draft' AND r.requested_by = v_user THEN
    v_scope := 'own_manual';
  END IF;
  IF v_scope IS NULL OR (v_scope <> 'all' AND NOT (r.regime = 'manual' AND r.requested_by = v_user)) THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT * FROM (
    SELECT s.seq, s.started_at, s.kind, s.name, s.status,
           CASE s.kind
             WHEN 'llm' THEN format('model %s: %s tokens', coalesce(s.name, '?'), s.tokens)
             WHEN 'read' THEN format('read %s', agent._step_resource(s.input, s.output))
             WHEN 'write' THEN format('wrote %s', agent._step_resource(s.input, s.output))
             WHEN 'denied' THEN format('denied: %s%s (%s)', coalesce(s.name, '?'),
                                       coalesce(' on ' || agent._step_resource(s.input, NULL), ''),
                                       coalesce(s.output ->> 'reason', s.output ->> 'error', 'refused'))
             WHEN 'delegate' THEN format('delegated to %s: run %s %s', coalesce(s.name, '?'),
                                         coalesce(s.output ->> 'child_run_id', s.input ->> 'child_run_id', '?'),
                                         coalesce(s.output ->> 'status', 'pending'))
             WHEN 'approval' THEN format('approval of %s: %s', coalesce(s.name, '?'), coalesce(s.status, 'pending'))
             WHEN 'error' THEN format('error in %s: %s', coalesce(s.name, '?'),
                                      coalesce(s.output ->> 'error', s.output::text, 'unknown'))
             WHEN 'tool' THEN
               CASE WHEN s.name = 'search_resources'
                    THEN format('searched "%s": %s result(s)', coalesce(s.input ->> 'query', ''),
                                coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                                                 THEN s.output -> 'results' END), 0))
                    ELSE format('called %s', coalesce(s.name, '?')) END
             ELSE coalesce(s.name, s.kind)
           END,
           CASE WHEN s.kind IN ('read', 'write', 'denied') THEN agent._step_resource(s.input, s.output) END,
           s.tokens, s.finished_at - s.started_at, s.input, s.output
      FROM agent.run_steps s WHERE s.run_id = r.id
    UNION ALL
    -- the decisions on the run's approvals (who decided, when)
    SELECT NULL::integer, coalesce(p.decided_at, p.requested_at), 'approval'::text, p.tool, p.status,
           format('approval %s of %s%s', p.status, p.tool,
                  coalesce(' by ' || p.decided_by, '') || CASE WHEN p.status = 'pending'
                                                               THEN ' (expires ' || p.expires_at::text || ')' ELSE '' END),
           NULL::text, 0, p.decided_at - p.requested_at, p.input,
           jsonb_build_object('approval_key', p.approval_key, 'decided_by', p.decided_by, 'consumed', p.consumed_at IS NOT NULL)
      FROM agent.approvals p WHERE p.run_id = r.id
  ) d(seq, at, kind, name, status, summary, resource, tokens, duration, input, output)
  ORDER BY d.seq NULLS LAST, d.at;
END
$$;
COMMENT ON FUNCTION agent.run_detail(bigint, text) IS
  'The steps of one run in order (model calls with tokens, reads, writes, tool calls, searches, denied steps, delegations, errors) with a one-line summary, then the run''s approvals and their decisions. Same visibility as agent.activity (and the requester of a draft run sees its steps): a run the user may not see, or a run of another workspace than the session''s, gives nothing, exactly like an unknown run.';

CREATE OR REPLACE VIEW agent.insights AS
SELECT g.workspace_id, g.agent_id, a.name AS agent_name, g.day, g.status, g.runs,
       g.tokens_in, g.tokens_out, g.tokens_in + g.tokens_out AS tokens, g.avg_duration,
       sum(g.runs) OVER w AS day_runs,
       round(sum(CASE WHEN agent._run_failed(g.status) THEN g.runs ELSE 0 END) OVER w
             / nullif(sum(CASE WHEN NOT agent._run_is_active(g.status) THEN g.runs ELSE 0 END) OVER w, 0), 4)
         AS day_failure_rate
FROM (
  SELECT r.workspace_id, r.agent_id, (r.created_at AT TIME ZONE 'UTC')::date AS day, r.status,
         count(*) AS runs, sum(r.tokens_in)::bigint AS tokens_in, sum(r.tokens_out)::bigint AS tokens_out,
         avg(r.finished_at - r.started_at) AS avg_duration
    FROM agent.runs r
   WHERE (SELECT agent._session_workspace()) IS NULL
      OR (r.workspace_id = (SELECT agent._session_workspace())
          AND (SELECT agent._may_read_workspace(agent._session_workspace())))
   GROUP BY 1, 2, 3, 4
) g
JOIN agent.agents a ON a.id = g.agent_id
WINDOW w AS (PARTITION BY g.agent_id, g.day);
REVOKE ALL ON agent.insights FROM PUBLIC;
COMMENT ON VIEW agent.insights IS
  'Runs per agent, UTC day (of created_at) and status, for analytics: runs, own tokens (the run''s own tokens_in + tokens_out, never the rolled-up tokens_total, so that sums do not count a child twice), average duration, and the day''s run count and failure rate (failed, budget_exceeded, expired over finished runs). Scoped to the session''s workspace (pg_agents.workspace; a non-superuser session that sets none is refused, a superuser one sees every workspace), and only to one the role may read (agents_app: any; agents_reader: those bound by agent.bind_reader).';
COMMENT ON COLUMN agent.insights.workspace_id IS 'Workspace of the agent.';
COMMENT ON COLUMN agent.insights.agent_id IS 'Agent.';
COMMENT ON COLUMN agent.insights.agent_name IS 'Agent name now.';
COMMENT ON COLUMN agent.insights.day IS 'UTC date of the runs'' created_at.';
COMMENT ON COLUMN agent.insights.status IS 'Run status.';
COMMENT ON COLUMN agent.insights.runs IS 'Runs of that agent, day and status.';
COMMENT ON COLUMN agent.insights.tokens_in IS 'Sum of the runs'' own prompt tokens.';
COMMENT ON COLUMN agent.insights.tokens_out IS 'Sum of the runs'' own completion tokens.';
COMMENT ON COLUMN agent.insights.tokens IS 'tokens_in + tokens_out.';
COMMENT ON COLUMN agent.insights.avg_duration IS 'Average finished_at - started_at of the runs that have both.';
COMMENT ON COLUMN agent.insights.day_runs IS 'All runs of the agent that day, every status.';
COMMENT ON COLUMN agent.insights.day_failure_rate IS 'Failed, budget_exceeded and expired runs over finished runs of the agent that day (4 decimals); NULL when none finished.';

CREATE OR REPLACE FUNCTION agent.insights(agent_id bigint, user_id text, since timestamptz DEFAULT NULL,
                               until timestamptz DEFAULT NULL)
RETURNS TABLE(section text, key text, runs bigint, succeeded bigint, failed bigint,
              failure_rate numeric, tokens bigint, detail jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_level text;
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF since IS NOT NULL AND until IS NOT NULL AND since > until THEN
    RAISE EXCEPTION 'since must not be after until' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- an agent of another workspace is an unknown agent
  v_level := CASE WHEN agent._workspace_ok((SELECT a.workspace_id FROM agent.agents a WHERE a.id = v_agent))
                  THEN agent._user_level(v_user, v_agent) END;
  IF v_level IS DISTINCT FROM 'full' THEN
    -- the same answer for no access and for an unknown agent
    RAISE EXCEPTION 'user "%" cannot view the insights of agent %', v_user, v_agent
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = CASE WHEN v_level IS NULL THEN format('User "%s" has no access to this agent.', v_user)
                          ELSE format('User "%s" holds the %s level.', v_user, v_level) END,
            HINT = 'Insights need the full level.';
  END IF;
  RETURN QUERY
  WITH r AS (
    SELECT x.*, agent._run_failed(x.status) AS is_failed, NOT agent._run_is_active(x.status) AS is_done
      FROM agent.runs x
     WHERE x.agent_id = v_agent
       AND (since IS NULL OR x.created_at >= since)
       AND (until IS NULL OR x.created_at < until)
  ), agg AS (
    -- one pass over the runs for every section
    SELECT CASE WHEN GROUPING(k.st) = 0 THEN 2 WHEN GROUPING(k.dy) = 0 THEN 3 WHEN GROUPING(k.wk) = 0 THEN 4
                WHEN GROUPING(k.md) = 0 THEN 5 WHEN GROUPING(k.og) = 0 THEN 6 ELSE 1 END AS ord,
           CASE WHEN GROUPING(k.st) = 0 THEN 'status' WHEN GROUPING(k.dy) = 0 THEN 'day' WHEN GROUPING(k.wk) = 0 THEN 'week'
                WHEN GROUPING(k.md) = 0 THEN 'model' WHEN GROUPING(k.og) = 0 THEN 'origin' ELSE 'total' END AS section,
           coalesce(k.st, k.dy, k.wk, k.md, k.og) AS key,
           count(*)::bigint AS runs,
           (count(*) FILTER (WHERE k.status = 'succeeded'))::bigint AS succeeded,
           (count(*) FILTER (WHERE k.is_failed))::bigint AS failed,
           round((count(*) FILTER (WHERE k.is_failed))::numeric / nullif(count(*) FILTER (WHERE k.is_done), 0), 4) AS failure_rate,
           sum(k.tokens_in + k.tokens_out)::bigint AS tokens,
           jsonb_build_object('tokens_in', sum(k.tokens_in), 'tokens_out', sum(k.tokens_out),
                              'finished', count(*) FILTER (WHERE k.is_done),
                              'cancelled', count(*) FILTER (WHERE k.status = 'cancelled'),
                              'active', count(*) FILTER (WHERE NOT k.is_done),
                              'avg_duration_s', round(extract(epoch FROM avg(k.finished_at - k.started_at))::numeric, 3)) AS detail
      FROM (SELECT r.*, r.status AS st,
                   to_char((r.created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS dy,
                   to_char(date_trunc('week', r.created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS wk,
                   coalesce(r.model, '(none)') AS md, r.origin AS og
              FROM r) k
     GROUP BY GROUPING SETS ((), (k.st), (k.dy), (k.wk), (k.md), (k.og))
  ), touched AS (
    SELECT coalesce(s.output ->> 'resource_type', s.input ->> 'resource_type') AS rt,
           coalesce(s.output ->> 'resource_id', s.input ->> 'resource_id') AS rid,
           s.kind, s.run_id, s.started_at, r.regime
      FROM agent.run_steps s JOIN r ON r.id = s.run_id
     WHERE s.kind IN ('read', 'write') AND coalesce(s.status, 'ok') = 'ok'
  ), used AS (
    SELECT t.rt, t.rid,
           count(*) FILTER (WHERE t.kind = 'read') AS reads,
           count(*) FILTER (WHERE t.kind = 'write') AS writes,
           count(DISTINCT t.run_id) FILTER (WHERE t.kind = 'read') AS read_runs,
           count(*) FILTER (WHERE t.kind = 'read' AND t.regime = 'manual') AS manual_reads,
           max(t.started_at) FILTER (WHERE t.kind = 'read') AS last_read_at
      FROM touched t WHERE t.rt IS NOT NULL AND t.rid IS NOT NULL
     GROUP BY t.rt, t.rid
  ), res AS (
    SELECT coalesce(g.resource_type, u.rt) AS rt, coalesce(g.resource_id, u.rid) AS rid,
           g.access AS granted, coalesce(u.reads, 0) AS reads, coalesce(u.writes, 0) AS writes,
           coalesce(u.read_runs, 0) AS read_runs, coalesce(u.manual_reads, 0) AS manual_reads, u.last_read_at
      FROM (SELECT * FROM agent.access x WHERE x.agent_id = v_agent) g
      FULL JOIN used u ON u.rt = g.resource_type AND u.rid = g.resource_id
  )
  SELECT a.section, a.key, a.runs, a.succeeded, a.failed, a.failure_rate, a.tokens, a.detail
    FROM (SELECT agg.*, agg.key AS sortkey FROM agg
          UNION ALL
          SELECT 7, 'resource', res.rt || ':' || res.rid, res.read_runs, NULL, NULL, NULL, NULL,
                 jsonb_build_object('granted', res.granted, 'reads', res.reads, 'writes', res.writes,
                                    'manual_reads', res.manual_reads, 'last_read_at', res.last_read_at,
                                    'state', CASE WHEN res.granted IS NOT NULL AND res.reads > 0 THEN 'granted_and_read'
                                                  WHEN res.granted IS NOT NULL THEN 'granted_not_read'
                                                  ELSE 'read_not_granted' END),
                 res.rt || ':' || res.rid
            FROM res) a
   ORDER BY a.ord, a.sortkey NULLS FIRST;
END
$$;
COMMENT ON FUNCTION agent.insights(bigint, text, timestamptz, timestamptz) IS
  'Insights of one agent over [since, until) of created_at (full level only, 42501 otherwise, unknown agents and agents of another workspace than the session''s included): one row per section and key — total, status, day and week (UTC), model, origin: runs, succeeded, failed (failed, budget_exceeded, expired), failure_rate over finished runs, own tokens — and resource: granted (agent.access now) versus actually read (read steps of the period), with runs that read it and a state granted_and_read, granted_not_read or read_not_granted.';

CREATE OR REPLACE FUNCTION agent.generate_draft(description text, user_id text, workspace_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_ws   text := coalesce(nullif(workspace_id, ''), agent._session_workspace());
  v_user text := user_id;
  v_aid  bigint;
  v_run  bigint;
BEGIN
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
REVOKE ALL ON FUNCTION agent.generate_draft(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.generate_draft(text, text, text) IS
  'Queues a draft run (origin draft, manual regime acting as user_id, so its searches see only what the user may read) of the workspace''s hidden assistant agent; the worker and the LLM turn the description into a draft, read with agent.draft(run_id). Nothing else is saved. workspace_id defaults to the session''s workspace (pg_agents.workspace) and must be it (42501 otherwise). Returns the run id.';

CREATE OR REPLACE FUNCTION agent.draft(run_id bigint, user_id text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r          agent.runs%ROWTYPE;
  v_run      bigint := run_id;
  v_user     text;
  j          jsonb;
  e          jsonb;
  v_found    jsonb;
  v_access   jsonb := '[]';
  v_triggers jsonb := '[]';
  v_dropped  jsonb := '[]';
  v_down     jsonb := '[]';
  v_seen     text[] := '{}';
  v_rt       text;
  v_rid      text;
  v_acc      text;
  v_problem  text;
  v_name     text;
  i          integer;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.id = v_run AND x.origin = 'draft';
  IF NOT agent._workspace_ok(r.workspace_id) OR r.id IS NULL
     OR (user_id IS NOT NULL AND r.requested_by IS DISTINCT FROM user_id) THEN
    -- another user's draft, or one of another workspace, looks exactly like no draft
    RAISE EXCEPTION 'draft run % does not exist', v_run USING ERRCODE = 'undefined_object';
  END IF;
  v_user := r.requested_by;
  IF r.status <> 'succeeded' THEN
    RETURN jsonb_build_object('run_id', r.id, 'status', r.status, 'ready', false,
                              'error', CASE WHEN agent._run_is_active(r.status) THEN NULL
                                            ELSE coalesce(r.error, 'the draft run ended ' || r.status) END);
  END IF;
  j := CASE WHEN jsonb_typeof(r.output) = 'object' AND r.output ? 'name' THEN r.output
            ELSE agent._draft_json(r.output ->> 'text') END;
  IF j IS NULL THEN
    RETURN jsonb_build_object('run_id', r.id, 'status', r.status, 'ready', false,
                              'error', 'the model''s answer is not a JSON draft',
                              'answer', left(coalesce(r.output ->> 'text', r.output::text), 500));
  END IF;

  -- what the run's searches (as the user) really found, still readable by the user now
  SELECT coalesce(jsonb_agg(DISTINCT jsonb_build_object('resource_type', f.rt, 'resource_id', f.rid)), '[]')
    INTO v_found
    FROM (SELECT x ->> 'resource_type' AS rt, x ->> 'resource_id' AS rid
            FROM agent.run_steps s,
                 jsonb_array_elements(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                           THEN s.output -> 'results' ELSE '[]' END) x
           WHERE s.run_id = r.id AND s.kind = 'tool' AND s.name = 'search_resources'
             AND coalesce(s.status, 'ok') = 'ok') f
   WHERE f.rt IS NOT NULL AND f.rid IS NOT NULL
     AND agent.can_access(r.agent_id, f.rt, f.rid, 'read', 'manual', v_user);

  -- proposed access: only what a search found and the user can read
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j -> 'access') = 'array'
                                                   THEN j -> 'access' ELSE '[]' END) x LOOP
    i := i + 1;
    v_rt := CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'resource_type' END;
    v_rid := CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'resource_id' END;
    v_acc := coalesce(CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'access' END, 'read');
    IF v_rt IS NULL OR v_rid IS NULL OR v_acc NOT IN ('read', 'edit') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'proposed', e, 'reason', 'malformed');
    ELSIF v_rt NOT IN ('page', 'collection', 'skill', 'agent') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                                   'reason', 'invalid_resource_type');
    ELSIF NOT v_found @> jsonb_build_array(jsonb_build_object('resource_type', v_rt, 'resource_id', v_rid)) THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                                   'reason', CASE WHEN EXISTS (
                                                                    SELECT 1 FROM agent.run_steps s,
                                                                           jsonb_array_elements(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                                                                                     THEN s.output -> 'results' ELSE '[]' END) x
                                                                     WHERE s.run_id = r.id AND s.kind = 'tool' AND s.name = 'search_resources'
                                                                       AND x ->> 'resource_type' = v_rt AND x ->> 'resource_id' = v_rid)
                                                                  THEN 'not_readable' ELSE 'not_found_by_search' END);
    ELSIF (v_rt || ':' || v_rid) = ANY (v_seen) THEN
      CONTINUE;
    ELSE
      IF v_acc = 'edit' AND NOT agent.can_access(r.agent_id, v_rt, v_rid, 'edit', 'manual', v_user) THEN
        v_acc := 'read';
        v_down := v_down || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                               'from', 'edit', 'to', 'read', 'reason', 'no_edit_access');
      END IF;
      v_seen := v_seen || (v_rt || ':' || v_rid);
      v_access := v_access || jsonb_build_object('resource_type', v_rt, 'resource_id', v_rid, 'access', v_acc);
    END IF;
  END LOOP;

  -- proposed triggers: valid ones, disabled; one naming a resource keeps it
  -- only when a search found it and the user can read it
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j -> 'triggers') = 'array'
                                                   THEN j -> 'triggers' ELSE '[]' END) x LOOP
    i := i + 1;
    v_problem := agent._draft_trigger_problem(e);
    IF v_problem IS NULL AND e ->> 'resource_id' IS NOT NULL
       AND NOT v_found @> jsonb_build_array(jsonb_build_object('resource_type', e ->> 'resource_type',
                                                               'resource_id', e ->> 'resource_id')) THEN
      v_problem := format('resource %s %s was not found by a search of this run', e ->> 'resource_type', e ->> 'resource_id');
    END IF;
    IF v_problem IS NOT NULL THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'index', i, 'proposed', e, 'reason', v_problem);
    ELSE
      v_triggers := v_triggers || (e || '{"enabled": false}');
    END IF;
  END LOOP;

  v_name := CASE WHEN jsonb_typeof(j -> 'name') = 'string' AND length(btrim(j ->> 'name')) BETWEEN 1 AND 200
                 THEN btrim(j ->> 'name') ELSE 'New agent' END;
  RETURN jsonb_build_object(
    'run_id', r.id, 'status', r.status, 'ready', true,
    'draft', jsonb_build_object('name', v_name,
                                'instructions', CASE WHEN jsonb_typeof(j -> 'instructions') = 'string'
                                                     THEN j ->> 'instructions' ELSE '' END,
                                'triggers', v_triggers, 'access', v_access,
                                'workspace_id', r.workspace_id),
    'found', v_found, 'dropped', v_dropped, 'downgraded', v_down);
END
$$;
REVOKE ALL ON FUNCTION agent.draft(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.draft(bigint, text) IS
  'The draft of a draft run: {run_id, status, ready, draft {name, instructions, triggers (disabled), access, workspace_id}, found, dropped, downgraded}. Proposed access keeps only resources that a search_resources step of that run found and the requesting user can still read (edit downgraded to read without the user''s edit right); anything else the model proposed is dropped and reported, never guessed. Invalid triggers are dropped with the reason. user_id, when given, must be the requesting user (otherwise 42704, like an unknown draft); a draft run of another workspace than the session''s is unknown too.';

CREATE OR REPLACE FUNCTION agent.create_from_draft(draft jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
REVOKE ALL ON FUNCTION agent.create_from_draft(jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.create_from_draft(jsonb, text) IS
  'Saves a draft (from agent.draft, a template or hand-written) as an agent owned by by_user, after validating it again: keys and shapes, every grant re-checked against by_user''s own ACL (42501), every trigger validated (cron via agent.cron_valid, event fields, filter via agent.validate_filter; a watched resource must be readable by by_user). Every trigger is created disabled. The agent is created in the session''s workspace: a draft''s workspace_id must be it (42501 otherwise). Writes version 1 and an audit row; returns the agent id.';


-- ---------------------------------------------------------------------------
-- sql/src/900_teams.sql
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION agent.send_to_run(run_id bigint, message text, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r    agent.runs%ROWTYPE;
  v_id bigint;
BEGIN
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- a run of another workspace is an unknown run (checked before any lock)
  IF NOT agent._workspace_ok((SELECT x.workspace_id FROM agent.runs x WHERE x.id = send_to_run.run_id)) THEN
    RAISE EXCEPTION 'run % does not exist', send_to_run.run_id USING ERRCODE = 'undefined_object';
  END IF;
  r := agent._lock_run(send_to_run.run_id);
  IF NOT agent.user_can(by_user, r.agent_id, 'chat') THEN
    RAISE EXCEPTION 'user "%" may not send messages to run %', by_user, r.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Sending to a run requires the chat level on its agent.';
  END IF;
  v_id := agent._teams_post(r, 'user:' || by_user, message);
  PERFORM agent._audit_event('run.message', 'success', 'run', r.id::text, r.workspace_id,
                             (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
                             jsonb_build_object('message_id', v_id, 'by_user', by_user),
                             format('%s sent a message to run %s', by_user, r.id));
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent.send_to_run(bigint, text, text) IS
  'A human with the chat level on the agent queues a message for a queued, running or waiting run (42704 unknown run or a run of another workspace than the session''s, 42501 no chat level, 55000 the run has ended, 22023 empty message). The worker gives it to the model at the next safe point; a run waiting_input takes it as its answer and is re-queued. Returns the message id.';

CREATE OR REPLACE FUNCTION agent._teams_send(p_from_run bigint, p_to_run bigint, p_message text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
BEGIN
  -- runs of another workspace (than the session's, or the sender's) are unknown
  IF NOT agent._workspace_ok((SELECT x.workspace_id FROM agent.runs x WHERE x.id = p_to_run)) THEN
    RAISE EXCEPTION 'run % does not exist', p_to_run USING ERRCODE = 'undefined_object';
  END IF;
  r := agent._lock_run(p_to_run);
  IF r.parent_run_id IS DISTINCT FROM p_from_run
     OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.id = p_from_run AND x.workspace_id = r.workspace_id) THEN
    RAISE EXCEPTION 'run % is not a child of run %', p_to_run, p_from_run
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A run sends messages only to the runs it delegated to.';
  END IF;
  RETURN agent._teams_post(r, 'run:' || p_from_run, p_message);
END
$$;
REVOKE ALL ON FUNCTION agent._teams_send(bigint, bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._teams_send(bigint, bigint, text) IS
  'Internal (agent_teams send): a run queues a message for one of its direct children of its own workspace (42501 otherwise; 42704 for a run of another workspace than the session''s; 55000 when the child has ended).';

CREATE OR REPLACE FUNCTION agent._teams_ask_parent(p_run_id bigint, p_question text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r    agent.runs%ROWTYPE;
  p    agent.runs%ROWTYPE;
  v_id bigint;
BEGIN
  IF NOT agent._workspace_ok((SELECT x.workspace_id FROM agent.runs x WHERE x.id = p_run_id)) THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'undefined_object';
  END IF;
  r := agent._lock_run(p_run_id);
  -- a parent of another workspace is no parent
  IF r.parent_run_id IS NULL
     OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.id = r.parent_run_id AND x.workspace_id = r.workspace_id) THEN
    RAISE EXCEPTION 'run % has no parent run', r.id USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF r.status <> 'running' THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state', DETAIL = format('It is %s.', r.status);
  END IF;
  SELECT * INTO p FROM agent.runs x WHERE x.id = r.parent_run_id FOR UPDATE;
  v_id := agent._teams_post(p, 'run:' || r.id, p_question, 'question');
  -- a parent parked until its children end is woken up to see the question
  IF p.status = 'waiting_children' THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.id = p.id RETURNING * INTO p;
    PERFORM agent._audit_run('run.resume', p, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: its child run %s asks a question', p.id, r.id));
    PERFORM agent._runs_notify(p.id, p.agent_id, 'queued');
  END IF;
  UPDATE agent.runs x SET status = 'waiting_input', lease_until = NULL,
         input_expires_at = now() + current_setting('pg_agents.approval_ttl')::interval
   WHERE x.id = r.id RETURNING * INTO r;
  PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_input', 'message_id', v_id),
                           format('run %s asks its parent run %s', r.id, p.id));
  PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_input');
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._teams_ask_parent(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._teams_ask_parent(bigint, text) IS
  'Internal (ask_parent tool): posts the question to the parent run (of the same workspace; a run of another workspace than the session''s is unknown, 42704) as a message (kind question), re-queues the parent when it is parked in waiting_children, and parks the running child in waiting_input, expiring after pg_agents.approval_ttl. 55000 when the parent has ended. Returns the message id.';

CREATE OR REPLACE FUNCTION agent.run_tree(root_run_id bigint)
RETURNS TABLE(run_id bigint, parent_run_id bigint, depth integer, agent_id bigint, agent_name text,
              status text, origin text, tokens_in bigint, tokens_out bigint, tokens_total bigint,
              current_step text, preview text, pending_messages bigint,
              created_at timestamptz, finished_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- a run of another workspace than the session's is unknown (no rows), and
  -- a tree never crosses into another workspace
  WITH RECURSIVE t AS (
    SELECT r.*, ARRAY[r.id] AS path FROM agent.runs r
     WHERE r.id = run_tree.root_run_id AND agent._workspace_ok(r.workspace_id)
    UNION ALL
    SELECT c.*, t.path || c.id FROM agent.runs c JOIN t ON c.parent_run_id = t.id AND c.workspace_id = t.workspace_id)
  SELECT t.id, t.parent_run_id, t.depth - (SELECT r0.depth FROM agent.runs r0 WHERE r0.id = run_tree.root_run_id),
         t.agent_id, a.name, t.status, t.origin, t.tokens_in, t.tokens_out, t.tokens_total,
         t.current_step, t.preview,
         (SELECT count(*) FROM agent.run_messages m WHERE m.run_id = t.id AND m.delivered_at IS NULL),
         t.created_at, t.finished_at
    FROM t JOIN agent.agents a ON a.id = t.agent_id
   ORDER BY t.path
$$;
COMMENT ON FUNCTION agent.run_tree(bigint) IS
  'The delegation tree under a run (itself first, then depth-first by id): depth relative to it, agent, status, tokens (tokens_total includes descendants), current step, preview and undelivered messages; only runs of the session''s workspace (a root of another workspace gives no rows). Runs with the caller''s rights on agent.runs.';

CREATE OR REPLACE FUNCTION agent._teams_manage_jobs(p_run_id bigint, p_action text, p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  a       agent.agents%ROWTYPE;
  t       agent.triggers%ROWTYPE;
  v_user  text;
  v_scope text := coalesce(p_args->>'scope', 'personal');
  v_sched text := p_args->>'schedule';
  v_tz    text := coalesce(p_args->>'timezone', 'UTC');
  v_job   bigint;
BEGIN
  SELECT * INTO r FROM agent.runs x WHERE x.id = p_run_id;
  -- a run of another workspace is an unknown run
  IF NOT agent._workspace_ok(r.workspace_id) OR r.id IS NULL THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.id = r.agent_id;
  v_user := coalesce(r.requested_by, a.owner_id);
  IF p_action = 'list' THEN
    RETURN jsonb_build_object('jobs', coalesce((
      SELECT jsonb_agg(jsonb_build_object('job_id', x.id, 'schedule', x.schedule, 'timezone', x.timezone,
                                          'description', agent.cron_describe(x.schedule), 'prompt', x.prompt,
                                          'enabled', x.enabled,
                                          'scope', CASE x.run_as WHEN 'shared' THEN 'shared' ELSE 'personal' END,
                                          'created_by', x.created_by, 'next_run_at', x.next_run_at,
                                          'last_status', x.last_status) ORDER BY x.id)
        FROM agent.triggers x
       WHERE x.agent_id = a.id AND x.kind = 'schedule'
         AND (x.run_as = 'shared' OR x.created_by IS NOT DISTINCT FROM v_user)), '[]'));
  ELSIF p_action = 'create' THEN
    IF v_scope NOT IN ('personal', 'shared') THEN
      RAISE EXCEPTION 'invalid job scope "%"', v_scope
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A job is personal or shared.';
    END IF;
    IF v_sched IS NULL OR NOT agent.cron_valid(v_sched) THEN
      RAISE EXCEPTION 'invalid schedule "%"', coalesce(v_sched, 'NULL')
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A schedule is a 5-field cron expression.';
    END IF;
    INSERT INTO agent.triggers (workspace_id, agent_id, kind, schedule, timezone, prompt, run_as, created_by)
    VALUES (a.workspace_id, a.id, 'schedule', v_sched, v_tz, p_args->>'prompt',
            CASE v_scope WHEN 'shared' THEN 'shared' ELSE 'creator' END, v_user)
    RETURNING * INTO t;
  ELSIF p_action IN ('update', 'delete') THEN
    v_job := (p_args->>'job_id')::bigint;
    SELECT * INTO t FROM agent.triggers x
     WHERE x.id = v_job AND x.agent_id = a.id AND x.kind = 'schedule'
       AND (x.run_as = 'shared' OR x.created_by IS NOT DISTINCT FROM v_user)
     FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'job % does not exist', coalesce(v_job::text, 'NULL')
        USING ERRCODE = 'undefined_object', DETAIL = 'Only this agent''s schedules you can see can be changed.';
    END IF;
    IF t.created_by IS DISTINCT FROM v_user AND NOT agent.user_can(v_user, a.id, 'delete') THEN
      RAISE EXCEPTION 'user "%" may not change shared job %', v_user, t.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Only the job''s creator or a user with the full level on the agent may change a shared job.';
    END IF;
    IF p_action = 'delete' THEN
      DELETE FROM agent.triggers x WHERE x.id = t.id;
      PERFORM agent._audit_event('job.delete', 'success', 'trigger', t.id::text, a.workspace_id, a.owner_id,
                                 jsonb_build_object('agent_id', a.id, 'run_id', p_run_id, 'by_user', v_user,
                                                    'schedule', t.schedule),
                                 format('run %s deleted job %s', p_run_id, t.id));
      RETURN jsonb_build_object('job_id', t.id, 'deleted', true);
    END IF;
    IF v_sched IS NOT NULL AND NOT agent.cron_valid(v_sched) THEN
      RAISE EXCEPTION 'invalid schedule "%"', v_sched
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A schedule is a 5-field cron expression.';
    END IF;
    IF p_args ? 'scope' AND v_scope NOT IN ('personal', 'shared') THEN
      RAISE EXCEPTION 'invalid job scope "%"', v_scope
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A job is personal or shared.';
    END IF;
    UPDATE agent.triggers x
       SET schedule = coalesce(v_sched, x.schedule),
           timezone = coalesce(p_args->>'timezone', x.timezone),
           prompt = coalesce(p_args->>'prompt', x.prompt),
           enabled = coalesce((p_args->>'enabled')::boolean, x.enabled),
           run_as = CASE WHEN p_args ? 'scope' THEN CASE v_scope WHEN 'shared' THEN 'shared' ELSE 'creator' END
                         ELSE x.run_as END,
           updated_at = now()
     WHERE x.id = t.id RETURNING * INTO t;
  ELSE
    RAISE EXCEPTION 'unknown manage_jobs action "%"', coalesce(p_action, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'An action is create, list, update or delete.';
  END IF;
  PERFORM agent._audit_event('job.' || p_action, 'success', 'trigger', t.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('agent_id', a.id, 'run_id', p_run_id, 'by_user', v_user,
                                                'schedule', t.schedule),
                             format('run %s %sd job %s', p_run_id, p_action, t.id));
  RETURN jsonb_build_object('job_id', t.id, 'schedule', t.schedule, 'timezone', t.timezone,
                            'description', agent.cron_describe(t.schedule), 'prompt', t.prompt,
                            'enabled', t.enabled,
                            'scope', CASE t.run_as WHEN 'shared' THEN 'shared' ELSE 'personal' END,
                            'next_run_at', t.next_run_at);
END
$$;
REVOKE ALL ON FUNCTION agent._teams_manage_jobs(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._teams_manage_jobs(bigint, text, jsonb) IS
  'Internal (manage_jobs tool): create, list, update or delete the schedule triggers of the run''s agent (a run of another workspace than the session''s is unknown, 42704), acting as the run''s requester (else the agent''s owner). personal jobs (run_as creator) are visible to their creator, shared ones (run_as shared) to everyone; only the creator or a full user changes a shared job (42501). Schedules are validated with agent.cron_valid (22023). The worker gates delete through the approval gate before calling this.';

-- ---- sql/upgrade/0.2.0--0.3.0/850_tenants_rest.sql ----
-- Tenants (lead): the remaining API paths work in the session's workspace:
-- levels, visible agents, create_agent, start_run, rerun, run locks,
-- approvals and readable_resources.

CREATE OR REPLACE FUNCTION agent._user_level(p_user_id text, p_agent_id bigint) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE max(r) WHEN 3 THEN 'full' WHEN 2 THEN 'edit' WHEN 1 THEN 'interact' END
  FROM (
    SELECT 3 AS r FROM agent.agents a
     WHERE a.id = p_agent_id AND a.deleted_at IS NULL AND a.owner_id = p_user_id
    UNION ALL
    SELECT agent._level_rank(s.level) FROM agent.shares s JOIN agent.agents a ON a.id = s.agent_id
     WHERE s.agent_id = p_agent_id AND a.deleted_at IS NULL AND s.user_id = p_user_id
    UNION ALL
    SELECT agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.id = s.agent_id
      JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = p_user_id
                                AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
     WHERE s.agent_id = p_agent_id AND a.deleted_at IS NULL
  ) l
  -- an agent of another workspace than the session's is nobody's
  WHERE agent._workspace_ok((SELECT a.workspace_id FROM agent.agents a WHERE a.id = p_agent_id))
$$;
COMMENT ON FUNCTION agent._user_level(text, bigint) IS
  'Internal: the best level the user holds on the agent (owner: full; direct and group shares), NULL when none, the agent is deleted, or it belongs to another workspace than the session''s.';

CREATE OR REPLACE FUNCTION agent._agent_for(p_agent_id bigint, p_by_user text, p_action text,
                                 p_allow_system boolean DEFAULT false)
RETURNS agent.agents
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a       agent.agents%ROWTYPE;
  v_level text;
  v_need  text := agent._action_level(p_action);
BEGIN
  IF p_agent_id IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO a FROM agent.agents WHERE id = p_agent_id FOR UPDATE;
  IF NOT FOUND OR NOT agent._workspace_ok(a.workspace_id) THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id
      USING ERRCODE = 'undefined_object', DETAIL = 'The agent was deleted.';
  END IF;
  IF p_by_user IS NULL THEN
    IF p_allow_system THEN
      RETURN a;
    END IF;
    RAISE EXCEPTION 'by_user must not be NULL'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = format('Only a user holding the %s level may %s.', v_need, replace(p_action, '_', ' '));
  END IF;
  v_level := agent._user_level(p_by_user, p_agent_id);
  IF agent._level_rank(v_level) < agent._level_rank(v_need) THEN
    RAISE EXCEPTION 'user "%" cannot % agent %', p_by_user,
        CASE p_action
          WHEN 'chat' THEN 'chat with' WHEN 'view_settings' THEN 'view the settings of'
          WHEN 'edit_settings' THEN 'edit the settings of' WHEN 'share' THEN 'share'
          WHEN 'view_activity' THEN 'view the activity of' WHEN 'view_insights' THEN 'view the insights of'
          WHEN 'duplicate' THEN 'duplicate' WHEN 'delete' THEN 'delete'
          WHEN 'suspend' THEN 'change the status of' END,
        p_agent_id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = CASE WHEN v_level IS NULL THEN format('User "%s" has no access to this agent.', p_by_user)
                          ELSE format('User "%s" holds the %s level.', p_by_user, v_level) END,
            HINT = format('This needs the %s level%s.', v_need,
                          CASE v_need WHEN 'interact' THEN ' or above' WHEN 'edit' THEN ' or full' ELSE '' END);
  END IF;
  RETURN a;
END
$$;
COMMENT ON FUNCTION agent._agent_for(bigint, text, text, boolean) IS
  'Internal: locks and returns the agent after checking it exists (42704) and that by_user holds the level the action needs (42501).';

CREATE OR REPLACE FUNCTION agent.visible_agents(user_id text)
RETURNS TABLE(agent_id bigint, name text, level text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH l AS (
    SELECT a.id, 3 AS r FROM agent.agents a
     WHERE a.owner_id = visible_agents.user_id AND a.deleted_at IS NULL
    UNION ALL
    SELECT s.agent_id, agent._level_rank(s.level) FROM agent.shares s
     WHERE s.user_id = visible_agents.user_id
    UNION ALL
    SELECT s.agent_id, agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.id = s.agent_id
      JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = visible_agents.user_id
                                AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
  ), best AS (
    SELECT l.id, max(l.r) AS r FROM l GROUP BY l.id
  )
  SELECT a.id, a.name, CASE b.r WHEN 3 THEN 'full' WHEN 2 THEN 'edit' ELSE 'interact' END
  FROM best b JOIN agent.agents a ON a.id = b.id
  WHERE a.deleted_at IS NULL AND b.r > 0
    AND ((SELECT agent._session_workspace()) IS NULL OR a.workspace_id = (SELECT agent._session_workspace()))
  ORDER BY b.r DESC, a.name, a.id
$$;
COMMENT ON FUNCTION agent.visible_agents(text) IS
  'The agents of the session''s workspace a user can see (owned, shared with them or with one of their groups), best level first; an agent they have no access to is not listed.';

CREATE OR REPLACE FUNCTION agent.create_agent(workspace_id text, owner_id text, name text,
                                   settings jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_id bigint;
BEGIN
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
REVOKE ALL ON FUNCTION agent.create_agent(text, text, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.create_agent(text, text, text, jsonb) IS
  'Creates an agent owned by owner_id (who holds full implicitly) with optional settings, and writes version 1.';

CREATE OR REPLACE FUNCTION agent._lock_run(p_run_id bigint) RETURNS agent.runs
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_root bigint;
  r      agent.runs%ROWTYPE;
BEGIN
  IF p_run_id IS NULL THEN
    RAISE EXCEPTION 'run id must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.id = x.root_run_id), x.id) INTO v_root
    FROM agent.runs x WHERE x.id = p_run_id AND agent._workspace_ok(x.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'undefined_object';
  END IF;
  PERFORM agent._lock_tree(v_root);
  SELECT * INTO r FROM agent.runs x WHERE x.id = p_run_id FOR UPDATE;
  RETURN r;
END
$$;
REVOKE ALL ON FUNCTION agent._lock_run(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._lock_run(bigint) IS
  'Internal: locks the tree of a run, then the run, and returns it (42704 when unknown or of another workspace than the session''s).';

CREATE OR REPLACE FUNCTION agent.rerun(run_id bigint, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o    agent.runs%ROWTYPE;
  a    agent.agents%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
BEGIN
  SELECT * INTO o FROM agent.runs x WHERE x.id = rerun.run_id AND agent._workspace_ok(x.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', rerun.run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.id = o.agent_id;
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
  SELECT * INTO n FROM agent.runs x WHERE x.id = v_id;
  PERFORM agent._audit_run('run.rerun', n, 'success',
                           jsonb_build_object('rerun_of', o.id, 'by_user', by_user, 'status', n.status),
                           format('run %s re-runs run %s', v_id, o.id));
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent.rerun(bigint, text) IS
  'Queues a new run of the same agent with the same input plus input.rerun_of, origin rerun, the original''s regime. Manual runs need the chat level (and, for another user''s run, seeing it: agent.activity_scope = all); autonomous runs need edit_settings. Returns the new run id.';

CREATE OR REPLACE FUNCTION agent._approval_to_decide(p_key text, p_by_user text, p_run_id bigint)
RETURNS agent.approvals
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ids   bigint[];
  v_any   boolean;
  v_state text;
  ap      agent.approvals%ROWTYPE;
  v_root  bigint;
BEGIN
  IF p_key IS NULL OR p_by_user IS NULL OR p_by_user = '' THEN
    RAISE EXCEPTION 'approval key and deciding user are required'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT array_agg(p.id ORDER BY p.id) FILTER (WHERE coalesce(agent.user_can(p_by_user, x.agent_id, 'edit_settings'), false)),
         count(*) > 0
    INTO v_ids, v_any
    FROM agent.approvals p JOIN agent.runs x ON x.id = p.run_id
   WHERE p.approval_key = p_key AND p.status = 'pending' AND p.expires_at > now()
     AND (p_run_id IS NULL OR p.run_id = p_run_id) AND agent._workspace_ok(x.workspace_id);
  IF NOT v_any THEN
    SELECT p.status INTO v_state FROM agent.approvals p JOIN agent.runs x ON x.id = p.run_id
     WHERE p.approval_key = p_key AND (p_run_id IS NULL OR p.run_id = p_run_id) AND agent._workspace_ok(x.workspace_id)
     ORDER BY p.id DESC LIMIT 1;
    IF v_state IS NULL THEN
      RAISE EXCEPTION 'no pending approval with key "%"', p_key
        USING ERRCODE = 'undefined_object';
    END IF;
    RAISE EXCEPTION 'approval "%" is no longer pending', p_key
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('It is %s.', CASE WHEN v_state = 'pending' THEN 'past its expiry time' ELSE v_state END);
  END IF;
  IF v_ids IS NULL THEN
    RAISE EXCEPTION 'user "%" may not decide approval "%"', p_by_user, p_key
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Deciding an approval requires the edit level on the agent.';
  END IF;
  IF cardinality(v_ids) > 1 THEN
    RAISE EXCEPTION 'approval key "%" is pending on % runs', p_key, cardinality(v_ids)
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The same tool call waits for approval in several runs; a decision applies to one.',
            HINT = 'Pass the run id as the third argument.';
  END IF;
  SELECT coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.id = x.root_run_id), x.id) INTO v_root
    FROM agent.approvals p JOIN agent.runs x ON x.id = p.run_id WHERE p.id = v_ids[1];
  PERFORM agent._lock_tree(v_root);
  SELECT * INTO ap FROM agent.approvals p WHERE p.id = v_ids[1] FOR UPDATE;
  IF ap.status <> 'pending' THEN
    RAISE EXCEPTION 'approval "%" is no longer pending', p_key
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('It is %s.', ap.status);
  END IF;
  RETURN ap;
END
$$;
REVOKE ALL ON FUNCTION agent._approval_to_decide(text, text, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._approval_to_decide(text, text, bigint) IS
  'Internal: the single pending approval with that key (and run) the user may decide, locked; explains every other case.';

CREATE OR REPLACE FUNCTION agent.start_run(agent_id bigint, requested_by text, input jsonb DEFAULT '{}',
                                regime text DEFAULT 'manual', origin text DEFAULT 'chat')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  a    agent.agents%ROWTYPE;
  v_id bigint;
  r    agent.runs%ROWTYPE;
BEGIN
  IF regime IS NULL OR regime NOT IN ('manual', 'autonomous') THEN
    RAISE EXCEPTION 'invalid regime "%"', regime
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A regime is manual or autonomous.';
  END IF;
  IF origin IN ('delegation', 'rerun') THEN
    RAISE EXCEPTION 'origin "%" cannot be given to agent.start_run', origin
      USING ERRCODE = 'invalid_parameter_value',
            HINT = CASE origin WHEN 'delegation' THEN 'Use agent.delegate().' ELSE 'Use agent.rerun().' END;
  END IF;
  IF origin IS NULL
     OR (regime = 'manual' AND origin NOT IN ('chat', 'api', 'draft'))
     OR (regime = 'autonomous' AND origin NOT IN ('api', 'schedule', 'event', 'mention')) THEN
    RAISE EXCEPTION 'invalid origin "%" for the % regime', origin, regime
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A manual run comes from chat, api or draft; an autonomous run from api, schedule, event or mention.';
  END IF;
  IF input IS NOT NULL AND jsonb_typeof(input) <> 'object' THEN
    RAISE EXCEPTION 'run input must be a json object'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.id = agent_id AND agent._workspace_ok(x.workspace_id);
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF regime = 'manual' THEN
    IF requested_by IS NULL OR requested_by = '' THEN
      RAISE EXCEPTION 'a manual run needs the requesting user'
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'A manual run acts as the user who asked for it (requested_by).';
    END IF;
    IF NOT coalesce(agent.user_can(requested_by, agent_id, 'chat'), false) THEN
      RAISE EXCEPTION 'user "%" may not chat with agent %', requested_by, agent_id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A manual run requires the interact level or higher on the agent.';
    END IF;
  ELSIF a.status = 'suspended' THEN
    RAISE EXCEPTION 'agent % is suspended', agent_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'A suspended agent starts no autonomous run; chat still works.';
  END IF;
  v_id := agent._enqueue_run(agent_id, regime, origin, coalesce(input, '{}'), NULL, requested_by);
  SELECT * INTO r FROM agent.runs x WHERE x.id = v_id;
  PERFORM agent._audit_run('run.start', r, 'success',
                           jsonb_build_object('regime', regime, 'origin', origin, 'status', r.status),
                           format('run %s queued (%s, %s)', v_id, regime, origin));
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent.start_run(bigint, text, jsonb, text, text) IS
  'Queues a run of an agent: manual runs (chat, api, draft) require the chat level of requested_by; autonomous runs (api, schedule, event, mention) are refused for a suspended agent. Returns the run id.';

CREATE OR REPLACE FUNCTION agent.readable_resources(agent_id bigint, resource_type text, mode text DEFAULT 'read')
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_self   bigint := agent.current_agent_id();
BEGIN
  IF mode IS NULL OR mode NOT IN ('read', 'edit') THEN
    RAISE EXCEPTION 'invalid mode "%"', coalesce(mode, '(null)')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A mode is read or edit.';
  END IF;
  IF v_self IS NOT NULL AND agent_id IS DISTINCT FROM v_self THEN
    RAISE EXCEPTION 'an agent session can only list its own resources'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = format('The session acts as agent %s.', v_self);
  END IF;
  IF agent_id IS NULL OR resource_type IS NULL THEN
    RETURN;
  END IF;
  -- an agent of another workspace than the session's is unknown: nothing
  IF NOT agent._workspace_ok((SELECT a.workspace_id FROM agent.agents a WHERE a.id = readable_resources.agent_id)) THEN
    RETURN;
  END IF;
  -- (a) direct grants at >= mode, bounded by the owner's ACL (their user and
  --     group rows, and what is shared with the whole workspace);
  -- (b) with a workspace_shared grant: what is shared with the whole
  --     workspace now, bounded by the owner's ACL;
  -- each candidate decided by the code of agent.can_access (src/access.c).
  RETURN QUERY SELECT unnest(agent._readable_ids(agent_id, resource_type, mode));
END
$$;
COMMENT ON FUNCTION agent.readable_resources(bigint, text, text) IS
  'Ids of the resources of a type an agent may read (or edit) in the autonomous regime, exactly those agent.can_access allows: direct grants bounded by the owner''s ACL, plus what is shared with the workspace when the agent holds workspace_shared. Empty for an unknown, deleted or suspended agent. With a custom ACL function (agent.set_acl_function): the direct grants that function allows, without the workspace shares, which such a function cannot list. An agent session may only ask for itself.';


-- ---- sql/upgrade/0.2.0--0.3.0/950_operations.sql ----
-- ===========================================================================
-- operations (docs/operations.md): every object of sql/src/950_operations.sql is new in 0.3.0,
-- so this part is that file as is.
-- ===========================================================================
-- pg_agents: operations for DBAs (docs/operations.md).
--
--   agent.worker_status     the worker process (shared memory): state, slots,
--                           requests in flight, last tick and error, restarts
--   agent.queue_status      per workspace and priority: queued, running,
--                           waiting, oldest queued, started/finished in the
--                           last minute
--   agent.run_metrics       one row per run: times, tokens, LLM latencies,
--                           retries, error code (no content)
--   agent.run_stats(since)  per agent, provider and model: the figures above
--                           aggregated (counts, p50/p95/max, failure rate)
--   agent.pause_worker(), agent.resume_worker()   no new claims (a row of
--                           agent.worker_control: survives a restart)
--   agent.cancel_runs(...), agent.requeue_runs(...)   bulk, audited
--   pg_agents.log_runs      one LOG line per finished run (src/ops.c)
--
-- Who reads what: a role that may read a workspace under the rule of
-- sql/src/210_reads.sql (the application, an analytics role bound to it;
-- pg_agents.workspace names it) sees that workspace's rows; members of
-- pg_monitor (PostgreSQL's monitoring role) and superusers see every
-- workspace, and they alone see agent.worker_status (cluster-wide).  The
-- views run with their owner's rights on the tables and filter by the
-- querying role (current_user), as security barriers.

-- ---------------------------------------------------------------------------
-- Indexes the status views and run_stats use (cheap to maintain: a BRIN on
-- the times, which follow the physical order of an append-mostly table,
-- summarized by (auto)vacuum, the pages since then always read; and a
-- partial index on the few waiting runs)
-- ---------------------------------------------------------------------------
CREATE INDEX runs_times_brin ON agent.runs USING brin (created_at, started_at, finished_at)
  WITH (pages_per_range = 16);
CREATE INDEX runs_waiting_idx ON agent.runs (workspace_id, priority)
  WHERE status IN ('waiting_approval', 'waiting_input', 'waiting_children');

-- ---------------------------------------------------------------------------
-- The pause state
-- ---------------------------------------------------------------------------
CREATE TABLE agent.worker_control (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    paused     boolean NOT NULL DEFAULT false,
    changed_at timestamptz,
    changed_by text,
    reason     text
);
COMMENT ON TABLE agent.worker_control IS
  'The worker''s pause state (one row): agent.pause_worker() / agent.resume_worker() write it, the worker reads it at every tick, so that it survives a restart.';
COMMENT ON COLUMN agent.worker_control.id IS 'Always true: the table has one row.';
COMMENT ON COLUMN agent.worker_control.paused IS 'Whether the worker claims no new runs.';
COMMENT ON COLUMN agent.worker_control.changed_at IS 'When it was paused or resumed last.';
COMMENT ON COLUMN agent.worker_control.changed_by IS 'Database role (session user) that paused or resumed it last.';
COMMENT ON COLUMN agent.worker_control.reason IS 'Why it was paused, as given to agent.pause_worker().';
INSERT INTO agent.worker_control (id) VALUES (true);

-- ---------------------------------------------------------------------------
-- C parts (src/ops.c)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_status()
RETURNS TABLE(pid integer, database text, started_at timestamptz, state text, slots_in_use integer,
              max_concurrent_runs integer, llm_requests_in_flight integer, mcp_requests_in_flight integer,
              mcp_request_since timestamptz, last_tick timestamptz, last_error text, last_error_at timestamptz,
              restarts bigint, shmem_resets bigint)
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'pg_agents_worker_status';
COMMENT ON FUNCTION agent._worker_status() IS
  'Internal (agent.worker_status): the worker''s status from shared memory; no row when pg_agents is not in shared_preload_libraries.';

CREATE FUNCTION agent._worker_sync_pause(paused boolean) RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'pg_agents_worker_sync_pause';
COMMENT ON FUNCTION agent._worker_sync_pause(boolean) IS
  'Internal: the worker''s cached pause state takes this value when the transaction commits (at once in the worker).';

CREATE FUNCTION agent.run_error_code(error text) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_run_error_code';
COMMENT ON FUNCTION agent.run_error_code(text) IS
  'A stable word for the error text of a run (llm_timeout, llm_unreachable, llm_http_503, llm_malformed, max_iterations, token_budget, hourly_cap, worker_error, lease_expired, approval_expired, cancelled, ... or other); NULL for no error. Used by the run log and agent.run_metrics.';

CREATE FUNCTION agent._run_log() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_run_log';
COMMENT ON FUNCTION agent._run_log() IS
  'Internal trigger on agent.runs: a run that reached a terminal status is written as one LOG line when its transaction commits (pg_agents.log_runs = errors or all).';

-- every path that ends a run (finish_run, cancel, tick, the worker's batch,
-- a run created budget_exceeded by the hourly cap); nothing is queued for
-- the trigger while the log is off
CREATE TRIGGER runs_log_insert AFTER INSERT ON agent.runs
  FOR EACH ROW WHEN (coalesce(pg_catalog.current_setting('pg_agents.log_runs', true), 'off') <> 'off'
                     AND NEW.status IN ('succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired'))
  EXECUTE FUNCTION agent._run_log();
CREATE TRIGGER runs_log_finish AFTER UPDATE OF status ON agent.runs
  FOR EACH ROW WHEN (coalesce(pg_catalog.current_setting('pg_agents.log_runs', true), 'off') <> 'off'
                     AND OLD.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                     AND NEW.status IN ('succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired'))
  EXECUTE FUNCTION agent._run_log();

-- ---------------------------------------------------------------------------
-- agent.worker_status (superusers and pg_monitor)
-- ---------------------------------------------------------------------------
CREATE VIEW agent.worker_status WITH (security_barrier) AS
  SELECT w.pid, w.database, w.started_at, w.state, w.slots_in_use, w.max_concurrent_runs,
         w.llm_requests_in_flight, w.mcp_requests_in_flight, w.mcp_request_since,
         w.last_tick, pg_catalog.now() - w.last_tick AS last_tick_age,
         w.last_error, w.last_error_at, w.restarts, w.shmem_resets,
         coalesce(c.paused, false) AS paused, c.changed_at AS paused_changed_at,
         c.changed_by AS paused_changed_by, c.reason AS pause_reason
    FROM agent._worker_status() w
    -- the pause state is the one of the worker's database
    LEFT JOIN agent.worker_control c ON c.id AND w.database = pg_catalog.current_database()::text;
COMMENT ON VIEW agent.worker_status IS
  'The pg_agents worker of the cluster (one row; none when pg_agents is not preloaded): pid (NULL when it does not run), state (starting, waiting for extension, waiting for extension update, running, paused, draining, stopped), slots in use of max_concurrent_runs, LLM and MCP requests in flight, last tick, last error (redacted) and when, restarts since the postmaster started, and the pause state. Superusers and pg_monitor.';
COMMENT ON COLUMN agent.worker_status.pid IS 'Process id of the worker; NULL when it does not run.';
COMMENT ON COLUMN agent.worker_status.database IS 'Database it works in (pg_agents.database).';
COMMENT ON COLUMN agent.worker_status.started_at IS 'When the current (or last) worker process started.';
COMMENT ON COLUMN agent.worker_status.state IS 'starting, waiting for extension, waiting for extension update, running, paused, draining or stopped.';
COMMENT ON COLUMN agent.worker_status.slots_in_use IS 'Runs it executes now (runs waiting for a child not counted).';
COMMENT ON COLUMN agent.worker_status.max_concurrent_runs IS 'pg_agents.max_concurrent_runs as the worker sees it.';
COMMENT ON COLUMN agent.worker_status.llm_requests_in_flight IS 'LLM requests in flight.';
COMMENT ON COLUMN agent.worker_status.mcp_requests_in_flight IS 'MCP tool calls in flight (the worker waits on them).';
COMMENT ON COLUMN agent.worker_status.mcp_request_since IS 'Start of the MCP call in flight.';
COMMENT ON COLUMN agent.worker_status.last_tick IS 'Last successful tick (about once a second while it runs).';
COMMENT ON COLUMN agent.worker_status.last_tick_age IS 'now() - last_tick.';
COMMENT ON COLUMN agent.worker_status.last_error IS 'Last error of a unit of work of the worker (redacted, at most 255 bytes).';
COMMENT ON COLUMN agent.worker_status.last_error_at IS 'When it happened.';
COMMENT ON COLUMN agent.worker_status.restarts IS 'Worker starts since the postmaster started, minus one (kept over crash resets).';
COMMENT ON COLUMN agent.worker_status.shmem_resets IS 'Crash resets of shared memory since the postmaster started (a killed backend or worker).';
COMMENT ON COLUMN agent.worker_status.paused IS 'agent.pause_worker() is in force (read in the worker''s database; false elsewhere).';
COMMENT ON COLUMN agent.worker_status.paused_changed_at IS 'When it was paused or resumed last.';
COMMENT ON COLUMN agent.worker_status.paused_changed_by IS 'Who paused or resumed it last.';
COMMENT ON COLUMN agent.worker_status.pause_reason IS 'Reason given to agent.pause_worker().';

-- ---------------------------------------------------------------------------
-- agent.queue_status and agent.run_metrics: the workspaces the querying role
-- may read (sql/src/210_reads.sql), every one for pg_monitor and superusers
-- ---------------------------------------------------------------------------
CREATE VIEW agent.queue_status WITH (security_barrier) AS
  SELECT k.workspace_id, k.priority,
         count(*) FILTER (WHERE k.kind = 'queued') AS queued,
         count(*) FILTER (WHERE k.kind = 'running') AS running,
         count(*) FILTER (WHERE k.kind = 'waiting_approval') AS waiting_approval,
         count(*) FILTER (WHERE k.kind = 'waiting_input') AS waiting_input,
         count(*) FILTER (WHERE k.kind = 'waiting_children') AS waiting_children,
         min(k.at) FILTER (WHERE k.kind = 'queued') AS oldest_queued_at,
         pg_catalog.now() - min(k.at) FILTER (WHERE k.kind = 'queued') AS oldest_queued_age,
         count(*) FILTER (WHERE k.kind = 'started') AS started_last_minute,
         count(*) FILTER (WHERE k.kind = 'finished') AS finished_last_minute
    FROM (SELECT r.workspace_id, r.priority, r.status AS kind, r.created_at AS at
            FROM agent.runs r WHERE r.status = 'queued'
          UNION ALL
          SELECT r.workspace_id, r.priority, r.status, NULL FROM agent.runs r WHERE r.status = 'running'
          UNION ALL
          SELECT r.workspace_id, r.priority, r.status, NULL FROM agent.runs r
           WHERE r.status IN ('waiting_approval', 'waiting_input', 'waiting_children')
          UNION ALL
          SELECT r.workspace_id, r.priority, 'started', NULL FROM agent.runs r
           WHERE r.started_at >= pg_catalog.now() - interval '1 minute'
          UNION ALL
          SELECT r.workspace_id, r.priority, 'finished', NULL FROM agent.runs r
           WHERE r.finished_at >= pg_catalog.now() - interval '1 minute') k
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (k.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())))
   GROUP BY k.workspace_id, k.priority;
COMMENT ON VIEW agent.queue_status IS
  'The run queue per workspace and priority: queued, running and waiting runs, the oldest queued run and its age, runs started (first claimed) and finished in the last minute. A workspace appears while it has active runs or runs that started or finished in the last minute. Rows of the workspaces the querying role may read (pg_agents.workspace, bound analytics roles, the application); every workspace for pg_monitor and superusers.';
COMMENT ON COLUMN agent.queue_status.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.queue_status.priority IS 'Priority (higher is claimed first).';
COMMENT ON COLUMN agent.queue_status.queued IS 'Runs queued.';
COMMENT ON COLUMN agent.queue_status.running IS 'Runs claimed by an executor.';
COMMENT ON COLUMN agent.queue_status.waiting_approval IS 'Runs waiting for a human approval.';
COMMENT ON COLUMN agent.queue_status.waiting_input IS 'Runs waiting for an answer (teams).';
COMMENT ON COLUMN agent.queue_status.waiting_children IS 'Runs waiting for their delegated runs.';
COMMENT ON COLUMN agent.queue_status.oldest_queued_at IS 'Queue time (created_at) of the oldest queued run.';
COMMENT ON COLUMN agent.queue_status.oldest_queued_age IS 'now() - oldest_queued_at.';
COMMENT ON COLUMN agent.queue_status.started_last_minute IS 'Runs first claimed in the last minute.';
COMMENT ON COLUMN agent.queue_status.finished_last_minute IS 'Runs that reached a terminal status in the last minute.';

CREATE VIEW agent.run_metrics WITH (security_barrier) AS
  SELECT r.id AS run_id, r.workspace_id, r.agent_id, a.name AS agent_name, r.origin, r.trigger_id,
         r.parent_run_id, r.status,
         coalesce(a.scope ->> 'llm_provider', nullif(pg_catalog.current_setting('pg_agents.llm_provider', true), ''),
                  'openai') AS provider,
         pg_catalog.substring(coalesce(a.scope ->> 'llm_url', pg_catalog.current_setting('pg_agents.llm_url', true)),
                              '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\[[^]/]*\]|[^/:?#]*)') AS endpoint_host,
         r.model, r.created_at, r.started_at, r.finished_at,
         pg_catalog.date_part('epoch', r.started_at - r.created_at) * 1000 AS queue_ms,
         pg_catalog.date_part('epoch', r.finished_at - r.started_at) * 1000 AS duration_ms,
         r.tokens_in, r.tokens_out, NULL::bigint AS tokens_cached, r.tokens_total, r.attempts,
         agent.run_error_code(r.error) AS error_code,
         coalesce(s.llm_calls, 0) AS llm_calls, s.llm_ms, coalesce(s.retries, 0) AS retries
    FROM agent.runs r
    JOIN agent.agents a ON a.id = r.agent_id
    LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE st.kind = 'llm') AS llm_calls,
             pg_catalog.array_agg(pg_catalog.date_part('epoch', st.finished_at - st.started_at) * 1000 ORDER BY st.seq)
               FILTER (WHERE st.kind = 'llm' AND st.finished_at IS NOT NULL) AS llm_ms,
             count(*) FILTER (WHERE st.kind = 'error' AND st.status = 'retry') AS retries
        FROM agent.run_steps st
       WHERE st.run_id = r.id AND st.kind IN ('llm', 'error')) s ON true
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (r.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent.run_metrics IS
  'One row per run, without its content: ids, status, provider kind and endpoint host (the agent''s scope, else the settings, as they are now), model, times, queue wait and duration (ms), tokens, attempts, error code, LLM calls with their latencies (ms) and retries. Rows of the workspaces the querying role may read; every workspace for pg_monitor and superusers.';
COMMENT ON COLUMN agent.run_metrics.run_id IS 'Run.';
COMMENT ON COLUMN agent.run_metrics.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.run_metrics.agent_id IS 'Agent.';
COMMENT ON COLUMN agent.run_metrics.agent_name IS 'Agent name.';
COMMENT ON COLUMN agent.run_metrics.origin IS 'What queued it: chat, api, schedule, event, mention, delegation, rerun or draft.';
COMMENT ON COLUMN agent.run_metrics.trigger_id IS 'Trigger that queued it, if any.';
COMMENT ON COLUMN agent.run_metrics.parent_run_id IS 'Delegating run, for a child run.';
COMMENT ON COLUMN agent.run_metrics.status IS 'Run status.';
COMMENT ON COLUMN agent.run_metrics.provider IS 'LLM wire format: the agent''s scope llm_provider, else pg_agents.llm_provider (current values; per provider object once providers exist).';
COMMENT ON COLUMN agent.run_metrics.endpoint_host IS 'Host of the LLM endpoint: the agent''s scope llm_url, else pg_agents.llm_url (current values, host only).';
COMMENT ON COLUMN agent.run_metrics.model IS 'Model used (NULL before the first model call).';
COMMENT ON COLUMN agent.run_metrics.created_at IS 'When it was queued.';
COMMENT ON COLUMN agent.run_metrics.started_at IS 'When it was first claimed.';
COMMENT ON COLUMN agent.run_metrics.finished_at IS 'When it ended.';
COMMENT ON COLUMN agent.run_metrics.queue_ms IS 'started_at - created_at, in milliseconds.';
COMMENT ON COLUMN agent.run_metrics.duration_ms IS 'finished_at - started_at, in milliseconds.';
COMMENT ON COLUMN agent.run_metrics.tokens_in IS 'Prompt tokens of the run.';
COMMENT ON COLUMN agent.run_metrics.tokens_out IS 'Completion tokens of the run.';
COMMENT ON COLUMN agent.run_metrics.tokens_cached IS 'Cached prompt tokens: not reported by the worker yet (NULL).';
COMMENT ON COLUMN agent.run_metrics.tokens_total IS 'Tokens of the run and its descendants.';
COMMENT ON COLUMN agent.run_metrics.attempts IS 'Claims of the run.';
COMMENT ON COLUMN agent.run_metrics.error_code IS 'agent.run_error_code(error): a stable word, never the error text.';
COMMENT ON COLUMN agent.run_metrics.llm_calls IS 'LLM steps of the run.';
COMMENT ON COLUMN agent.run_metrics.llm_ms IS 'Latency of each LLM step (finished_at - started_at, ms), in order.';
COMMENT ON COLUMN agent.run_metrics.retries IS 'LLM calls retried (429, 5xx, time-outs): error steps with status retry.';

CREATE FUNCTION agent.run_stats(since timestamptz DEFAULT now() - interval '1 day')
RETURNS TABLE(workspace_id text, agent_id bigint, agent_name text, provider text, endpoint_host text,
              model text, runs bigint, succeeded bigint, failed bigint, budget_exceeded bigint,
              cancelled bigint, expired bigint, active bigint, failure_rate numeric,
              duration_p50_ms double precision, duration_p95_ms double precision,
              duration_max_ms double precision, queue_p50_ms double precision,
              queue_p95_ms double precision, queue_max_ms double precision, llm_calls bigint,
              llm_p50_ms double precision, llm_p95_ms double precision, llm_max_ms double precision,
              tokens_in numeric, tokens_out numeric, tokens_cached numeric, retries bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  WITH m AS MATERIALIZED (
    SELECT * FROM agent.run_metrics m WHERE m.created_at >= run_stats.since),
  g AS (
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model,
           count(*) AS runs,
           count(*) FILTER (WHERE m.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE m.status = 'failed') AS failed,
           count(*) FILTER (WHERE m.status = 'budget_exceeded') AS budget_exceeded,
           count(*) FILTER (WHERE m.status = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE m.status = 'expired') AS expired,
           count(*) FILTER (WHERE m.status IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children')) AS active,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY m.duration_ms) AS duration_p50_ms,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY m.duration_ms) AS duration_p95_ms,
           max(m.duration_ms) AS duration_max_ms,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY m.queue_ms) AS queue_p50_ms,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY m.queue_ms) AS queue_p95_ms,
           max(m.queue_ms) AS queue_max_ms,
           sum(m.llm_calls)::bigint AS llm_calls,
           sum(m.tokens_in) AS tokens_in, sum(m.tokens_out) AS tokens_out, sum(m.tokens_cached) AS tokens_cached,
           sum(m.retries)::bigint AS retries
      FROM m
     GROUP BY m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model),
  l AS (
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY x.ms) AS llm_p50_ms,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY x.ms) AS llm_p95_ms,
           max(x.ms) AS llm_max_ms
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS x(ms)
     GROUP BY m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model)
  SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model,
         g.runs, g.succeeded, g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active,
         round((g.failed + g.budget_exceeded + g.expired)::numeric
               / nullif(g.succeeded + g.failed + g.budget_exceeded + g.cancelled + g.expired, 0), 4),
         g.duration_p50_ms, g.duration_p95_ms, g.duration_max_ms,
         g.queue_p50_ms, g.queue_p95_ms, g.queue_max_ms,
         g.llm_calls, l.llm_p50_ms, l.llm_p95_ms, l.llm_max_ms,
         g.tokens_in, g.tokens_out, g.tokens_cached, g.retries
    FROM g
    LEFT JOIN l ON l.workspace_id = g.workspace_id AND l.agent_id = g.agent_id
               AND l.provider IS NOT DISTINCT FROM g.provider
               AND l.endpoint_host IS NOT DISTINCT FROM g.endpoint_host
               AND l.model IS NOT DISTINCT FROM g.model
   ORDER BY g.workspace_id, g.agent_id, g.provider, g.endpoint_host, g.model
$$;
COMMENT ON FUNCTION agent.run_stats(timestamptz) IS
  'Per workspace, agent, provider (kind and endpoint host) and model, over the runs queued since the given time (default: the last day): runs by status, failure rate (failed, budget_exceeded and expired over ended runs), p50/p95/max of duration, queue wait and LLM latency (ms), tokens in/out/cached, LLM calls and retries. Computed from agent.run_metrics, so scoped like it: the workspaces the caller may read; every workspace for pg_monitor and superusers.';

-- ---------------------------------------------------------------------------
-- Controls: pause and resume (superuser), audited
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent.pause_worker(reason text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_was boolean;
BEGIN
  SELECT c.paused INTO v_was FROM agent.worker_control c WHERE c.id FOR UPDATE;
  UPDATE agent.worker_control c
     SET paused = true, changed_at = now(), changed_by = session_user::text, reason = pause_worker.reason
   WHERE c.id;
  PERFORM agent._worker_sync_pause(true);
  PERFORM agent._audit_event('worker.pause', 'success', 'worker', pg_catalog.current_database()::text, NULL, NULL,
                             pg_catalog.jsonb_build_object('reason', pause_worker.reason, 'was_paused', coalesce(v_was, false)),
                             'the worker claims no new runs', NULL);
  RETURN NOT coalesce(v_was, false);
END
$$;
COMMENT ON FUNCTION agent.pause_worker(text) IS
  'Pauses the worker: from the commit on it claims no new runs; runs in flight go on to their end or their next wait. Kept in agent.worker_control of the worker''s database (pg_agents.database; elsewhere it only warns), so it survives a restart. Superuser only; audited. Returns false when it was already paused.';

CREATE FUNCTION agent.resume_worker() RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_was boolean;
BEGIN
  SELECT c.paused INTO v_was FROM agent.worker_control c WHERE c.id FOR UPDATE;
  UPDATE agent.worker_control c
     SET paused = false, changed_at = now(), changed_by = session_user::text, reason = NULL
   WHERE c.id;
  PERFORM agent._worker_sync_pause(false);
  PERFORM agent._audit_event('worker.resume', 'success', 'worker', pg_catalog.current_database()::text, NULL, NULL,
                             pg_catalog.jsonb_build_object('was_paused', coalesce(v_was, false)),
                             'the worker claims runs again', NULL);
  RETURN coalesce(v_was, false);
END
$$;
COMMENT ON FUNCTION agent.resume_worker() IS
  'Resumes a paused worker (it claims runs again at once). Superuser only; audited. Returns false when it was not paused.';

-- ---------------------------------------------------------------------------
-- The drain of SIGTERM (src/worker.c): the runs the worker still holds go
-- back to the queue, their saved conversation kept, the claim not counted
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._worker_requeue(p_run_ids bigint[], p_worker_pid integer) RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
  n integer := 0;
BEGIN
  FOR r IN
    UPDATE agent.runs x
       SET status = 'queued', lease_until = NULL, attempts = greatest(x.attempts - 1, 0)
     WHERE x.id = ANY (p_run_ids) AND x.status = 'running'
       AND EXISTS (SELECT 1 FROM agent.run_state s WHERE s.run_id = x.id AND s.worker_pid = p_worker_pid)
    RETURNING x.*
  LOOP
    UPDATE agent.run_state s SET worker_pid = NULL WHERE s.run_id = r.id;
    PERFORM agent._audit_run('run.requeue', r, 'success',
                             jsonb_build_object('status', 'queued', 'attempts', r.attempts, 'reason', 'drain'),
                             format('run %s re-queued: the worker stopped (drain)', r.id));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
COMMENT ON FUNCTION agent._worker_requeue(bigint[], integer) IS
  'Internal (worker drain): the running runs among these that this worker process holds go back to the queue (attempts not counted; the conversation in agent.run_state kept); audited; returns how many.';

-- ---------------------------------------------------------------------------
-- Bulk cancel (superuser; the application within its session's workspace)
-- and bulk re-run (superuser)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent.cancel_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                  status text DEFAULT NULL, by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
    SELECT * INTO a FROM agent.agents x WHERE x.id = agent_id;
    IF NOT FOUND OR NOT agent._workspace_ok(a.workspace_id)
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
    SELECT x.id, coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.id = x.root_run_id), x.id) AS root
      FROM agent.runs x
     WHERE x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
       AND (status IS NULL OR x.status = status)
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
     ORDER BY x.id
  LOOP
    PERFORM agent._lock_tree(c.root);
    -- still active (and still of that status) once its tree is ours
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.id = c.id
                                 AND x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                                 AND (status IS NULL OR x.status = status));
    IF agent._finish_run(c.id, 'cancelled', NULL, format('cancelled by %s (bulk cancel)', v_who)) THEN
      v_n := v_n + 1;
      k := (SELECT x.workspace_id FROM agent.runs x WHERE x.id = c.id);
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

CREATE FUNCTION agent.requeue_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                   status text DEFAULT 'failed',
                                   since timestamptz DEFAULT now() - interval '1 hour',
                                   by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  o    agent.runs%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_n  integer := 0;
  v_who text := coalesce(nullif(by_user, ''), 'dba:' || session_user::text);
BEGIN
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
      JOIN agent.agents a ON a.id = x.agent_id
     WHERE x.status = status AND x.finished_at >= since AND x.parent_run_id IS NULL
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
       AND a.deleted_at IS NULL AND (x.regime = 'manual' OR a.status = 'active')
       -- not re-run already (by an earlier call)
       AND NOT EXISTS (SELECT 1 FROM agent.runs y
                        WHERE y.agent_id = x.agent_id AND y.created_at >= x.finished_at
                          AND y.origin = 'rerun' AND y.input ->> 'rerun_of' = x.id::text)
     ORDER BY x.id
  LOOP
    v_id := agent._enqueue_run(o.agent_id, o.regime, 'rerun', o.input || jsonb_build_object('rerun_of', o.id),
                               NULL, o.requested_by);
    SELECT * INTO n FROM agent.runs x WHERE x.id = v_id;
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

-- ---- sql/upgrade/0.2.0--0.3.0/980_search_path.sql ----
-- ===========================================================================
-- Every function of the extension that pinned search_path = pg_catalog now
-- pins pg_catalog, pg_temp (pg_temp last, so that no temporary object ever
-- shadows a name the function resolves; functions redefined by the parts
-- above already have it).
-- ===========================================================================
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure
      FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                                  AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
      JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid AND x.extname = 'pg_agents'
     WHERE p.proconfig @> ARRAY['search_path=pg_catalog']
  LOOP
    EXECUTE pg_catalog.format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
  END LOOP;
END
$$;

-- ---- sql/src/990_privileges.sql ----
-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md, "Roles").
--
-- Install and upgrade both end with this file, so it states the whole model
-- and stays idempotent: first nobody but the owner may do anything, then each
-- role of the model gets exactly its list.  test/sql/security_privileges.sql
-- prints the resulting matrix (every function and relation of the schema,
-- per role), so that a new object without a deliberate line here shows up.
--
--   PUBLIC           pure helpers (cron, canonical json, redaction, identity
--                    getters) and what row-level security on application
--                    tables evaluates as any querying role
--   agents_app       the application: the API that takes user ids on trust,
--                    the documented direct writes, workspace-scoped reads
--   agents_executor  an external executor: claim, lease, usage, finish,
--                    approvals, delegation, tick
--   agents_reader    analytics: audit and run data of the workspaces a DBA
--                    bound to it (agent.bind_reader)
--   agents_tool      tool SQL of the worker: nothing in schema agent beyond
--                    what the access checks evaluate as it
-- Everything not listed (internal agent._* functions, maintenance, the MCP
-- server registry, secrets) is for the owner (a superuser) only.
-- ===========================================================================

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool;
REVOKE ALL ON ALL TABLES IN SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool;
REVOKE ALL ON SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool;
-- The audit log is written by the C code only, even by its owner.
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON agent.audit_log FROM CURRENT_USER;

-- Schema usage: the policies and triggers the extension puts on application
-- tables name objects of schema agent, and any role may query those tables.
GRANT USAGE ON SCHEMA agent TO PUBLIC;

-- ---------------------------------------------------------------------------
-- PUBLIC: pure functions and what row-level security evaluates
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  agent.current_workspace(), agent.current_actor(), agent.current_agent_id(),
  agent.set_identity(text, text, bigint, text, text),
  agent.cron_valid(text), agent.cron_describe(text),
  agent.cron_next(text, timestamptz, text), agent.cron_upcoming(text, integer, timestamptz, text),
  agent.canonical_json(jsonb), agent.approval_key(text, jsonb), agent.redact(jsonb),
  agent.validate_filter(jsonb), agent.delegation_depth_limit(),
  agent.readable_set_stats(),
  -- the allowlist policies on application tables (the agent comes from the
  -- session's identity, never from an argument)
  agent._allowlist_active(), agent._allowlist_custom_acl(),
  agent._allowlist_ids_text(text, text), agent._allowlist_ids_int8(text, text),
  agent._allowlist_ids_uuid(text, text),
  -- autonomous decisions only: a user id is refused unless the caller is
  -- the application (src/access.c); the custom-ACL policy shape calls it
  agent.can_access(bigint, text, text, text, text, text),
  agent.explain_access(bigint, text, text, text, text, text)
TO PUBLIC;

-- ---------------------------------------------------------------------------
-- agents_app: the application
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  -- access, sharing, lifecycle
  agent.user_can(text, bigint, text), agent.activity_scope(text, bigint),
  agent.visible_agents(text), agent.share(bigint, text, text, text),
  agent.unshare(bigint, text, text), agent."grant"(bigint, text, text, text, text),
  agent.revoke(bigint, text, text, text), agent.readable_resources(bigint, text, text),
  agent.create_agent(text, text, text, jsonb), agent.save_settings(bigint, jsonb, text, text),
  agent.restore_version(bigint, text), agent.duplicate(bigint, text),
  agent.set_status(bigint, text, text), agent.delete_agent(bigint, text),
  -- audit
  agent.audit_table(regclass, text, name, name), agent.unaudit_table(regclass),
  agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer),
  -- runs, delegation, approvals
  agent.start_run(bigint, text, jsonb, text, text), agent.rerun(bigint, text),
  agent.cancel_run(bigint, text), agent.delegate(bigint, bigint, text, jsonb, integer),
  agent.try_delegate(bigint, bigint, text, jsonb, integer),
  agent.approve(text, text), agent.deny(text, text),
  agent.approve(text, text, bigint), agent.deny(text, text, bigint),
  -- events
  agent.fire_event(text, text, text, jsonb, text, text), agent.filter_matches(jsonb, jsonb),
  agent.watch_table(regclass, text, name, text[], name), agent.unwatch_table(regclass),
  -- (registering resource tables and allowlists is a DBA's: it grants the
  -- tool role access and installs policies; superuser only)
  agent.follow_relation(text, text, name),
  -- MCP (status of the session's workspace)
  agent.mcp_status(text, text),
  -- activity, insights, assisted creation, teams
  agent.activity(bigint, text, text, bigint, timestamptz, timestamptz, integer),
  agent.run_detail(bigint, text), agent.insights(bigint, text, timestamptz, timestamptz),
  agent.generate_draft(text, text, text), agent.draft(bigint, text),
  agent.create_from_draft(jsonb, text), agent.send_to_run(bigint, text, text),
  agent.run_tree(bigint)
TO agents_app;
-- the direct writes the SPEC documents (grants, ACL rows, group members,
-- triggers, statuses); every one is checked, filled and audited by triggers
GRANT SELECT, INSERT, UPDATE, DELETE ON agent.access, agent.resource_acl, agent.group_members, agent.triggers
  TO agents_app;
GRANT SELECT ON agent.agents, agent.shares, agent.versions, agent.runs, agent.run_steps,
                agent.approvals, agent.run_messages, agent.audit_log, agent.audit_summary,
                agent.audited_tables, agent.watched_tables, agent.resource_tables,
                agent.allowlist_tables, agent.relations, agent.templates, agent.insights,
                agent.mcp_status
  TO agents_app;
GRANT UPDATE (status) ON agent.agents TO agents_app;
GRANT USAGE ON SEQUENCE agent.triggers_id_seq TO agents_app;

-- ---------------------------------------------------------------------------
-- agents_executor: an external executor (docs/runs.md)
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  agent.claim_runs(integer), agent.renew_lease(bigint), agent.wait_for_children(bigint),
  agent.add_usage(bigint, integer, integer, text), agent.finish_run(bigint, text, jsonb, text),
  agent.request_approval(bigint, text, jsonb), agent.consume_approval(bigint, text, jsonb),
  agent.delegate(bigint, bigint, text, jsonb, integer),
  agent.try_delegate(bigint, bigint, text, jsonb, integer),
  agent.delegation_context(bigint), agent.tick(timestamptz)
TO agents_executor;

-- ---------------------------------------------------------------------------
-- agents_reader: analytics, per bound workspace (row-level security)
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer)
TO agents_reader;
GRANT SELECT ON agent.audit_log, agent.audit_summary, agent.runs, agent.run_steps, agent.insights,
                agent.reader_workspaces
  TO agents_reader;
GRANT SELECT ON agent.reader_workspaces TO agents_app;

-- ---------------------------------------------------------------------------
-- agents_tool: nothing more in schema agent.  What the worker's tools read
-- of it goes through C (agent.can_access's direct index scans) and the
-- functions PUBLIC has; application tables are granted to it by
-- agent.register_resource_table.
-- ---------------------------------------------------------------------------
-- following relations out of a granted row, as the session acting as an
-- agent; a cut target is recorded by agent._allowlist_denied, which writes
-- only into a running run of that agent (sql/src/500_allowlist.sql)
GRANT EXECUTE ON FUNCTION agent.follow_relation(text, text, name),
                          agent._allowlist_denied(text, text, text, jsonb)
  TO agents_tool, agents_app;
-- the registries of resource tables and relations (no data of any tenant)
GRANT SELECT ON agent.resource_tables, agent.allowlist_tables, agent.relations TO agents_tool;
-- evaluated by the read policies (sql/src/210_reads.sql) as the reading role
GRANT EXECUTE ON FUNCTION agent._may_read_workspace(text) TO agents_app, agents_reader;
-- functions the view agent.insights calls run with the rights of its reader:
-- they reveal nothing but the session's own workspace and two status classes
GRANT EXECUTE ON FUNCTION agent._session_workspace(), agent._run_failed(text), agent._run_is_active(text)
  TO agents_app, agents_reader;
-- triggers are settings: created, changed and deleted through the API (each
-- change versioned and audited; direct writes to agent.triggers likewise)
GRANT EXECUTE ON FUNCTION agent.set_trigger(bigint, jsonb, text), agent.delete_trigger(bigint, text)
  TO agents_app;
-- ops: operations (sql/src/950_operations.sql, docs/operations.md).  The
-- status views filter rows by the querying role: the workspaces it may read
-- (agent._may_read_workspace, as the read policies), every one for
-- pg_monitor (PostgreSQL's monitoring role) and superusers.  The worker's
-- status is cluster-wide: pg_monitor only.  pause_worker, resume_worker and
-- requeue_runs are for superusers; cancel_runs also for the application,
-- within the session's workspace.
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION agent.run_error_code(text) TO PUBLIC;
GRANT SELECT ON agent.queue_status, agent.run_metrics TO agents_app, agents_reader, pg_monitor;
GRANT EXECUTE ON FUNCTION agent.run_stats(timestamptz) TO agents_app, agents_reader, pg_monitor;
GRANT EXECUTE ON FUNCTION agent._may_read_workspace(text) TO pg_monitor;
GRANT SELECT ON agent.worker_status TO pg_monitor;
GRANT EXECUTE ON FUNCTION agent._worker_status() TO pg_monitor;
GRANT EXECUTE ON FUNCTION agent.cancel_runs(bigint, text, text, text) TO agents_app;
-- mcp: OAuth 2.1 of MCP servers (sql/src/705_mcp_oauth.sql): the application
-- starts an authorization for a user (taken on trust) and completes it from
-- its redirect handler; it reads the secret-free status.  agent.mcp_oauth
-- (tokens, secrets), agent.mcp_set_oauth and agent.mcp_oauth_refresh_due
-- stay superuser-only.
GRANT EXECUTE ON FUNCTION agent.mcp_authorize(bigint, text, text),
                          agent.mcp_authorization_callback(text, text, text)
  TO agents_app;
GRANT SELECT ON agent.mcp_oauth_status TO agents_app;
-- mcp: elicitation through people (sql/src/706_mcp_elicitation.sql): the
-- application shows the pending questions and answers them for a user
-- (taken on trust; agent.approve checks that user may approve the run).
GRANT EXECUTE ON FUNCTION agent.answer_elicitation(text, jsonb, text) TO agents_app;
GRANT SELECT ON agent.mcp_pending_input TO agents_app;
