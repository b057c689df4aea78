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

