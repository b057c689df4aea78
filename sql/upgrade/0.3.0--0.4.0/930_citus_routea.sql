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
\ir ../../functions/agent._user_level.sql

-- 100_access.sql
\ir ../../functions/agent.visible_agents.sql

-- 100_access.sql
\ir ../../functions/agent._agent_for.sql

-- 100_access.sql
\ir ../../functions/agent._agent_named.sql

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
\ir ../../functions/agent.unshare.sql
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
\ir ../../functions/agent._check_delegation.sql

-- 100_access.sql
\ir ../../functions/agent._apply_settings.sql

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
\ir ../../functions/agent._write_version.sql

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
\ir ../../functions/agent._user_reads.sql

-- 100_access.sql
\ir ../../functions/agent._deputy_filter.sql

-- 100_access.sql
\ir ../../functions/agent._duplicate.sql
REVOKE ALL ON FUNCTION agent._duplicate(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._duplicate(bigint, text) IS
  'Internal: the body of agent.duplicate.';

-- 100_access.sql
\ir ../../functions/agent._history_hold.sql

-- 100_access.sql
\ir ../../functions/agent._trigger_direct_write.sql

-- 100_access.sql
\ir ../../functions/agent._triggers_history.sql

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
\ir ../../functions/agent.delete_trigger.sql
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
\ir ../../functions/agent.delete_agent.sql
REVOKE ALL ON FUNCTION agent.delete_agent(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.delete_agent(bigint, text) IS
  'Soft-deletes an agent (full level): deleted_at is set; it loses every access and every level, and its history stays.';

-- 200_audit.sql
\ir ../../functions/agent.audit_events.sql

-- 210_reads.sql
\ir ../../functions/agent._may_read_workspace.sql

-- 410_overlaps.sql
\ir ../../functions/agent._launch_first.sql

-- 410_overlaps.sql
\ir ../../functions/agent.trigger_overlaps.sql

-- 410_overlaps.sql
\ir ../../functions/agent._triggers_warn_overlap.sql

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
\ir ../../functions/agent.readable_resources.sql

-- 500_allowlist.sql
\ir ../../functions/agent._allowlist_denied.sql

-- 800_activity.sql
\ir ../../functions/agent._trigger_label.sql

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
\ir ../../functions/agent.run_detail.sql

-- 800_activity.sql
\ir ../../views/agent.insights.sql

-- 800_activity.sql
\ir ../../functions/agent.insights.sql
COMMENT ON FUNCTION agent.insights(bigint, text, timestamptz, timestamptz) IS
  'Insights of one agent over [since, until) of created_at (full level only, 42501 otherwise, unknown agents and agents of another workspace than the session''s included): one row per section and key — total, status, day and week (UTC), model, origin: runs, succeeded, failed (failed, budget_exceeded, expired), failure_rate over finished runs, own tokens — and resource: granted (agent.access now) versus actually read (read steps of the period), with runs that read it and a state granted_and_read, granted_not_read or read_not_granted.';

-- 800_activity.sql
\ir ../../functions/agent._assistant_for.sql

-- 800_activity.sql
\ir ../../functions/agent.draft.sql

-- 950_operations.sql
\ir ../../views/agent.run_metrics.sql

-- 950_operations.sql
\ir ../../functions/agent.run_stats.sql

-- 950_operations.sql
\ir ../../functions/agent._worker_requeue.sql

-- 950_operations.sql
\ir ../../functions/agent.cancel_runs.sql

-- 950_operations.sql
\ir ../../functions/agent.requeue_runs.sql
