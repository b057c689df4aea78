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

CREATE FUNCTION agent._user_level(p_user_id text, p_agent_id bigint) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- an agent of another workspace than the session's is nobody's: every
  -- statement names the session's workspace (Citus routes by it); a session
  -- bound to none takes the agent's own
  v_ws text := agent._session_workspace();
  v_r  integer;
BEGIN
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = p_agent_id;
  END IF;
  SELECT max(l.r) INTO v_r
  FROM (
    SELECT 3 AS r FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.id = p_agent_id AND a.deleted_at IS NULL AND a.owner_id = p_user_id
    UNION ALL
    SELECT agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
     WHERE s.workspace_id = v_ws AND s.agent_id = p_agent_id AND a.deleted_at IS NULL AND s.user_id = p_user_id
    UNION ALL
    SELECT agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
      JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = p_user_id
                                AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
     WHERE s.workspace_id = v_ws AND s.agent_id = p_agent_id AND a.deleted_at IS NULL
  ) l;
  RETURN CASE v_r WHEN 3 THEN 'full' WHEN 2 THEN 'edit' WHEN 1 THEN 'interact' END;
END
$$;
COMMENT ON FUNCTION agent._user_level(text, bigint) IS
  'Internal: the best level the user holds on the agent (owner: full; direct and group shares), NULL when none, the agent is deleted, or it belongs to another workspace than the session''s.';

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

CREATE FUNCTION agent.visible_agents(user_id text)
RETURNS TABLE(agent_id bigint, name text, level text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_ws text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    -- a session bound to no workspace (superuser): every workspace
    RETURN QUERY
    WITH l AS (
      SELECT a.workspace_id AS ws, a.id, 3 AS r FROM agent.agents a
       WHERE a.owner_id = visible_agents.user_id AND a.deleted_at IS NULL
      UNION ALL
      SELECT s.workspace_id, s.agent_id, agent._level_rank(s.level) FROM agent.shares s
       WHERE s.user_id = visible_agents.user_id
      UNION ALL
      SELECT s.workspace_id, s.agent_id, agent._level_rank(s.level) FROM agent.shares s
        JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
        JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = visible_agents.user_id
                                  AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
    ), best AS (
      SELECT l.ws, l.id, max(l.r) AS r FROM l GROUP BY l.ws, l.id
    )
    SELECT a.id, a.name, CASE b.r WHEN 3 THEN 'full' WHEN 2 THEN 'edit' ELSE 'interact' END
    FROM best b JOIN agent.agents a ON a.workspace_id = b.ws AND a.id = b.id
    WHERE a.deleted_at IS NULL AND b.r > 0
    ORDER BY b.r DESC, a.name, a.id;
    RETURN;
  END IF;
  RETURN QUERY
  WITH l AS (
    SELECT a.id, 3 AS r FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.owner_id = visible_agents.user_id AND a.deleted_at IS NULL
    UNION ALL
    SELECT s.agent_id, agent._level_rank(s.level) FROM agent.shares s
     WHERE s.workspace_id = v_ws AND s.user_id = visible_agents.user_id
    UNION ALL
    SELECT s.agent_id, agent._level_rank(s.level) FROM agent.shares s
      JOIN agent.agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
      JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = visible_agents.user_id
                                AND (g.workspace_id IS NULL OR g.workspace_id = a.workspace_id)
     WHERE s.workspace_id = v_ws
  ), best AS (
    SELECT l.id, max(l.r) AS r FROM l GROUP BY l.id
  )
  SELECT a.id, a.name, CASE b.r WHEN 3 THEN 'full' WHEN 2 THEN 'edit' ELSE 'interact' END
  FROM best b JOIN agent.agents a ON a.workspace_id = v_ws AND a.id = b.id
  WHERE a.deleted_at IS NULL AND b.r > 0
  ORDER BY b.r DESC, a.name, a.id;
END
$$;
COMMENT ON FUNCTION agent.visible_agents(text) IS
  'The agents of the session''s workspace a user can see (owned, shared with them or with one of their groups), best level first; an agent they have no access to is not listed.';

-- The agent row, locked, after checking that it exists and that by_user
-- holds the level the action needs.  by_user NULL is allowed only when
-- p_allow_system (an application or DBA call without a user).
CREATE FUNCTION agent._agent_for(p_agent_id bigint, p_by_user text, p_action text,
                                 p_allow_system boolean DEFAULT false)
RETURNS agent.agents
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a       agent.agents%ROWTYPE;
  v_level text;
  v_need  text := agent._action_level(p_action);
  v_ws    text;
BEGIN
  IF p_agent_id IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- locked by its whole key (workspace, id): the session's workspace, or
  -- the agent's own for a session bound to none
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id FOR UPDATE;
  IF NOT FOUND THEN
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

-- The tenant boundary first: an agent of another workspace than the
-- session's is "does not exist", exactly like a missing one (and before the
-- level check, which would tell it exists).  Then agent._agent_for.
CREATE FUNCTION agent._agent_named(p_agent_id bigint, p_by_user text, p_action text,
                                   p_allow_system boolean DEFAULT false)
