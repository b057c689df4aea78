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
