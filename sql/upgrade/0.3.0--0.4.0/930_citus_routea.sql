-- 0.3.0 -> 0.4.0: statements that name their workspace (issue 24, Citus by
-- workspace).  Every statement on a distributed table names the workspace it
-- works in (the session's, or the row's already read), no FOR UPDATE by id
-- alone, joins of two distributed tables also on workspace_id, and the SQL
-- functions that read a distributed table rewritten in plpgsql (Citus issue
-- #1179).  The whole new definition of each function changed, generated from
-- sql/src (routea's files: 010, 100, 200, 210, 400, 410, 450, 500, 800, 950).

-- 010_core.sql
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
  v_ws     text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  -- every statement names the workspace: the session's, or the agent's own
  -- (a session bound to none, such as agent.tick's, or an event of a row of
  -- another workspace than the session's: the callers check the boundary)
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id;
  IF NOT FOUND THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
    SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id;
  END IF;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF p_parent_run_id IS NOT NULL THEN
    SELECT * INTO p FROM agent.runs x WHERE x.workspace_id = a.workspace_id AND x.id = p_parent_run_id;
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
         WHERE r.workspace_id = a.workspace_id AND r.agent_id = p_agent_id AND r.regime = 'autonomous'
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._user_level(p_user_id text, p_agent_id bigint) RETURNS text
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent.visible_agents(user_id text)
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

-- 100_access.sql
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._agent_named(p_agent_id bigint, p_by_user text, p_action text,
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent.share(agent_id bigint, principal text, level text, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a   agent.agents%ROWTYPE;
  v_u text;
  v_g text;
BEGIN
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent.unshare(agent_id bigint, principal text, by_user text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a agent.agents%ROWTYPE;
  n integer;
BEGIN
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

-- 100_access.sql
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

-- 100_access.sql
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._check_delegation(p_agent_id bigint, p_delegation jsonb) RETURNS void
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._apply_settings(p_agent_id bigint, p_settings jsonb, p_by_user text)
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

-- 100_access.sql
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
                                   'show_typing', t.show_typing, 'run_as', t.run_as) ORDER BY t.id)
                            FROM agent.triggers t WHERE t.workspace_id = a.workspace_id AND t.agent_id = a.id), '[]'))
    INTO v_snap
    FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = p_agent_id;
  RETURN v_snap;
END
$$;
COMMENT ON FUNCTION agent._snapshot(bigint) IS
  'Internal: the agent''s settings as a version snapshot: instructions, instruction_page_id, model, approval_mode, scope, web_access, delegation, limits, access list and triggers.';

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._write_version(p_agent_id bigint, p_by_user text, p_note text,
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

-- 100_access.sql
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
  v_sum  text;
BEGIN
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

-- 100_access.sql
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
  v_ws    text := agent._session_workspace();
BEGIN
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._user_reads(p_agent_id bigint, p_user text, p_type text, p_id text, p_mode text DEFAULT 'read')
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

-- 100_access.sql
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

-- 100_access.sql
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
  v_live     boolean;
BEGIN
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._history_hold(p_agent_id bigint, p_hold boolean) RETURNS void
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._trigger_direct_write(p_agent_id bigint, p_op text, p_trigger_id bigint,
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent._triggers_history() RETURNS trigger
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent.set_trigger(agent_id bigint, "trigger" jsonb, by_user text)
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
  'Creates a trigger of the agent, or changes it when "trigger" has an id (keys given replace, others are kept); edit level (42501; by_user NULL: an application call). Keys: kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as; validated as every trigger write (22023). A watched page, collection, skill or agent must be readable by by_user. Writes one version (its note names the trigger) and one audit row (agent.trigger.create/update). An agent or trigger of another workspace is 42704. Returns the trigger id.';

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent.delete_trigger(trigger_id bigint, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t    agent.triggers%ROWTYPE;
  a    agent.agents%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
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

-- 100_access.sql
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
                 run_as = coalesce(s ->> 'run_as', 'creator'), updated_at = now()
           WHERE x.workspace_id = a.workspace_id AND x.id = v_sid;
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent.set_status(agent_id bigint, status text, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a agent.agents%ROWTYPE;
BEGIN
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

-- 100_access.sql
CREATE OR REPLACE FUNCTION agent.delete_agent(agent_id bigint, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a agent.agents%ROWTYPE;
BEGIN
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

-- 200_audit.sql
CREATE OR REPLACE FUNCTION agent.audit_events(target_type text DEFAULT NULL, target_id text DEFAULT NULL,
                                   actor_kind text DEFAULT NULL, status text DEFAULT NULL,
                                   run_id bigint DEFAULT NULL, action text DEFAULT NULL,
                                   since timestamptz DEFAULT NULL, lim integer DEFAULT 100)
RETURNS SETOF agent.audit_log
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- computed once and passed as a value: the query names its workspace
  -- (Citus routes it to that workspace's shard)
  v_ws text := agent.current_workspace();
BEGIN
  IF audit_events.actor_kind IS NOT NULL AND audit_events.actor_kind NOT IN ('agent', 'human', 'system') THEN
    RAISE EXCEPTION 'invalid actor kind "%"', audit_events.actor_kind
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An actor kind is agent, human or system.';
  END IF;
  IF audit_events.status IS NOT NULL AND audit_events.status NOT IN ('success', 'error', 'denied') THEN
    RAISE EXCEPTION 'invalid audit status "%"', audit_events.status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An audit status is success, error or denied.';
  END IF;
  IF lim IS NULL OR lim < 1 OR lim > 10000 THEN
    RAISE EXCEPTION 'invalid limit %', coalesce(lim::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The limit is between 1 and 10000.';
  END IF;
  RETURN QUERY
    SELECT l.* FROM agent.audit_log l
     WHERE l.workspace_id = v_ws
       AND (audit_events.target_type IS NULL OR l.target_type = audit_events.target_type)
       AND (audit_events.target_id IS NULL OR l.target_id = audit_events.target_id)
       AND (audit_events.actor_kind IS NULL OR l.actor_kind = audit_events.actor_kind)
       AND (audit_events.status IS NULL OR l.status = audit_events.status)
       AND (audit_events.run_id IS NULL OR l.run_id = audit_events.run_id)
       AND (audit_events.action IS NULL OR l.action = audit_events.action)
       AND (audit_events.since IS NULL OR l.at >= audit_events.since)
     ORDER BY l.at DESC, l.id DESC
     LIMIT lim;
END
$$;
COMMENT ON FUNCTION agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer) IS
  'Audit rows of the caller''s workspace (pg_agents.workspace), newest first, filtered; without a workspace identity nothing matches.';

-- 210_reads.sql
CREATE OR REPLACE FUNCTION agent._may_read_workspace(p_workspace_id text) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_workspace_id IS NULL THEN
    RETURN false;
  END IF;
  -- the application first, without reading a table (under Citus a policy
  -- runs inside the shard query, where no Citus table may be read)
  IF pg_catalog.pg_has_role('agents_app', 'USAGE') THEN
    RETURN true;
  END IF;
  RETURN EXISTS (SELECT 1 FROM agent.reader_workspaces b
                  WHERE b.workspace_id = p_workspace_id
                    AND coalesce(pg_catalog.pg_has_role(b.role_id, 'USAGE'), false));
END
$$;
COMMENT ON FUNCTION agent._may_read_workspace(text) IS
  'Internal to the read policies: whether the current role may read the rows of a workspace (the application may read any; an analytics role those bound to it; superusers all).';

-- 410_overlaps.sql
CREATE OR REPLACE FUNCTION agent._launch_first(p_workspace text, p_trigger_id bigint, p_agent_id bigint,
                                    p_event text, p_resource_type text, p_resource_id text,
                                    p_row_id text, p_automation text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '600')::interval;
  v_fp     text := md5(concat_ws(E'\x01', p_event, p_resource_type, coalesce(p_resource_id, ''),
                                         coalesce(p_row_id, '')));
  v_src    text := CASE WHEN p_automation IS NULL THEN 'trigger' ELSE 'automation:' || p_automation END;
  d        agent.event_launches%ROWTYPE;
  v_run    bigint;
  v_auto   text;
BEGIN
  IF v_window <= interval '0' THEN
    RETURN true;
  END IF;
  INSERT INTO agent.event_launches AS x (workspace_id, trigger_id, launch_key, seen_at, source)
  VALUES (p_workspace, p_trigger_id, v_fp, now(), v_src)
  ON CONFLICT (workspace_id, trigger_id, launch_key) DO NOTHING;
  IF FOUND THEN
    RETURN true;
  END IF;
  SELECT * INTO d FROM agent.event_launches x
   WHERE x.workspace_id = p_workspace AND x.trigger_id = p_trigger_id AND x.launch_key = v_fp FOR UPDATE;
  IF d.seen_at <= now() - v_window OR d.source IS NOT DISTINCT FROM v_src THEN
    UPDATE agent.event_launches x SET seen_at = now(), source = v_src
     WHERE x.workspace_id = p_workspace AND x.trigger_id = p_trigger_id AND x.launch_key = v_fp;
    RETURN true;
  END IF;
  -- the other launcher came first: one run, this launch counted
  v_auto := coalesce(p_automation, substr(d.source, 12));
  SELECT r.id INTO v_run FROM agent.runs r
   WHERE r.workspace_id = p_workspace AND r.trigger_id = p_trigger_id AND r.created_at = d.seen_at
   ORDER BY r.id DESC LIMIT 1;
  -- now() in VALUES, not in DO UPDATE (Citus: immutable there only)
  INSERT INTO agent.event_overlaps AS o (workspace_id, trigger_id, agent_id, automation, deduplicated,
                                         last_event, last_resource_type, last_resource_id, last_run_id, last_at)
  VALUES (p_workspace, p_trigger_id, p_agent_id, coalesce(v_auto, ''), 1, p_event, p_resource_type, p_resource_id,
          v_run, now())
  ON CONFLICT (workspace_id, trigger_id, automation) DO UPDATE
    SET deduplicated = o.deduplicated + 1, last_at = excluded.last_at, last_event = excluded.last_event,
        last_resource_type = excluded.last_resource_type, last_resource_id = excluded.last_resource_id,
        last_run_id = excluded.last_run_id;
  UPDATE agent.runs r
     SET input = r.input || jsonb_build_object('also_started_by',
                   coalesce(r.input -> 'also_started_by', '[]') || to_jsonb(v_src))
   WHERE r.workspace_id = p_workspace
     AND r.id = (SELECT q.id FROM agent.runs q
                  WHERE q.workspace_id = p_workspace AND q.id = v_run AND q.status = 'queued'
                  FOR UPDATE SKIP LOCKED);
  RAISE NOTICE 'run % of agent % was already started for this event', coalesce(v_run::text, '?'), p_agent_id
    USING DETAIL = format('Trigger %s and automation "%s" both launched it on event %s within pg_agents.dedup_window; one run was made.',
                          p_trigger_id, v_auto, p_event);
  RETURN false;
END
$$;
REVOKE ALL ON FUNCTION agent._launch_first(text, bigint, bigint, text, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._launch_first(text, bigint, bigint, text, text, text, text, text) IS
  'Internal (agent.fire_event): false when an automation and a trigger (or two automations) launch the agent through this trigger on the same event (name, resource, payload row_id) within pg_agents.dedup_window; the second launch is counted in agent.event_overlaps and added to the kept run''s input.also_started_by while it is queued.';

-- 410_overlaps.sql
CREATE OR REPLACE FUNCTION agent.trigger_overlaps(agent_id bigint, by_user text DEFAULT NULL)
RETURNS TABLE(trigger_id bigint, other_trigger_id bigint, automation text, event_name text,
              deduplicated bigint, overlap text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a    agent.agents%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
  -- the session's workspace only (a session bound to none: the agent's own)
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = trigger_overlaps.agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x
   WHERE x.workspace_id = v_ws AND x.id = trigger_overlaps.agent_id AND x.deleted_at IS NULL;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'agent % does not exist', trigger_overlaps.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NOT NULL AND NOT coalesce(agent.user_can(by_user, a.id, 'view_settings'), false) THEN
    RAISE EXCEPTION 'user "%" may not view the settings of agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN QUERY
    SELECT t.id, u.id, NULL::text, CASE t.kind WHEN 'mention' THEN 'agent.mentioned' ELSE t.event_name END,
           NULL::bigint, agent._trigger_overlap(ROW(t.*)::agent.triggers, ROW(u.*)::agent.triggers)
      FROM agent.triggers t
      JOIN agent.triggers u ON u.workspace_id = t.workspace_id AND u.agent_id = t.agent_id AND u.id <> t.id
     WHERE t.workspace_id = a.workspace_id AND t.agent_id = a.id
       -- ROW(x.*)::agent.triggers, not x: on a Citus shard x has the shard's row type
       AND agent._trigger_overlap(ROW(t.*)::agent.triggers, ROW(u.*)::agent.triggers) IS NOT NULL
    UNION ALL
    SELECT o.trigger_id, NULL::bigint, o.automation, o.last_event, o.deduplicated,
           format('automation "%s" and trigger %s both launched the agent on event %s (last for %s %s); %s launch(es) made no second run',
                  o.automation, o.trigger_id, o.last_event, o.last_resource_type, coalesce(o.last_resource_id, '(any)'),
                  o.deduplicated)
      FROM agent.event_overlaps o
     WHERE o.agent_id = a.id AND o.workspace_id = a.workspace_id
    ORDER BY 1, 2 NULLS LAST, 3;
END
$$;
REVOKE ALL ON FUNCTION agent.trigger_overlaps(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.trigger_overlaps(bigint, text) IS
  'The enabled event and mention triggers of the agent that match the same events as another of its triggers, one row per (trigger, other trigger) with the overlap stated; then the triggers an application automation also launched the agent through (agent.fire_event(..., automation => label)), with how many second launches made no run. by_user, when given, needs view_settings. An agent of another workspace than the session''s is 42704.';

-- 410_overlaps.sql
CREATE OR REPLACE FUNCTION agent._triggers_warn_overlap() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  u agent.triggers%ROWTYPE;
  v text;
  k int := 0;
  -- NEW as an agent.triggers row (on a Citus shard it has the shard's row type)
  n agent.triggers := NEW;
BEGIN
  IF NOT NEW.enabled OR NEW.kind NOT IN ('event', 'mention') THEN
    RETURN NULL;
  END IF;
  -- only the triggers that can overlap (same event, compatible resource) are
  -- compared, and at most three are named: a bulk insert of many triggers of
  -- one agent on one event stays linear and its output readable
  FOR u IN SELECT * FROM agent.triggers x
            WHERE x.workspace_id = NEW.workspace_id AND x.agent_id = NEW.agent_id AND x.id <> NEW.id AND x.enabled
              AND x.kind IN ('event', 'mention')
              AND CASE x.kind WHEN 'mention' THEN 'agent.mentioned' ELSE x.event_name END
                  IS NOT DISTINCT FROM CASE NEW.kind WHEN 'mention' THEN 'agent.mentioned' ELSE NEW.event_name END
              AND (x.resource_id IS NULL OR NEW.resource_id IS NULL OR x.resource_id = NEW.resource_id)
            ORDER BY x.id LOOP
    v := agent._trigger_overlap(n, u);
    IF v IS NOT NULL THEN
      k := k + 1;
      IF k > 3 THEN
        RAISE WARNING 'trigger % overlaps more triggers of agent %', NEW.id, NEW.agent_id
          USING HINT = 'agent.trigger_overlaps lists every overlap.';
        EXIT;
      END IF;
      RAISE WARNING 'trigger % overlaps trigger % of agent %', NEW.id, u.id, NEW.agent_id
        USING DETAIL = initcap(left(v, 1)) || substr(v, 2) || ': such an event starts two runs.',
              HINT = 'Narrow a filter or disable one of them; agent.trigger_overlaps lists every overlap.';
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION agent._triggers_warn_overlap() FROM PUBLIC;
COMMENT ON FUNCTION agent._triggers_warn_overlap() IS
  'Trigger: a WARNING for each enabled event or mention trigger of the same agent that a saved trigger overlaps (agent._trigger_overlap), at most three, then one that says there are more.';

-- 450_cron.sql
CREATE OR REPLACE FUNCTION agent._tick_due(p_now timestamptz) RETURNS SETOF agent._tick_slot
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws  text;
  v_all agent._tick_slot[] := '{}';
  v_one agent._tick_slot[];
  v_n   integer := 0;
BEGIN
  FOR v_ws IN
    SELECT DISTINCT t.workspace_id FROM agent.triggers t
     WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= p_now
     ORDER BY 1
  LOOP
    SELECT array_agg(ROW(d.id, d.agent_id, d.schedule, d.timezone, d.prompt, d.next_run_at, d.created_by,
                         d.live, NULL::boolean)::agent._tick_slot ORDER BY d.next_run_at, d.id)
      INTO v_one
      FROM (SELECT t.id, t.agent_id, t.schedule, t.timezone, t.prompt, t.next_run_at, t.created_by,
                   (a.status = 'active' AND a.deleted_at IS NULL) AS live
              FROM agent.triggers t
              JOIN agent.agents a ON a.workspace_id = t.workspace_id AND a.id = t.agent_id
             WHERE t.workspace_id = v_ws
               AND t.enabled AND t.kind = 'schedule' AND t.next_run_at <= p_now
             ORDER BY t.next_run_at, t.id
               FOR NO KEY UPDATE OF t SKIP LOCKED) d;
    IF v_one IS NOT NULL THEN
      v_all := v_all || v_one;
      v_n := v_n + 1;
    END IF;
  END LOOP;
  IF v_n <= 1 THEN
    RETURN QUERY SELECT * FROM unnest(v_all);
  ELSE
    RETURN QUERY SELECT * FROM unnest(v_all) u ORDER BY u.due, u.id;
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._tick_due(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._tick_due(timestamptz) IS
  'The due enabled schedule triggers at a time, locked FOR NO KEY UPDATE SKIP LOCKED, in (next_run_at, id) order (agent.tick).';

-- 500_allowlist.sql
CREATE OR REPLACE FUNCTION agent.readable_resources(agent_id bigint, resource_type text, mode text DEFAULT 'read')
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_self   bigint := agent.current_agent_id();
  v_ws     text;
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
  -- (the session's workspace named; a session bound to none: the agent's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = readable_resources.agent_id;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = readable_resources.agent_id) THEN
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

-- 500_allowlist.sql
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
  -- the session's workspace (one bound to none: the agent's own)
  v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  IF v_run IS NOT NULL THEN
    PERFORM 1 FROM agent.runs r
     WHERE r.workspace_id = v_ws AND r.id = v_run AND r.agent_id = v_agent AND r.status = 'running' FOR UPDATE;
    IF FOUND THEN
      SELECT coalesce(max(s.seq), 0) + 1 INTO v_seq FROM agent.run_steps s WHERE s.workspace_id = v_ws AND s.run_id = v_run;
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, finished_at)
      VALUES (v_ws, v_run, v_seq, 'denied', 'follow_relation', v_det,
              pg_catalog.jsonb_build_object('resource_type', v_type, 'reason', v_reason), 'denied',
              pg_catalog.clock_timestamp());
    END IF;
  END IF;
  SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM agent._audit_event('agent.follow_relation', 'denied', v_type, v_target, v_ws, NULL,
                             v_det, pg_catalog.format('relation to a %s cut: %s', v_type, v_reason), v_reason);
END
$$;
COMMENT ON FUNCTION agent._allowlist_denied(text, text, text, jsonb) IS
  'Internal to agent.follow_relation: records a cut relation target as a denied step of the current run (only a running run of the session''s own agent; type and a known reason code only; redacted, bounded detail) and as a denied audit row in the agent''s workspace. Executable by agents_tool and agents_app only.';

-- 800_activity.sql
CREATE OR REPLACE FUNCTION agent._trigger_label(p_origin text, p_input jsonb, p_trigger_id bigint, p_parent_run_id bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t    agent.triggers%ROWTYPE;
  v_ws text;
BEGIN
  IF p_origin IN ('schedule', 'event') AND p_trigger_id IS NOT NULL THEN
    -- the trigger of the session's workspace, else (a session bound to none,
    -- a run of another workspace's row) the trigger's own
    v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
    SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = p_trigger_id;
    -- by id alone only without Citus: called by a trigger on a Citus shard
    -- (agent._conversation_run_ended), a statement that does not name the
    -- workspace is refused there; the label then says what the input says
    IF NOT FOUND AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
      SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = p_trigger_id;
      SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = p_trigger_id;
    END IF;
  END IF;
  RETURN CASE p_origin
    WHEN 'schedule' THEN 'schedule: ' || coalesce(
           agent.cron_describe(t.schedule) || CASE WHEN t.timezone <> 'UTC' THEN ' (' || t.timezone || ')' ELSE '' END,
           '(trigger deleted)')
    WHEN 'event' THEN 'event: ' || coalesce(p_input ->> 'event', t.event_name, '?')
                      || ' on ' || coalesce(p_input ->> 'resource_id', 'any ' || coalesce(p_input ->> 'resource_type', 'resource'))
    WHEN 'mention' THEN 'mention in ' || coalesce(p_input ->> 'resource_type', 'resource') || ' '
                        || coalesce(p_input ->> 'resource_id', '?')
    WHEN 'chat' THEN 'chat'
    WHEN 'api' THEN 'api'
    WHEN 'delegation' THEN 'delegation from run ' || coalesce(p_parent_run_id::text, p_input ->> 'parent_run_id', '?')
    WHEN 'rerun' THEN 're-run of run ' || coalesce(p_input ->> 'rerun_of', '?')
    WHEN 'draft' THEN 'draft: assisted creation'
    ELSE p_origin
  END;
END
$$;
COMMENT ON FUNCTION agent._trigger_label(text, jsonb, bigint, bigint) IS
  'Internal: what started a run, in clear ("schedule: at 09:00 every day", "event: collection.row_added on public.tickets", "chat", "delegation from run N", "re-run of run N").';

-- 800_activity.sql
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
  v_ws    text;
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
  -- the session's workspace (a session bound to none: the agent's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent) THEN
    RETURN;
  END IF;
  v_scope := agent.activity_scope(v_user, v_agent);
  IF v_scope IS NULL THEN
    RETURN;
  END IF;
  -- the trigger label as agent._trigger_label writes it, from a colocated
  -- join: a function that queries, inside this query routed to the
  -- workspace's shard, would run on the shard's node under Citus
  RETURN QUERY
  SELECT r.id, r.created_at,
         CASE r.origin
           WHEN 'schedule' THEN 'schedule: ' || coalesce(
                  agent.cron_describe(tg.schedule)
                  || CASE WHEN tg.timezone <> 'UTC' THEN ' (' || tg.timezone || ')' ELSE '' END,
                  '(trigger deleted)')
           WHEN 'event' THEN 'event: ' || coalesce(r.input ->> 'event', tg.event_name, '?')
                             || ' on ' || coalesce(r.input ->> 'resource_id',
                                                   'any ' || coalesce(r.input ->> 'resource_type', 'resource'))
           ELSE agent._trigger_label(r.origin, r.input, NULL, r.parent_run_id)
         END,
         r.origin, r.regime, r.requested_by, r.status, r.started_at, r.finished_at,
         r.finished_at - r.started_at, r.model, r.tokens_in, r.tokens_out, r.tokens_total,
         st.skills, st.tools, st.reads, st.writes, st.denied,
         coalesce(r.error, st.last_error),
         CASE WHEN (r.input ->> 'rerun_of') ~ '^[0-9]{1,18}$' THEN (r.input ->> 'rerun_of')::bigint END,
         r.parent_run_id, r.trigger_id
    FROM (SELECT x.* FROM agent.runs x
           WHERE x.workspace_id = v_ws AND x.agent_id = v_agent
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
        -- v_ws, not r.workspace_id: a constant Citus routes the lateral join by
        FROM agent.run_steps s WHERE s.workspace_id = v_ws AND s.run_id = r.id
    ) st ON true
    LEFT JOIN agent.triggers tg ON tg.workspace_id = v_ws AND tg.id = r.trigger_id
                               AND r.origin IN ('schedule', 'event')
   ORDER BY r.created_at DESC, r.id DESC;
END
$$;
COMMENT ON FUNCTION agent.activity(bigint, text, text, bigint, timestamptz, timestamptz, int) IS
  'The agent''s runs, newest first, as the user may see them (full: all; edit, interact: their own manual runs; no access, unknown agent or an agent of another workspace than the session''s: nothing): trigger label, status, duration, model, tokens, skills, tools and resources used (from run_steps), error in clear, re-run and delegation links. Filters: status, trigger, period [since, until) on created_at, lim (1-1000).';

-- 800_activity.sql
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
  v_ws    text;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  -- a run of another workspace is an unknown run (a session bound to none:
  -- the run's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = v_run;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_run;
  IF r.id IS NULL THEN
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
      FROM agent.run_steps s WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id
    UNION ALL
    -- the decisions on the run's approvals (who decided, when)
    SELECT NULL::integer, coalesce(p.decided_at, p.requested_at), 'approval'::text, p.tool, p.status,
           format('approval %s of %s%s', p.status, p.tool,
                  coalesce(' by ' || p.decided_by, '') || CASE WHEN p.status = 'pending'
                                                               THEN ' (expires ' || p.expires_at::text || ')' ELSE '' END),
           NULL::text, 0, p.decided_at - p.requested_at, p.input,
           jsonb_build_object('approval_key', p.approval_key, 'decided_by', p.decided_by, 'consumed', p.consumed_at IS NOT NULL)
      FROM agent.approvals p WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id
  ) d(seq, at, kind, name, status, summary, resource, tokens, duration, input, output)
  ORDER BY d.seq NULLS LAST, d.at;
END
$$;
COMMENT ON FUNCTION agent.run_detail(bigint, text) IS
  'The steps of one run in order (model calls with tokens, reads, writes, tool calls, searches, denied steps, delegations, errors) with a one-line summary, then the run''s approvals and their decisions. Same visibility as agent.activity (and the requester of a draft run sees its steps): a run the user may not see, or a run of another workspace than the session''s, gives nothing, exactly like an unknown run.';

-- 800_activity.sql
CREATE OR REPLACE VIEW agent.insights AS
SELECT g.workspace_id, g.agent_id, a.name AS agent_name, g.day, g.status, g.runs,
       g.tokens_in, g.tokens_out, g.tokens_in + g.tokens_out AS tokens, g.avg_duration,
       sum(g.runs) OVER w AS day_runs,
       round(sum(CASE WHEN agent._run_failed(g.status) THEN g.runs ELSE 0 END) OVER w
             / nullif(sum(CASE WHEN NOT agent._run_is_active(g.status) THEN g.runs ELSE 0 END) OVER w, 0), 4)
         AS day_failure_rate,
       g.tokens_cached
FROM (
  SELECT r.workspace_id, r.agent_id, (r.created_at AT TIME ZONE 'UTC')::date AS day, r.status,
         count(*) AS runs, sum(r.tokens_in)::bigint AS tokens_in, sum(r.tokens_out)::bigint AS tokens_out,
         avg(r.finished_at - r.started_at) AS avg_duration, sum(r.tokens_cached)::bigint AS tokens_cached
    FROM agent.runs r
   WHERE (SELECT agent._session_workspace()) IS NULL
      OR (r.workspace_id = (SELECT agent._session_workspace())
          AND (SELECT agent._may_read_workspace(agent._session_workspace())))
   GROUP BY 1, 2, 3, 4
) g
JOIN agent.agents a ON a.workspace_id = g.workspace_id AND a.id = g.agent_id
WINDOW w AS (PARTITION BY g.agent_id, g.day);
REVOKE ALL ON agent.insights FROM PUBLIC;
COMMENT ON VIEW agent.insights IS
  'Runs per agent, UTC day (of created_at) and status, for analytics: runs, own tokens (the run''s own tokens_in + tokens_out, never the rolled-up tokens_total, so that sums do not count a child twice), average duration, and the day''s run count and failure rate (failed, budget_exceeded, expired over finished runs). Scoped to the session''s workspace (pg_agents.workspace; a non-superuser session that sets none is refused, a superuser one sees every workspace), and only to one the role may read (agents_app: any; agents_reader: those bound by agent.bind_reader).';

-- 800_activity.sql
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
  v_ws    text;
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF since IS NOT NULL AND until IS NOT NULL AND since > until THEN
    RAISE EXCEPTION 'since must not be after until' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- an agent of another workspace is an unknown agent
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  -- two statements: a function that queries inside a routed query would be
  -- run on the shard's node (Citus: no nested distributed query)
  IF EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent) THEN
    v_level := agent._user_level(v_user, v_agent);
  END IF;
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
     WHERE x.workspace_id = v_ws AND x.agent_id = v_agent
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
                              'tokens_cached', sum(k.tokens_cached),
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
      FROM agent.run_steps s JOIN r ON r.workspace_id = s.workspace_id AND r.id = s.run_id
     WHERE s.workspace_id = v_ws AND s.kind IN ('read', 'write') AND coalesce(s.status, 'ok') = 'ok'
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
      FROM (SELECT * FROM agent.access x WHERE x.workspace_id = v_ws AND x.agent_id = v_agent) g
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

-- 800_activity.sql
CREATE OR REPLACE FUNCTION agent._assistant_for(p_workspace_id text) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  IF v_id IS NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext('pg_agents.assistant'), hashtext(p_workspace_id));
    SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  END IF;
  IF v_id IS NULL THEN
    INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, approval_mode, max_iterations)
    VALUES (p_workspace_id, 'pg_agents:assistant', 'Agent creation assistant', agent._assistant_instructions(),
            'writes', 8)
    RETURNING id INTO v_id;
    INSERT INTO agent.assistants (workspace_id, agent_id) VALUES (p_workspace_id, v_id);
  ELSE
    -- keep the instructions current across upgrades
    UPDATE agent.agents a SET instructions = agent._assistant_instructions(), updated_at = now()
     WHERE a.workspace_id = p_workspace_id AND a.id = v_id AND a.instructions IS DISTINCT FROM agent._assistant_instructions();
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._assistant_for(text) FROM PUBLIC;
COMMENT ON FUNCTION agent._assistant_for(text) IS
  'Internal: the workspace''s hidden assistant agent, created on first use.';

-- 800_activity.sql
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
  v_ws       text;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the session's workspace (a session bound to none: the run's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = v_run;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_run AND x.origin = 'draft';
  IF r.id IS NULL
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
  -- (read first, then checked: agent.can_access inside the routed query
  -- would run on the shard's node under Citus)
  SELECT coalesce(jsonb_agg(DISTINCT jsonb_build_object('resource_type', f.rt, 'resource_id', f.rid)), '[]')
    INTO v_found
    FROM (SELECT x ->> 'resource_type' AS rt, x ->> 'resource_id' AS rid
            FROM agent.run_steps s,
                 jsonb_array_elements(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                           THEN s.output -> 'results' ELSE '[]' END) x
           WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id AND s.kind = 'tool'
             AND s.name = 'search_resources' AND coalesce(s.status, 'ok') = 'ok') f
   WHERE f.rt IS NOT NULL AND f.rid IS NOT NULL;
  SELECT coalesce(jsonb_agg(c ORDER BY c), '[]') INTO v_found
    FROM jsonb_array_elements(v_found) c
   WHERE agent.can_access(r.agent_id, c ->> 'resource_type', c ->> 'resource_id', 'read', 'manual', v_user);

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
                                                                     WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id
                                                                       AND s.kind = 'tool' AND s.name = 'search_resources'
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

-- 950_operations.sql
CREATE OR REPLACE VIEW agent.run_metrics WITH (security_barrier) AS
  SELECT r.id AS run_id, r.workspace_id, r.agent_id, a.name AS agent_name, r.origin, r.trigger_id,
         r.parent_run_id, r.status,
         coalesce(a.scope ->> 'llm_provider', nullif(pg_catalog.current_setting('pg_agents.llm_provider', true), ''),
                  'openai') AS provider,
         pg_catalog.substring(coalesce(a.scope ->> 'llm_url', pg_catalog.current_setting('pg_agents.llm_url', true)),
                              '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\[[^]/]*\]|[^/:?#]*)') AS endpoint_host,
         r.model, r.created_at, r.started_at, r.finished_at,
         pg_catalog.date_part('epoch', r.started_at - r.created_at) * 1000 AS queue_ms,
         pg_catalog.date_part('epoch', r.finished_at - r.started_at) * 1000 AS duration_ms,
         r.tokens_in, r.tokens_out, r.tokens_cached, r.tokens_total, r.attempts,
         agent.run_error_code(r.error) AS error_code,
         coalesce(s.llm_calls, 0) AS llm_calls, s.llm_ms, coalesce(s.retries, 0) AS retries
    FROM agent.runs r
    JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id
    LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE st.kind = 'llm') AS llm_calls,
             pg_catalog.array_agg(pg_catalog.date_part('epoch', st.finished_at - st.started_at) * 1000 ORDER BY st.seq)
               FILTER (WHERE st.kind = 'llm' AND st.finished_at IS NOT NULL) AS llm_ms,
             count(*) FILTER (WHERE st.kind = 'error' AND st.status = 'retry') AS retries
        FROM agent.run_steps st
       WHERE st.workspace_id = r.workspace_id AND st.run_id = r.id AND st.kind IN ('llm', 'error')) s ON true
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (r.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent.run_metrics IS
  'One row per run, without its content: ids, status, provider kind and endpoint host (the agent''s scope, else the settings, as they are now), model, times, queue wait and duration (ms), tokens, attempts, error code, LLM calls with their latencies (ms) and retries. Rows of the workspaces the querying role may read; every workspace for pg_monitor and superusers.';

-- 950_operations.sql
CREATE OR REPLACE FUNCTION agent.run_stats(since timestamptz DEFAULT now() - interval '1 day')
RETURNS TABLE(workspace_id text, agent_id bigint, agent_name text, provider text, endpoint_host text,
              model text, runs bigint, succeeded bigint, failed bigint, budget_exceeded bigint,
              cancelled bigint, expired bigint, active bigint, failure_rate numeric,
              duration_p50_ms double precision, duration_p95_ms double precision,
              duration_max_ms double precision, queue_p50_ms double precision,
              queue_p95_ms double precision, queue_max_ms double precision, llm_calls bigint,
              llm_p50_ms double precision, llm_p95_ms double precision, llm_max_ms double precision,
              tokens_in numeric, tokens_out numeric, tokens_cached numeric, retries bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the whole UTC days [d0, w) come from the rollup (sql/src/955_rollup.sql):
  -- month rows for the whole months [m1, m2), day rows for the rest; the
  -- runs before d0 and from w on are read from agent.run_metrics
  v_w    timestamptz := agent._run_rollup_watermark();
  v_d0   timestamptz := pg_catalog.date_trunc('day', run_stats.since, 'UTC');
  v_m1   timestamptz;
  v_m2   timestamptz;
  v_end1 timestamptz := 'infinity';
  v_beg2 timestamptz := 'infinity';
BEGIN
  IF v_d0 < run_stats.since THEN
    v_d0 := v_d0 + interval '24 hours';
  END IF;
  IF v_w IS NOT NULL AND v_d0 < v_w THEN
    v_end1 := v_d0;
    v_beg2 := v_w;
    v_m1 := pg_catalog.date_trunc('month', v_d0, 'UTC');
    IF v_m1 < v_d0 THEN
      v_m1 := agent._utc_next_month(v_m1);
    END IF;
    v_m2 := pg_catalog.date_trunc('month', v_w, 'UTC');
    IF v_m1 >= v_m2 THEN
      v_m1 := v_w;
      v_m2 := v_w;
    END IF;
  ELSE
    v_d0 := NULL;   -- nothing from the rollup
  END IF;
  -- planned for these bounds at every call (EXECUTE): a generic plan
  -- would not know how few rows the ranges hold
  RETURN QUERY EXECUTE $q$
  WITH m AS MATERIALIZED (
    -- only the columns used: the view computes no other
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model, m.status,
           m.duration_ms, m.queue_ms, m.llm_calls, m.llm_ms, m.retries, m.tokens_in, m.tokens_out, m.tokens_cached
      FROM agent.run_metrics m WHERE m.created_at >= $1 AND m.created_at < $2
    UNION ALL
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model, m.status,
           m.duration_ms, m.queue_ms, m.llm_calls, m.llm_ms, m.retries, m.tokens_in, m.tokens_out, m.tokens_cached
      FROM agent.run_metrics m WHERE m.created_at >= $3),
  rg AS (
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model,
           count(*) AS runs,
           count(*) FILTER (WHERE m.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE m.status = 'failed') AS failed,
           count(*) FILTER (WHERE m.status = 'budget_exceeded') AS budget_exceeded,
           count(*) FILTER (WHERE m.status = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE m.status = 'expired') AS expired,
           count(*) FILTER (WHERE m.status IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children')) AS active,
           max(m.duration_ms) AS duration_max_ms, agent._hist(m.duration_ms) AS duration_h,
           max(m.queue_ms) AS queue_max_ms, agent._hist(m.queue_ms) AS queue_h,
           sum(m.llm_calls)::bigint AS llm_calls,
           sum(m.tokens_in) AS tokens_in, sum(m.tokens_out) AS tokens_out, sum(m.tokens_cached) AS tokens_cached,
           sum(m.retries)::bigint AS retries
      FROM m
     GROUP BY m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model),
  rl AS (
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model,
           max(x.ms) AS llm_max_ms, agent._hist(x.ms) AS llm_h
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS x(ms)
     GROUP BY m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model),
  p AS (
    SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model, g.runs, g.succeeded,
           g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active, g.duration_max_ms, g.duration_h,
           g.queue_max_ms, g.queue_h, g.llm_calls, l.llm_max_ms, l.llm_h, g.tokens_in, g.tokens_out,
           g.tokens_cached, g.retries
      FROM rg g
      LEFT JOIN rl l ON l.workspace_id = g.workspace_id AND l.agent_id = g.agent_id
                    AND l.provider IS NOT DISTINCT FROM g.provider
                    AND l.endpoint_host IS NOT DISTINCT FROM g.endpoint_host
                    AND l.model IS NOT DISTINCT FROM g.model
    UNION ALL
    SELECT u.workspace_id, u.agent_id, u.agent_name, u.provider, u.endpoint_host, u.model, u.runs, u.succeeded,
           u.failed, u.budget_exceeded, u.cancelled, u.expired, u.active, u.duration_max_ms, u.duration_h,
           u.queue_max_ms, u.queue_h, u.llm_calls, u.llm_max_ms, u.llm_h, u.tokens_in, u.tokens_out,
           u.tokens_cached, u.retries
      FROM agent._run_rollup_visible u
     WHERE (u.month AND u.day >= $4 AND u.day < $5)
        OR (NOT u.month AND u.day >= $6 AND u.day < $4)
        OR (NOT u.month AND u.day >= $5 AND u.day < $7)),
  g AS (
    SELECT p.workspace_id, p.agent_id, p.agent_name, p.provider, p.endpoint_host, p.model,
           sum(p.runs)::bigint AS runs, sum(p.succeeded)::bigint AS succeeded, sum(p.failed)::bigint AS failed,
           sum(p.budget_exceeded)::bigint AS budget_exceeded, sum(p.cancelled)::bigint AS cancelled,
           sum(p.expired)::bigint AS expired, sum(p.active)::bigint AS active,
           max(p.duration_max_ms) AS duration_max_ms, agent._hist_merge(p.duration_h) AS duration_h,
           max(p.queue_max_ms) AS queue_max_ms, agent._hist_merge(p.queue_h) AS queue_h,
           sum(p.llm_calls)::bigint AS llm_calls, max(p.llm_max_ms) AS llm_max_ms,
           agent._hist_merge(p.llm_h) AS llm_h,
           sum(p.tokens_in) AS tokens_in, sum(p.tokens_out) AS tokens_out, sum(p.tokens_cached) AS tokens_cached,
           sum(p.retries)::bigint AS retries
      FROM p
     GROUP BY p.workspace_id, p.agent_id, p.agent_name, p.provider, p.endpoint_host, p.model)
  SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model,
         g.runs, g.succeeded, g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active,
         round((g.failed + g.budget_exceeded + g.expired)::numeric
               / nullif(g.succeeded + g.failed + g.budget_exceeded + g.cancelled + g.expired, 0), 4),
         agent._hist_quantile(g.duration_h, 0.5), agent._hist_quantile(g.duration_h, 0.95), g.duration_max_ms,
         agent._hist_quantile(g.queue_h, 0.5), agent._hist_quantile(g.queue_h, 0.95), g.queue_max_ms,
         g.llm_calls, agent._hist_quantile(g.llm_h, 0.5), agent._hist_quantile(g.llm_h, 0.95), g.llm_max_ms,
         g.tokens_in, g.tokens_out, g.tokens_cached, g.retries
    FROM g
   ORDER BY g.workspace_id, g.agent_id, g.provider, g.endpoint_host, g.model
  $q$ USING run_stats.since, v_end1, v_beg2, v_m1, v_m2, v_d0, v_w;
END
$$;
COMMENT ON FUNCTION agent.run_stats(timestamptz) IS
  'Per workspace, agent, provider (kind and endpoint host) and model, over the runs queued since the given time (default: the last day): runs by status, failure rate (failed, budget_exceeded and expired over ended runs), p50/p95 (histogram quantiles: 32 buckets per doubling of ms, agent._hist_quantile) and max of duration, queue wait and LLM latency (ms), tokens in/out/cached, LLM calls and retries. The whole UTC days up to the rollup''s watermark come from agent.run_rollup (folded by agent.tick), the rest from agent.run_metrics, with the same figures; scoped like agent.run_metrics: the workspaces the caller may read; every workspace for pg_monitor and superusers.';

-- 950_operations.sql
CREATE OR REPLACE FUNCTION agent._worker_requeue(p_run_ids bigint[], p_worker_pid integer) RETURNS integer
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
       AND EXISTS (SELECT 1 FROM agent.run_state s
                    WHERE s.workspace_id = x.workspace_id AND s.run_id = x.id AND s.worker_pid = p_worker_pid)
    RETURNING x.*
  LOOP
    UPDATE agent.run_state s SET worker_pid = NULL WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id;
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

-- 950_operations.sql
CREATE OR REPLACE FUNCTION agent.cancel_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
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

-- 950_operations.sql
CREATE OR REPLACE FUNCTION agent.requeue_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
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