RETURNS agent.agents
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- agent._agent_for reads the agent in the session's workspace only, so
  -- one of another workspace is "does not exist" before any level check
  RETURN agent._agent_for(p_agent_id, p_by_user, p_action, p_allow_system);
END
$$;
COMMENT ON FUNCTION agent._agent_named(bigint, text, text, boolean) IS
  'Internal: agent._agent_for behind the tenant boundary (an agent of another workspace than the session''s is 42704, like a missing one).';

CREATE FUNCTION agent.share(agent_id bigint, principal text, level text, by_user text)
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
REVOKE ALL ON FUNCTION agent.share(bigint, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.share(bigint, text, text, text) IS
  'Shares the agent with user:<id> or group:<id> at full, edit or interact (replacing a previous level); by_user needs full.';

CREATE FUNCTION agent.unshare(agent_id bigint, principal text, by_user text)
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

CREATE FUNCTION agent.grant(agent_id bigint, resource_type text, resource_id text,
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
REVOKE ALL ON FUNCTION agent.grant(bigint, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.grant(bigint, text, text, text, text) IS
  'Grants the agent read or edit on a resource (replacing a previous grant) and writes a version; by_user needs edit on the agent and, unless they own it, must read (for edit: edit) the resource themselves, 42501 otherwise (NULL: an application call, unchecked). An agent of another workspace is 42704.';

CREATE FUNCTION agent.revoke(agent_id bigint, resource_type text, resource_id text,
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
REVOKE ALL ON FUNCTION agent.revoke(bigint, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.revoke(bigint, text, text, text) IS
  'Removes the agent''s grant on a resource (writing a version when there was one); true when there was one. by_user needs edit (NULL: an application call). An agent of another workspace is 42704.';

-- ---------------------------------------------------------------------------
-- Settings, snapshots, versions (P3-T03, P3-T06)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._check_settings(p_settings jsonb) RETURNS void
LANGUAGE plpgsql STABLE
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
        PERFORM agent._check_scope(v);
      WHEN 'provider' THEN
        -- kept in scope.provider; that it exists is checked on the agents row
        -- (agent._agents_provider_check)
        IF t NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'settings key "provider" must be a provider name or null' USING ERRCODE = 'invalid_parameter_value';
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
        -- a monthly credit limit is not enforced: a value would be stored and
        -- ignored (issue 31); null (none) is accepted
        IF k = 'credit_limit_monthly' AND t <> 'null' THEN
          RAISE EXCEPTION 'settings key "credit_limit_monthly" cannot be honoured: pg_agents enforces no credit limit'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The column is kept for the application; the worker counts tokens, not credits.',
                  HINT = 'Bound an agent with hourly_run_cap, default_token_budget and max_iterations; null clears the limit.';
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
  'Internal: refuses (22023) settings with an unknown key or a value of the wrong shape, naming the key; the scope''s approval keys are checked by agent._check_scope.';

-- A delegation list names only agents of the delegating agent's workspace:
-- every id must be an agent of it (one of another workspace is refused
-- exactly like an unknown one), not deleted unless it was already listed
-- (so that a save or a restore keeps working after a deletion).
CREATE FUNCTION agent._check_delegation(p_agent_id bigint, p_delegation jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_bad text;
  v_ws  text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT e #>> '{}' INTO v_bad
    FROM agent.agents a, jsonb_array_elements(p_delegation) e
   WHERE a.workspace_id = v_ws AND a.id = p_agent_id
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

-- Applies checked settings to the agent (grants: the "access" list replaces them).
CREATE FUNCTION agent._apply_settings(p_agent_id bigint, p_settings jsonb, p_by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s      jsonb := p_settings;
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  -- computed first: Citus refuses a non-immutable function (jsonb_build_object)
  -- inside CASE or COALESCE of an UPDATE of a distributed table
  v_prov jsonb := jsonb_build_object('provider', p_settings -> 'provider');
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  IF s ? 'delegation' THEN
    PERFORM agent._check_delegation(p_agent_id, s -> 'delegation');
  END IF;
  UPDATE agent.agents a SET
    name                 = CASE WHEN s ? 'name' THEN btrim(s ->> 'name') ELSE a.name END,
    instructions         = CASE WHEN s ? 'instructions' THEN s ->> 'instructions' ELSE a.instructions END,
    instruction_page_id  = CASE WHEN s ? 'instruction_page_id' THEN s ->> 'instruction_page_id' ELSE a.instruction_page_id END,
    model                = CASE WHEN s ? 'model' THEN s ->> 'model' ELSE a.model END,
    approval_mode        = CASE WHEN s ? 'approval_mode' THEN s ->> 'approval_mode' ELSE a.approval_mode END,
    scope                = CASE WHEN s ? 'provider' AND jsonb_typeof(s -> 'provider') = 'string'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}')
                                       || v_prov
                                  WHEN s ? 'provider'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}') - 'provider'
                                  WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END,
    web_access           = CASE WHEN s ? 'web_access' THEN (s ->> 'web_access')::boolean ELSE a.web_access END,
    delegation           = CASE WHEN s ? 'delegation' THEN s -> 'delegation' ELSE a.delegation END,
    max_iterations       = CASE WHEN s ? 'max_iterations' THEN (s ->> 'max_iterations')::integer ELSE a.max_iterations END,
    hourly_run_cap       = CASE WHEN s ? 'hourly_run_cap' THEN (s ->> 'hourly_run_cap')::integer ELSE a.hourly_run_cap END,
    credit_limit_monthly = CASE WHEN s ? 'credit_limit_monthly' THEN (s ->> 'credit_limit_monthly')::integer ELSE a.credit_limit_monthly END,
    default_token_budget = CASE WHEN s ? 'default_token_budget' THEN (s ->> 'default_token_budget')::bigint ELSE a.default_token_budget END,
    updated_at           = now()
  WHERE a.workspace_id = v_ws AND a.id = p_agent_id;
  IF s ? 'access' THEN
    DELETE FROM agent.access g
     WHERE g.workspace_id = v_ws AND g.agent_id = p_agent_id
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(s -> 'access') e
                        WHERE e ->> 'resource_type' = g.resource_type AND e ->> 'resource_id' = g.resource_id);
    INSERT INTO agent.access AS g (workspace_id, agent_id, resource_type, resource_id, access, granted_by, granted_at)
    SELECT DISTINCT ON (e ->> 'resource_type', e ->> 'resource_id')
           v_ws, p_agent_id, e ->> 'resource_type', e ->> 'resource_id',
           coalesce(e ->> 'access', 'read'), p_by_user, now()
      FROM jsonb_array_elements(s -> 'access') WITH ORDINALITY AS x(e, n)
     WHERE v_ws IS NOT NULL
     ORDER BY e ->> 'resource_type', e ->> 'resource_id', n DESC
    ON CONFLICT (agent_id, resource_type, resource_id, workspace_id) DO UPDATE
      SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = EXCLUDED.granted_at
      WHERE g.access IS DISTINCT FROM EXCLUDED.access;
  END IF;
END
$$;
COMMENT ON FUNCTION agent._apply_settings(bigint, jsonb, text) IS
  'Internal: writes checked settings to the agent; an "access" list replaces its grants; a "delegation" list may name only agents of the agent''s workspace (agent._check_delegation).';

-- A trigger's settings: the form of version snapshots and of audit rows.
-- (agent._snapshot builds the same object inline: keep the two alike)
-- (plpgsql: the column conversation is added later, in 810_conversations)
CREATE FUNCTION agent._trigger_json(t agent.triggers) RETURNS jsonb
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

CREATE FUNCTION agent._snapshot(p_agent_id bigint) RETURNS jsonb
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
CREATE FUNCTION agent._write_version(p_agent_id bigint, p_by_user text, p_note text,
                                     p_prev jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_snap    jsonb := agent._snapshot(p_agent_id);
  v_changed text;
  v_note    text;
  v_id      bigint;
  v_ws      text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_next    integer;
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;

  IF p_prev IS NULL THEN
    v_note := p_note;
  ELSE
    v_changed := agent._changed_sections(p_prev, v_snap);
    v_note := CASE WHEN v_changed = '' THEN 'no changes' ELSE 'changed: ' || v_changed END;
    IF p_note IS NOT NULL THEN
      v_note := p_note || ' (' || v_note || ')';
    END IF;
  END IF;
  -- computed first and inserted as values (one routed statement each; no
  -- INSERT ... SELECT for Citus to plan)
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = p_agent_id) THEN
    RETURN NULL;
  END IF;
  SELECT coalesce(max(v.version), 0) + 1 INTO v_next
    FROM agent.versions v WHERE v.workspace_id = v_ws AND v.agent_id = p_agent_id;
  INSERT INTO agent.versions (workspace_id, agent_id, version, snapshot, created_by, note)
  VALUES (v_ws, p_agent_id, v_next, v_snap, p_by_user, v_note)
  RETURNING id INTO v_id;
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent._write_version(bigint, text, text, jsonb) IS
  'Internal: writes the agent''s next version (snapshot of now); with the previous snapshot, the note lists the changed sections.';

CREATE FUNCTION agent.create_agent(workspace_id text, owner_id text, name text,
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
REVOKE ALL ON FUNCTION agent.create_agent(text, text, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.create_agent(text, text, text, jsonb) IS
  'Creates an agent owned by owner_id (who holds full implicitly) with optional settings, and writes version 1.';

CREATE FUNCTION agent.save_settings(agent_id bigint, settings jsonb, by_user text, note text DEFAULT NULL)
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
REVOKE ALL ON FUNCTION agent.save_settings(bigint, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.save_settings(bigint, jsonb, text, text) IS
  'Saves settings (edit level): checks every key, applies them, writes a version whose note lists the changed sections, audits. A grant the agent does not hold yet (or raised to edit), a new instruction page and a new delegable agent need by_user''s own access (42501). Returns the version id.';

CREATE FUNCTION agent.restore_version(version_id bigint, by_user text)
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
REVOKE ALL ON FUNCTION agent.restore_version(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.restore_version(bigint, text) IS
  'Restores a version (edit level): a new version made from the old snapshot, grants and triggers included (triggers of the snapshot recreated or updated, the others disabled, never deleted); history is never rewritten. What by_user cannot read themselves is left out (NOTICE, version note, audit row). Returns the new version id.';

-- May the user read the resource, on their own ACL (in the agent's workspace)?
CREATE FUNCTION agent._user_reads(p_agent_id bigint, p_user text, p_type text, p_id text, p_mode text DEFAULT 'read')
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws text;
BEGIN
  IF p_type = 'workspace_shared' THEN
    RETURN true;
  ELSIF p_type = 'agent' THEN
    IF p_id !~ '^[0-9]{1,18}$' THEN
      RETURN false;
    END IF;
    -- an agent of another workspace is no agent the user can reach here
    v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
    IF v_ws IS NULL THEN
      SELECT s.workspace_id INTO v_ws FROM agent.agents s WHERE s.id = p_agent_id;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM agent.agents t JOIN agent.agents s ON s.workspace_id = t.workspace_id
                    WHERE t.workspace_id = v_ws AND t.id = p_id::bigint AND s.id = p_agent_id) THEN
      RETURN false;
    END IF;
    RETURN agent._level_rank(agent._user_level(p_user, p_id::bigint)) >= CASE p_mode WHEN 'edit' THEN 2 ELSE 1 END;
  END IF;
  RETURN agent.can_access(p_agent_id, p_type, p_id, p_mode, 'manual', p_user);
END
$$;
COMMENT ON FUNCTION agent._user_reads(bigint, text, text, text, text) IS
  'Internal: does the user''s own access reach the resource (agents: their share level, on agents of the same workspace only; other resources: their ACL)?';

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
CREATE FUNCTION agent._deputy_filter(p_agent_id bigint, p_by_user text, p_settings jsonb, p_refuse boolean)
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
  v_ws      text;
  v_live    boolean;
BEGIN
  IF p_by_user IS NULL OR s IS NULL THEN
    RETURN jsonb_build_object('settings', s, 'dropped', v_dropped, 'downgraded', v_down);
  END IF;
  v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id;

  IF jsonb_typeof(s -> 'access') = 'array' AND p_by_user IS DISTINCT FROM a.owner_id THEN
    v_list := '[]';
    FOR e IN SELECT x FROM jsonb_array_elements(s -> 'access') x LOOP
      v_want := CASE coalesce(e ->> 'access', 'read') WHEN 'edit' THEN 2 ELSE 1 END;
      SELECT CASE g.access WHEN 'edit' THEN 2 ELSE 1 END INTO v_have
        FROM agent.access g
       WHERE g.workspace_id = a.workspace_id AND g.agent_id = p_agent_id AND g.resource_type = e ->> 'resource_type'
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
      -- the lookup apart from the level check: a function that queries
      -- inside a routed query would run on the shard's node under Citus
      v_live := jsonb_typeof(e) = 'number'
                AND EXISTS (SELECT 1 FROM agent.agents x
                             WHERE x.workspace_id = a.workspace_id AND x.id = (e #>> '{}')::numeric
                               AND x.deleted_at IS NULL);
      IF coalesce(a.delegation, '[]') @> jsonb_build_array(e)
         OR NOT v_live
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

CREATE FUNCTION agent._duplicate(p_agent_id bigint, by_user text, OUT new_agent_id bigint, OUT report jsonb)
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

CREATE FUNCTION agent._history_hold(p_agent_id bigint, p_hold boolean) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF p_hold THEN
    IF v_ws IS NULL THEN
      SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
    END IF;
    INSERT INTO agent._history_holds (xact, agent_id, workspace_id)
    SELECT txid_current(), a.id, a.workspace_id FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.id = p_agent_id
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
  IF NOT EXISTS (SELECT 1 FROM agent.versions v WHERE v.workspace_id = a.workspace_id AND v.agent_id = a.id) THEN
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
DECLARE
  -- NEW and OLD as agent.triggers rows (on a Citus shard they have the
  -- shard's row type, which agent._trigger_json does not take)
  n agent.triggers;
  o agent.triggers;
BEGIN
  IF TG_OP <> 'DELETE' THEN
    n := NEW;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    o := OLD;
  END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM agent._trigger_direct_write(n.agent_id, 'create', n.id, NULL, agent._trigger_json(n));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM agent._trigger_direct_write(o.agent_id, 'delete', o.id, agent._trigger_json(o), NULL);
  ELSIF o.agent_id <> n.agent_id THEN
    -- moved to another agent: it leaves the one and joins the other
    PERFORM agent._trigger_direct_write(o.agent_id, 'delete', o.id, agent._trigger_json(o), NULL);
    PERFORM agent._trigger_direct_write(n.agent_id, 'create', n.id, NULL, agent._trigger_json(n));
  ELSIF agent._trigger_json(o) IS DISTINCT FROM agent._trigger_json(n) THEN
    PERFORM agent._trigger_direct_write(n.agent_id, 'update', n.id, agent._trigger_json(o),
                                        agent._trigger_json(n));
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
REVOKE ALL ON FUNCTION agent.set_trigger(bigint, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.set_trigger(bigint, jsonb, text) IS
  'Creates a trigger of the agent, or changes it when "trigger" has an id (keys given replace, others are kept); edit level (42501; by_user NULL: an application call). Keys: kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation; validated as every trigger write (22023). A watched page, collection, skill or agent must be readable by by_user. Writes one version (its note names the trigger) and one audit row (agent.trigger.create/update). An agent or trigger of another workspace is 42704. Returns the trigger id.';

CREATE FUNCTION agent.delete_trigger(trigger_id bigint, by_user text)
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

CREATE FUNCTION agent.set_status(agent_id bigint, status text, by_user text)
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
REVOKE ALL ON FUNCTION agent.set_status(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.set_status(bigint, text, text) IS
  'Suspends or resumes an agent (full level). Suspension stops new autonomous runs, not chat.';

CREATE FUNCTION agent.delete_agent(agent_id bigint, by_user text)
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
