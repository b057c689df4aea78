-- 0.3.0 -> 0.4.0: approvals (issue 18).  A denied call is refused to the
-- model and the run goes on (deny_ends_run keeps the old end), agent.deny
-- takes a reason, agent.consume_refusal; conditional gates
-- (scope.approval_rules) checked at save.

ALTER TABLE agent.approvals ADD COLUMN reason text;
COMMENT ON COLUMN agent.approvals.reason IS
  'Why the call was denied, as the denying user gave it (agent.deny); the model is told it with the refusal.';

COMMENT ON COLUMN agent.approvals.consumed_at IS 'When the approved call was executed, or the refusal of a denied call given to the model (once).';

CREATE OR REPLACE FUNCTION agent._record_decision(ap agent.approvals, p_by_user text, p_decision text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  UPDATE agent.approvals p SET status = p_decision, decided_by = p_by_user, decided_at = now() WHERE p.id = ap.id;
  PERFORM agent._audit_event(CASE p_decision WHEN 'approved' THEN 'approval.approve' ELSE 'approval.deny' END,
                             CASE p_decision WHEN 'approved' THEN 'success' ELSE 'denied' END,
                             'approval', ap.id::text, ap.workspace_id,
                             (SELECT a.owner_id FROM agent.agents a JOIN agent.runs x ON x.agent_id = a.id
                               WHERE x.id = ap.run_id),
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool,
                                                'approval_key', ap.approval_key, 'by_user', p_by_user)
                               || CASE WHEN ap.reason IS NOT NULL THEN jsonb_build_object('reason', ap.reason)
                                       ELSE '{}'::jsonb END,
                             format('%s %s %s on run %s', p_by_user, p_decision, ap.tool, ap.run_id),
                             CASE p_decision WHEN 'denied' THEN 'denied' END);
END
$$;
REVOKE ALL ON FUNCTION agent._record_decision(agent.approvals, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._record_decision(agent.approvals, text, text) IS
  'Internal: records an approve or deny decision on one approval and its audit row.';

-- A denied call is refused to the model and the run goes on (the human
-- approval page: the model hears that the person said no); an agent whose
-- scope says "deny_ends_run": true keeps the 0.3.0 behaviour (the run fails).
CREATE FUNCTION agent.deny(approval_key text, by_user text, run_id bigint, reason text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  ap     agent.approvals%ROWTYPE;
  r      agent.runs%ROWTYPE;
  v_why  text := nullif(pg_catalog.btrim(deny.reason), '');
BEGIN
  IF pg_catalog.char_length(v_why) > 1000 THEN
    RAISE EXCEPTION 'reason of a denial is too long'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('A reason has at most 1000 characters; this one has %s.', pg_catalog.char_length(v_why));
  END IF;
  ap := agent._approval_to_decide(deny.approval_key, by_user, deny.run_id);
  UPDATE agent.approvals p SET reason = v_why WHERE p.id = ap.id;
  ap.reason := v_why;
  PERFORM agent._record_decision(ap, by_user, 'denied');
  IF coalesce((SELECT a.scope -> 'deny_ends_run' = 'true'::jsonb
                 FROM agent.agents a JOIN agent.runs x ON x.agent_id = a.id WHERE x.id = ap.run_id), false) THEN
    PERFORM agent._finish_run(ap.run_id, 'failed', NULL, format('denied by %s', by_user));
    RETURN ap.run_id;
  END IF;
  -- the run resumes: the worker hands the model a refusal for this call
  -- (agent.consume_refusal) and goes on from there
  SELECT * INTO r FROM agent.runs x WHERE x.id = ap.run_id FOR UPDATE;
  IF r.status = 'waiting_approval'
     AND NOT EXISTS (SELECT 1 FROM agent.approvals p WHERE p.run_id = r.id AND p.status = 'pending') THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.resume', r, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: %s declined %s', r.id, by_user, ap.tool));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
  END IF;
  RETURN ap.run_id;
END
$$;
COMMENT ON FUNCTION agent.deny(text, text, bigint, text) IS
  'Denies one pending tool call (edit level on the agent required; run_id may be NULL unless the key is pending on several runs the user may decide), with an optional reason (at most 1000 characters) the model is told. The call never runs; the run goes back to queued once none of its approvals is pending and the model receives "the person declined this call" (with the reason) as the call''s result. An agent whose scope has "deny_ends_run": true fails the run with "denied by <user>" instead. Returns the run id.';

