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

\ir ../../functions/agent.deny_2.sql

COMMENT ON FUNCTION agent.deny(text, text) IS
  'Denies the one pending tool call with that key the user may decide (edit level): the model is told the person declined it and the run goes on (or fails "denied by <user>" when the agent''s scope has "deny_ends_run": true); see agent.deny(text, text, bigint, text). Returns the run id.';

\ir ../../functions/agent.consume_refusal.sql
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
\ir ../../functions/agent._check_approval_function.sql

\ir ../../functions/agent._check_scope.sql

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
