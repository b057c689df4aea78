CREATE OR REPLACE FUNCTION agent.mcp_agent_call_input(agent_id bigint, run_id bigint, exposed_name text,
                                           arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  e agent.mcp_elicitations%ROWTYPE;
  r jsonb;
  v_key text;
  v_ws text;
BEGIN
  SELECT m.server_id, m.tool INTO v_server_id, v_tool
    FROM agent.mcp_agent_tools(mcp_agent_call_input.agent_id, agent._mcp_run_user(mcp_agent_call_input.run_id)) m
   WHERE m.exposed_name = mcp_agent_call_input.exposed_name;
  IF v_server_id IS NULL THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));   -- the refusal, as there
  END IF;
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = v_server_id;
  -- only the stateless generation asks its questions this way: any other
  -- server goes the usual way, with the session kept per server and process
  IF s.protocol_version IS DISTINCT FROM '2026-07-28' THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));
  END IF;
  IF arguments IS NULL OR pg_catalog.jsonb_typeof(arguments) <> 'object' THEN
    arguments := '{}';
  END IF;
  v_key := agent.approval_key(exposed_name, arguments);
  -- an answered question of this run for this very call: send it (in the
  -- server's workspace, the run's: Citus routes by it)
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.workspace_id = s.workspace_id AND x.run_id = mcp_agent_call_input.run_id AND x.approval_key = v_key
     AND x.status = 'answered'
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF FOUND THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    PERFORM agent.consume_approval(run_id, exposed_name, arguments);
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, e.response, e.request_state);
  ELSE
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, NULL, NULL);
  END IF;
  IF coalesce((r->>'input_required')::boolean, false) THEN
    IF pg_catalog.jsonb_typeof(r->'input_requests') IS DISTINCT FROM 'object' THEN
      RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                           'result', agent._mcp_failed_result(r->>'error'));
    END IF;
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = mcp_agent_call_input.run_id;
    v_key := agent.request_approval(run_id, exposed_name, arguments);
    INSERT INTO agent.mcp_elicitations (workspace_id, run_id, approval_key, server_id, exposed_name,
                                        input_requests, request_state, expires_at)
    VALUES (v_ws, run_id, v_key, s.id, exposed_name, r->'input_requests', r->>'request_state',
            now() + pg_catalog.current_setting('pg_agents.approval_ttl')::interval);
    RETURN pg_catalog.jsonb_build_object('ok', false, 'paused', true, 'server', s.name, 'tool', v_tool,
                                         'approval_key', v_key,
                                         'questions', (SELECT pg_catalog.jsonb_agg(q.value->'params'->>'message')
                                                         FROM pg_catalog.jsonb_each(r->'input_requests') q));
  END IF;
  IF (r->>'ok')::boolean THEN
    RETURN pg_catalog.jsonb_build_object('ok', NOT coalesce((r->'result'->>'isError')::boolean, false),
                                         'server', s.name, 'tool', v_tool, 'result', r->'result');
  END IF;
  RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                       'result', agent._mcp_failed_result(r->>'error', r->'rpc_error'));
END
$$;