CREATE OR REPLACE FUNCTION agent.deny(approval_key text, by_user text, run_id bigint) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT agent.deny($1, $2, $3, NULL::text) $$;
COMMENT ON FUNCTION agent.deny(text, text, bigint) IS
  'Denies one pending tool call without a reason; see agent.deny(text, text, bigint, text). Returns the run id.';

COMMENT ON FUNCTION agent.deny(text, text) IS
  'Denies the one pending tool call with that key the user may decide (edit level): the model is told the person declined it and the run goes on (or fails "denied by <user>" when the agent''s scope has "deny_ends_run": true); see agent.deny(text, text, bigint, text). Returns the run id.';

CREATE FUNCTION agent.consume_refusal(run_id bigint, tool text, input jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_key text := agent.approval_key(tool, coalesce(consume_refusal.input, '{}'));
  ap    agent.approvals%ROWTYPE;
BEGIN
  UPDATE agent.approvals p SET consumed_at = clock_timestamp()
   WHERE p.id = (SELECT q.id FROM agent.approvals q
                  WHERE q.run_id = consume_refusal.run_id AND q.approval_key = v_key
                    AND q.status IN ('denied', 'expired') AND q.consumed_at IS NULL
                    AND agent._workspace_ok(q.workspace_id)
                  ORDER BY q.id LIMIT 1
                  FOR UPDATE SKIP LOCKED)
     AND p.consumed_at IS NULL
  RETURNING * INTO ap;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  PERFORM agent._audit_event('approval.refuse', 'denied', 'approval', ap.id::text, ap.workspace_id, NULL,
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool, 'approval_key', ap.approval_key,
                                                'status', ap.status),
                             format('run %s is told that the call of %s was %s', ap.run_id, ap.tool, ap.status),
                             ap.status);
  RETURN jsonb_build_object('status', ap.status, 'decided_by', ap.decided_by, 'reason', ap.reason);
END
$$;
COMMENT ON FUNCTION agent.consume_refusal(bigint, text, jsonb) IS
  'For the executor, before a gated tool call: the decision {"status": "denied" | "expired", "decided_by", "reason"} exactly once for a denied (or expired), not yet delivered approval of that run with that tool and input (consumed_at is set), so that the model is told once and a later identical call asks again; NULL otherwise.';

CREATE OR REPLACE FUNCTION agent._check_settings(p_settings jsonb) RETURNS void
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


-- pg_agents: what an agent's scope says about approvals (docs/runs.md,
-- "When a call needs approval"): "deny_ends_run" and the conditional gates
-- of "approval_rules", checked when the settings are saved.  The worker
-- checks a rule's function again at every call (src/approval_rules.c).

