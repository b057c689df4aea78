CREATE FUNCTION agent._mcp_worker_elicit(p_run_id bigint, p_exposed_name text, p_arguments jsonb,
                                         p_server_id bigint, p_request jsonb, p_wait_s integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
  v_key text;
  v_id bigint;
  v_ap bigint;
  v_until timestamptz;
  v_rid text;
BEGIN
  SELECT * INTO r FROM agent.runs x WHERE x.id = p_run_id;
  IF p_arguments IS NULL OR pg_catalog.jsonb_typeof(p_arguments) <> 'object' THEN
    p_arguments := '{}';
  END IF;
  v_rid := coalesce(p_request->>'id', '');
  -- a key of this very question (never the call's own approval key, which
  -- would let an answer pass the call's approval gate)
  v_key := agent.approval_key(p_exposed_name, pg_catalog.jsonb_build_object('arguments', p_arguments,
                                                                            'elicitation', p_request, 'run', p_run_id));
  v_until := pg_catalog.now() + LEAST(pg_catalog.current_setting('pg_agents.approval_ttl')::interval,
                                      pg_catalog.make_interval(secs => greatest(p_wait_s, 1)));
  INSERT INTO agent.approvals (workspace_id, run_id, approval_key, tool, input, status, expires_at)
  VALUES (r.workspace_id, r.id, v_key, p_exposed_name, agent.redact(p_arguments), 'pending', v_until)
  RETURNING id INTO v_ap;
  PERFORM agent._audit_event('approval.request', 'success', 'approval', v_ap::text, r.workspace_id,
                             (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
                             pg_catalog.jsonb_build_object('run_id', r.id, 'tool', p_exposed_name, 'approval_key', v_key,
                                                           'elicitation', true),
                             pg_catalog.format('run %s: MCP server asks a person during %s', r.id, p_exposed_name));
  INSERT INTO agent.mcp_elicitations (workspace_id, run_id, approval_key, server_id, exposed_name,
                                      input_requests, expires_at, live)
  VALUES (r.workspace_id, r.id, v_key, p_server_id, p_exposed_name,
          pg_catalog.jsonb_build_object(v_rid, pg_catalog.jsonb_build_object('method', 'elicitation/create',
                                                                           'params', p_request->'params')),
          v_until, true)
  RETURNING id INTO v_id;
  RETURN pg_catalog.jsonb_build_object('id', v_id, 'approval_key', v_key,
                                       'questions', pg_catalog.jsonb_build_array(p_request->'params'->>'message'));
END
$$;
REVOKE ALL ON FUNCTION agent._mcp_worker_elicit(bigint, text, jsonb, bigint, jsonb, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_elicit(bigint, text, jsonb, bigint, jsonb, integer) IS
  'Internal (worker): stores a 2025-11-25 server''s elicitation/create request that waits on the open stream of a run''s tool call (a live agent.mcp_elicitations row, a pending approval of its own key, expiring after p_wait_s seconds or pg_agents.approval_ttl, whichever is shorter); the run stays running. Returns {"id", "approval_key", "questions"}.';
