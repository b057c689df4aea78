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