-- The functions that may serve as an approval rule's predicate, as the
-- worker will call them: (text, jsonb, bigint) RETURNS boolean, a plain
-- function (not an aggregate, a window function or a procedure), not of
-- the schemas agent, pg_catalog or information_schema, SECURITY DEFINER
-- only when a superuser owns it; the role saving the settings and the tool
-- role must both be allowed to execute it.
CREATE FUNCTION agent._check_approval_function(p_signature text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_fn    oid;
  p       record;
  v_saver regrole := agent._saving_role(NULL);
BEGIN
  BEGIN
    v_fn := pg_catalog.to_regprocedure(p_signature);
  EXCEPTION WHEN OTHERS THEN
    v_fn := NULL;
  END;
  IF v_fn IS NULL THEN
    RAISE EXCEPTION 'approval rule function % does not exist', p_signature
      USING ERRCODE = 'undefined_function',
            DETAIL = 'An approval rule names a function by its schema-qualified signature, e.g. app.needs_review(text, jsonb, bigint).';
  END IF;
  SELECT pg_catalog.oidvectortypes(f.proargtypes) AS args, f.prorettype, f.proretset, f.prokind, f.prosecdef,
         n.nspname, r.rolsuper AS owner_super
    INTO p
    FROM pg_catalog.pg_proc f
    JOIN pg_catalog.pg_namespace n ON n.oid = f.pronamespace
    JOIN pg_catalog.pg_roles r ON r.oid = f.proowner
   WHERE f.oid = v_fn;
  IF p.args <> 'text, jsonb, bigint'
     OR p.prorettype <> 'pg_catalog.bool'::regtype OR p.proretset OR p.prokind <> 'f' THEN
    RAISE EXCEPTION 'approval rule function % has the wrong signature', v_fn::regprocedure
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A predicate takes (tool text, input jsonb, run_id bigint) and returns boolean.';
  END IF;
  IF p.nspname IN ('agent', 'pg_catalog', 'information_schema') THEN
    RAISE EXCEPTION 'approval rule function % is not a predicate', v_fn::regprocedure
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('Functions of schema %s are never called as approval rules.', p.nspname);
  END IF;
  IF p.prosecdef AND NOT p.owner_super THEN
    RAISE EXCEPTION 'approval rule function % is SECURITY DEFINER', v_fn::regprocedure
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A predicate runs as the tool role with the model''s input; a SECURITY DEFINER function would run it with its owner''s rights, which only a superuser may vouch for.',
            HINT = 'Make the function SECURITY INVOKER, or have a superuser own it.';
  END IF;
  IF NOT pg_catalog.has_function_privilege(v_saver, v_fn, 'EXECUTE') THEN
    RAISE EXCEPTION 'permission denied for function %', v_fn::regprocedure
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = pg_catalog.format('The role saving the settings (%s) may not execute it.', v_saver);
  END IF;
  IF NOT pg_catalog.has_function_privilege('agents_tool', v_fn, 'EXECUTE') THEN
    RAISE EXCEPTION 'role agents_tool may not execute approval rule function %', v_fn::regprocedure
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'The worker calls a predicate as the tool role.',
            HINT = pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO agents_tool;', v_fn::regprocedure);
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._check_approval_function(text) FROM PUBLIC;
COMMENT ON FUNCTION agent._check_approval_function(text) IS
  'Internal (agent._check_scope): refuses a function that may not serve as an approval rule: unknown (42883), not (text, jsonb, bigint) RETURNS boolean or of schema agent, pg_catalog or information_schema (22023), SECURITY DEFINER and not owned by a superuser, or not executable by the saving role or by agents_tool (42501).';

CREATE FUNCTION agent._check_scope(p_scope jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_rules jsonb := p_scope -> 'approval_rules';
  r       jsonb;
  v_tools jsonb;
  v_key   text;
  v_val   jsonb;
BEGIN
  -- every scope key is one the worker reads (docs/worker.md, "Per agent");
  -- another would be stored and ignored (issue 31)
  FOR v_key, v_val IN SELECT * FROM jsonb_each(p_scope) LOOP
    CASE v_key
      WHEN 'deny_ends_run', 'approval_rules' THEN
        NULL;  -- checked below
      WHEN 'llm_url' THEN
        NULL;  -- checked on the agents row (the allowlist)
      WHEN 'provider', 'embedding_model' THEN
        IF jsonb_typeof(v_val) NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'scope key "%" must be a string or null', v_key USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'llm_provider' THEN
        IF jsonb_typeof(v_val) <> 'null' AND (jsonb_typeof(v_val) <> 'string' OR v_val #>> '{}' NOT IN ('openai', 'anthropic')) THEN
          RAISE EXCEPTION 'scope key "llm_provider" must be openai or anthropic' USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The wire format of the agent''s own endpoint (scope llm_url).';
        END IF;
      WHEN 'max_tokens' THEN
        IF jsonb_typeof(v_val) <> 'null' AND NOT (jsonb_typeof(v_val) = 'number' AND (v_val #>> '{}') ~ '^[0-9]{1,8}$'
                                              AND (v_val #>> '{}')::integer BETWEEN 1 AND 10000000) THEN
          RAISE EXCEPTION 'scope key "max_tokens" must be an integer between 1 and 10000000, or null' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'needs_approval' THEN
        IF jsonb_typeof(v_val) <> 'null' AND (jsonb_typeof(v_val) <> 'array'
              OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_val) t WHERE jsonb_typeof(t) <> 'string')) THEN
          RAISE EXCEPTION 'scope key "needs_approval" must be an array of tool names' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'manage_jobs' THEN
        IF jsonb_typeof(v_val) NOT IN ('boolean', 'null') THEN
          RAISE EXCEPTION 'scope key "manage_jobs" must be a boolean' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      ELSE
        RAISE EXCEPTION 'unknown scope key "%"', v_key
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Scope keys are provider, llm_url, llm_provider, embedding_model, max_tokens, needs_approval, manage_jobs, approval_rules and deny_ends_run; the worker reads no other.',
                HINT = 'docs/worker.md ("Per agent") says what each key does.';
    END CASE;
  END LOOP;
  IF p_scope ? 'deny_ends_run' AND jsonb_typeof(p_scope -> 'deny_ends_run') <> 'boolean' THEN
    RAISE EXCEPTION 'scope key "deny_ends_run" must be a boolean' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_rules IS NULL OR jsonb_typeof(v_rules) = 'null' THEN
    RETURN;
  END IF;
  IF jsonb_typeof(v_rules) <> 'array' OR jsonb_array_length(v_rules) > 50 THEN
    RAISE EXCEPTION 'scope key "approval_rules" must be an array of at most 50 rules'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A rule is {"tools": ["write_resource", "mcp__*"], "function": "app.needs_review(text, jsonb, bigint)"}.';
  END IF;
  FOR r IN SELECT * FROM jsonb_array_elements(v_rules) LOOP
    v_tools := CASE WHEN jsonb_typeof(r) = 'object' THEN r -> 'tools' END;
    IF jsonb_typeof(r) <> 'object'
       OR EXISTS (SELECT 1 FROM jsonb_object_keys(r) k WHERE k NOT IN ('tools', 'function'))
       OR jsonb_typeof(r -> 'function') IS DISTINCT FROM 'string'
       OR jsonb_typeof(v_tools) IS DISTINCT FROM 'array' OR jsonb_array_length(v_tools) = 0
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_tools) t
                   WHERE jsonb_typeof(t) <> 'string' OR (t #>> '{}') !~ '^[A-Za-z0-9_.:*-]{1,200}$') THEN
      RAISE EXCEPTION 'invalid approval rule %', r::text
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'A rule is {"tools": [tool names or patterns, * matching any characters], "function": "schema.name(text, jsonb, bigint)"}.';
    END IF;
    PERFORM agent._check_approval_function(r ->> 'function');
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent._check_scope(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._check_scope(jsonb) IS
  'Internal (agent._check_settings): refuses a scope with a key the worker does not read (22023; known: provider, llm_url, llm_provider, embedding_model, max_tokens, needs_approval, manage_jobs, approval_rules, deny_ends_run) or a value of the wrong type, whose "deny_ends_run" is not a boolean, or whose "approval_rules" is not an array of {"tools": [patterns], "function": signature} naming usable predicates (agent._check_approval_function).';

-- an executor bound to a workspace consumes only its workspace's approvals
CREATE OR REPLACE FUNCTION agent.consume_approval(run_id bigint, tool text, input jsonb) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_key text := agent.approval_key(tool, coalesce(consume_approval.input, '{}'));
  ap    agent.approvals%ROWTYPE;
BEGIN
  UPDATE agent.approvals p SET consumed_at = clock_timestamp()
   WHERE p.id = (SELECT q.id FROM agent.approvals q
                  WHERE q.run_id = consume_approval.run_id AND q.approval_key = v_key
                    AND q.status = 'approved' AND q.consumed_at IS NULL
                    AND agent._workspace_ok(q.workspace_id)
                  ORDER BY q.id LIMIT 1
                  FOR UPDATE SKIP LOCKED)
     AND p.consumed_at IS NULL
  RETURNING * INTO ap;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM agent._audit_event('approval.consume', 'success', 'approval', ap.id::text, ap.workspace_id, NULL,
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool, 'approval_key', ap.approval_key),
                             format('run %s executes the approved call of %s', ap.run_id, ap.tool));
  RETURN true;
END
$$;
COMMENT ON FUNCTION agent.consume_approval(bigint, text, jsonb) IS
  'For the executor, before a gated tool call: true exactly once for an approved, not yet consumed approval of that run with that tool and input (consumed_at is set); false otherwise (ask with agent.request_approval), and for a run of another workspace than the session''s.';
