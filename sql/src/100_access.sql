-- pg_agents: access (§7.1, §7.2), sharing (§7.4), lifecycle (P3-T03, T06).
--
--   agent.can_access / agent.explain_access   C, src/access.c
--   agent.set_acl_function                    where the users' ACL comes from
--   agent.grant / agent.revoke                what an autonomous agent may touch
--   agent.share / unshare / user_can / visible_agents / activity_scope
--   agent.create_agent / save_settings / restore_version / duplicate
--   agent.set_trigger / delete_trigger          triggers are settings (versioned,
--                                               audited, direct writes too)
--   agent.set_status / delete_agent
--
-- Whoever grants (grant, save_settings, restore_version) grants only what
-- they may read themselves (agent._deputy_filter, the rule duplicate uses).
--
-- See docs/access.md.

-- ---------------------------------------------------------------------------
-- Where the users' ACL comes from
-- ---------------------------------------------------------------------------

CREATE TABLE agent.access_config (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    acl_function regprocedure,
    updated_by   text,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
INSERT INTO agent.access_config (singleton) VALUES (true);
COMMENT ON TABLE agent.access_config IS 'One row: the access settings (the ACL function; NULL uses agent.resource_acl and agent.group_members).';
COMMENT ON COLUMN agent.access_config.singleton IS 'Always true: the table has one row.';
COMMENT ON COLUMN agent.access_config.acl_function IS 'Function (user_id text, resource_type text, resource_id text, mode text) RETURNS boolean answering the users'' ACL, or NULL for the default tables.';
COMMENT ON COLUMN agent.access_config.updated_by IS 'Database user who last changed it.';
COMMENT ON COLUMN agent.access_config.updated_at IS 'When it was last changed.';

CREATE FUNCTION agent.set_acl_function(fn regprocedure) RETURNS void
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

-- ---------------------------------------------------------------------------
-- The access check (C)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.can_access(agent_id bigint, resource_type text, resource_id text,
                                 mode text DEFAULT 'read', regime text DEFAULT 'autonomous',
                                 user_id text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_agents_can_access'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION agent.can_access(bigint, text, text, text, text, text) IS
  'May the agent touch the resource at the mode (read/edit) under the regime (manual: as user_id; autonomous: grants ∩ owner''s ACL)? Bad arguments raise 22023.';

CREATE FUNCTION agent.explain_access(agent_id bigint, resource_type text, resource_id text,
                                     mode text DEFAULT 'read', regime text DEFAULT 'autonomous',
                                     user_id text DEFAULT NULL)
RETURNS TABLE(allowed boolean, reason text, detail text)
AS 'MODULE_PATHNAME', 'pg_agents_explain_access'
LANGUAGE C STABLE PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION agent.explain_access(bigint, text, text, text, text, text) IS
  'The decision of agent.can_access with its reason code and a detail in clear; invalid mode/regime and a missing user give a row instead of an error.';

-- ---------------------------------------------------------------------------
-- Sharing levels (§7.4)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._level_rank(level text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT CASE level WHEN 'full' THEN 3 WHEN 'edit' THEN 2 WHEN 'interact' THEN 1 ELSE 0 END $$;
COMMENT ON FUNCTION agent._level_rank(text) IS 'Internal: full 3, edit 2, interact 1, none 0.';

-- The level an action needs (NULL for an unknown action).
CREATE FUNCTION agent._action_level(action text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE action
    WHEN 'chat' THEN 'interact' WHEN 'view_settings' THEN 'interact'
    WHEN 'duplicate' THEN 'interact'
    WHEN 'edit_settings' THEN 'edit'
    WHEN 'share' THEN 'full' WHEN 'view_activity' THEN 'full' WHEN 'view_insights' THEN 'full'
    WHEN 'delete' THEN 'full' WHEN 'suspend' THEN 'full'
  END
$$;
COMMENT ON FUNCTION agent._action_level(text) IS
  'Internal: the lowest level an action needs (§7.4), NULL for an unknown action.';

\ir ../functions/agent._user_level.sql

CREATE FUNCTION agent.user_can(user_id text, agent_id bigint, action text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_need text := agent._action_level(action);
BEGIN
  IF v_need IS NULL THEN
    RAISE EXCEPTION 'unknown action "%"', coalesce(action, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An action is one of chat, view_settings, edit_settings, share, view_activity, view_insights, duplicate, delete, suspend.';
  END IF;
  IF user_id IS NULL OR agent_id IS NULL THEN
    RETURN false;
  END IF;
  RETURN agent._level_rank(agent._user_level(user_can.user_id, user_can.agent_id)) >= agent._level_rank(v_need);
END
$$;
COMMENT ON FUNCTION agent.user_can(text, bigint, text) IS
  'May the user do the action on the agent (§7.4 matrix: full everything, the full Activity and Insights included; edit chat, view_settings, edit_settings, duplicate; interact chat, view_settings, duplicate; edit and interact see their own manual runs, see agent.activity_scope)? Deleted or unknown agent: false.';

CREATE FUNCTION agent.activity_scope(user_id text, agent_id bigint) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE agent._user_level(activity_scope.user_id, activity_scope.agent_id)
           WHEN 'full' THEN 'all' WHEN 'edit' THEN 'own_manual' WHEN 'interact' THEN 'own_manual' END
$$;
COMMENT ON FUNCTION agent.activity_scope(text, bigint) IS
  'Which runs of the agent the user may see in Activity: all (full), own_manual (edit, interact: only the manual runs they asked for), NULL (no access).';

\ir ../functions/agent.visible_agents.sql

-- The agent row, locked, after checking that it exists and that by_user
-- holds the level the action needs.  by_user NULL is allowed only when
-- p_allow_system (an application or DBA call without a user).
\ir ../functions/agent._agent_for.sql

-- The tenant boundary first: an agent of another workspace than the
-- session's is "does not exist", exactly like a missing one (and before the
-- level check, which would tell it exists).  Then agent._agent_for.
\ir ../functions/agent._agent_named.sql

\ir ../functions/agent.share.sql
REVOKE ALL ON FUNCTION agent.share(bigint, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.share(bigint, text, text, text) IS
  'Shares the agent with user:<id> or group:<id> at full, edit or interact (replacing a previous level); by_user needs full.';

\ir ../functions/agent.unshare.sql
REVOKE ALL ON FUNCTION agent.unshare(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.unshare(bigint, text, text) IS
  'Removes the share of the agent with user:<id> or group:<id>; true when there was one. by_user needs full.';

-- ---------------------------------------------------------------------------
-- Grants (§7.2)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._check_grant(p_type text, p_id text, p_access text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_type IS NULL OR p_type NOT IN ('page', 'collection', 'skill', 'agent', 'workspace_shared') THEN
    RAISE EXCEPTION 'invalid resource type "%"', coalesce(p_type, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A grant is on a page, collection, skill, agent or workspace_shared.';
  END IF;
  IF p_id IS NULL OR length(p_id) NOT BETWEEN 1 AND 500 THEN
    RAISE EXCEPTION 'invalid resource id "%"', coalesce(p_id, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A resource id has 1 to 500 characters.';
  END IF;
  IF p_type = 'workspace_shared' AND p_id <> '*' THEN
    RAISE EXCEPTION 'invalid resource id "%" for workspace_shared', p_id
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The workspace_shared grant has the resource id *.';
  END IF;
  IF p_access IS NULL OR p_access NOT IN ('read', 'edit') THEN
    RAISE EXCEPTION 'invalid access "%"', coalesce(p_access, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'An access is read or edit.';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._check_grant(text, text, text) IS
  'Internal: refuses (22023) a grant with a bad resource type, id or access.';

\ir ../functions/agent.grant.sql
REVOKE ALL ON FUNCTION agent.grant(bigint, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.grant(bigint, text, text, text, text) IS
  'Grants the agent read or edit on a resource (replacing a previous grant) and writes a version; by_user needs edit on the agent and, unless they own it, must read (for edit: edit) the resource themselves, 42501 otherwise (NULL: an application call, unchecked). An agent of another workspace is 42704.';

\ir ../functions/agent.revoke.sql
REVOKE ALL ON FUNCTION agent.revoke(bigint, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.revoke(bigint, text, text, text) IS
  'Removes the agent''s grant on a resource (writing a version when there was one); true when there was one. by_user needs edit (NULL: an application call). An agent of another workspace is 42704.';

-- ---------------------------------------------------------------------------
-- Settings, snapshots, versions (P3-T03, P3-T06)
-- ---------------------------------------------------------------------------

\ir ../functions/agent._check_settings.sql
COMMENT ON FUNCTION agent._check_settings(jsonb) IS
  'Internal: refuses (22023) settings with an unknown key or a value of the wrong shape, naming the key; the scope''s approval keys are checked by agent._check_scope.';

-- A delegation list names only agents of the delegating agent's workspace:
-- every id must be an agent of it (one of another workspace is refused
-- exactly like an unknown one), not deleted unless it was already listed
-- (so that a save or a restore keeps working after a deletion).
\ir ../functions/agent._check_delegation.sql

-- Applies checked settings to the agent (grants: the "access" list replaces them).
\ir ../functions/agent._apply_settings.sql

-- A trigger's settings: the form of version snapshots and of audit rows.
-- (agent._snapshot builds the same object inline: keep the two alike)
-- (plpgsql: the column conversation is added later, in 810_conversations)
\ir ../functions/agent._trigger_json.sql

\ir ../functions/agent._snapshot.sql

-- The sections that differ between two snapshots, comma-separated.
CREATE FUNCTION agent._changed_sections(p_old jsonb, p_new jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce(string_agg(sect, ', ' ORDER BY ord), '')
  FROM (VALUES (1, 'name', ARRAY['name']),
               (2, 'instructions', ARRAY['instructions', 'instruction_page_id']),
               (3, 'model', ARRAY['model']),
               (4, 'approval', ARRAY['approval_mode']),
               (5, 'scope', ARRAY['scope']),
               (6, 'access', ARRAY['access']),
               (7, 'triggers', ARRAY['triggers']),
               (8, 'web_access', ARRAY['web_access']),
               (9, 'delegation', ARRAY['delegation']),
               (10, 'limits', ARRAY['max_iterations', 'hourly_run_cap', 'credit_limit_monthly', 'default_token_budget']))
       AS s(ord, sect, keys)
  WHERE EXISTS (SELECT 1 FROM unnest(keys) k
                 WHERE (p_old -> k) IS DISTINCT FROM (p_new -> k))
$$;
COMMENT ON FUNCTION agent._changed_sections(jsonb, jsonb) IS
  'Internal: the settings sections (name, instructions, model, approval, scope, access, triggers, web_access, delegation, limits) that differ between two snapshots.';

-- Writes the next version of the agent; p_note NULL gets the automatic note.
\ir ../functions/agent._write_version.sql

\ir ../functions/agent.create_agent.sql
REVOKE ALL ON FUNCTION agent.create_agent(text, text, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.create_agent(text, text, text, jsonb) IS
  'Creates an agent owned by owner_id (who holds full implicitly) with optional settings, and writes version 1.';

\ir ../functions/agent.save_settings.sql
REVOKE ALL ON FUNCTION agent.save_settings(bigint, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.save_settings(bigint, jsonb, text, text) IS
  'Saves settings (edit level): checks every key, applies them, writes a version whose note lists the changed sections, audits. A grant the agent does not hold yet (or raised to edit), a new instruction page and a new delegable agent need by_user''s own access (42501). Returns the version id.';

\ir ../functions/agent.restore_version.sql
REVOKE ALL ON FUNCTION agent.restore_version(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.restore_version(bigint, text) IS
  'Restores a version (edit level): a new version made from the old snapshot, grants and triggers included (triggers of the snapshot recreated or updated, the others disabled, never deleted); history is never rewritten. What by_user cannot read themselves is left out (NOTICE, version note, audit row). Returns the new version id.';

-- May the user read the resource, on their own ACL (in the agent's workspace)?
\ir ../functions/agent._user_reads.sql

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
\ir ../functions/agent._deputy_filter.sql

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

\ir ../functions/agent._duplicate.sql
REVOKE ALL ON FUNCTION agent._duplicate(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._duplicate(bigint, text) IS
  'Internal: the body of agent.duplicate.';

CREATE FUNCTION agent.duplicate(agent_id bigint, by_user text)
RETURNS TABLE(agent_id bigint, report jsonb)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT d.new_agent_id, d.report FROM agent._duplicate($1, $2) d $$;
REVOKE ALL ON FUNCTION agent.duplicate(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.duplicate(bigint, text) IS
  'Private copy owned by by_user (duplicate level; an agent of another workspace than the session''s is unknown, 42704): name suffixed " (copy)", instructions and model kept; grants, triggers (copied disabled), instruction page and delegation filtered by by_user''s own access; the report lists exactly what was dropped and why. Shares, tool connections (scope), limits and history are not copied.';

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

\ir ../functions/agent._history_hold.sql

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
\ir ../functions/agent._trigger_direct_write.sql

\ir ../functions/agent._triggers_history.sql
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

\ir ../functions/agent.set_trigger.sql
REVOKE ALL ON FUNCTION agent.set_trigger(bigint, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.set_trigger(bigint, jsonb, text) IS
  'Creates a trigger of the agent, or changes it when "trigger" has an id (keys given replace, others are kept); edit level (42501; by_user NULL: an application call). Keys: kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation; validated as every trigger write (22023). A watched page, collection, skill or agent must be readable by by_user. Writes one version (its note names the trigger) and one audit row (agent.trigger.create/update). An agent or trigger of another workspace is 42704. Returns the trigger id.';

\ir ../functions/agent.delete_trigger.sql
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
\ir ../functions/agent._restore_triggers.sql

\ir ../functions/agent.set_status.sql
REVOKE ALL ON FUNCTION agent.set_status(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.set_status(bigint, text, text) IS
  'Suspends or resumes an agent (full level). Suspension stops new autonomous runs, not chat.';

\ir ../functions/agent.delete_agent.sql
REVOKE ALL ON FUNCTION agent.delete_agent(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.delete_agent(bigint, text) IS
  'Soft-deletes an agent (full level): deleted_at is set; it loses every access and every level, and its history stays.';

-- The internal pieces run inside the SECURITY DEFINER functions above.
REVOKE ALL ON FUNCTION agent._agent_for(bigint, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._apply_settings(bigint, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._write_version(bigint, text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._snapshot(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._agent_named(bigint, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._deputy_filter(bigint, text, jsonb, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._history_hold(bigint, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._trigger_history(agent.agents, text, bigint, jsonb, jsonb, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._trigger_direct_write(bigint, text, bigint, jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._triggers_history() FROM PUBLIC;
REVOKE ALL ON FUNCTION agent._restore_triggers(bigint, jsonb, text) FROM PUBLIC;
REVOKE ALL ON TABLE agent._history_holds FROM PUBLIC;
