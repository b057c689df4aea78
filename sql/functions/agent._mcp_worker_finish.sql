CREATE FUNCTION agent._mcp_worker_finish(p_run_id bigint, p_exposed_name text, p_arguments jsonb,
                                         p_server_id bigint, p_server text, p_tool text,
                                         p_answer jsonb, p_list_changed boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_key text;
  v_ws text;
BEGIN
  IF coalesce(p_list_changed, false) THEN
    UPDATE agent.mcp_servers m SET tools_stale = true WHERE m.id = p_server_id AND NOT m.tools_stale;
  END IF;
  IF p_arguments IS NULL OR pg_catalog.jsonb_typeof(p_arguments) <> 'object' THEN
    p_arguments := '{}';
  END IF;
  IF coalesce((p_answer->>'input_required')::boolean, false) THEN
    IF pg_catalog.jsonb_typeof(p_answer->'input_requests') IS DISTINCT FROM 'object' THEN
      RETURN pg_catalog.jsonb_build_object('ok', false, 'server', p_server, 'tool', p_tool, 'error', p_answer->>'error',
                                           'result', agent._mcp_failed_result(p_answer->>'error'));
    END IF;
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
    v_key := agent.request_approval(p_run_id, p_exposed_name, p_arguments);
    INSERT INTO agent.mcp_elicitations (workspace_id, run_id, approval_key, server_id, exposed_name,
                                        input_requests, request_state, expires_at)
    VALUES (v_ws, p_run_id, v_key, p_server_id, p_exposed_name, p_answer->'input_requests',
            p_answer->>'request_state', now() + pg_catalog.current_setting('pg_agents.approval_ttl')::interval);
    RETURN pg_catalog.jsonb_build_object('ok', false, 'paused', true, 'server', p_server, 'tool', p_tool,
                                         'approval_key', v_key,
                                         'questions', (SELECT pg_catalog.jsonb_agg(q.value->'params'->>'message')
                                                         FROM pg_catalog.jsonb_each(p_answer->'input_requests') q));
  END IF;
  IF coalesce((p_answer->>'ok')::boolean, false) THEN
    RETURN pg_catalog.jsonb_build_object('ok', NOT coalesce((p_answer->'result'->>'isError')::boolean, false),
                                         'server', p_server, 'tool', p_tool, 'result', p_answer->'result');
  END IF;
  RETURN pg_catalog.jsonb_build_object('ok', false, 'server', p_server, 'tool', p_tool, 'error', p_answer->>'error',
                                       'result', agent._mcp_failed_result(p_answer->>'error', p_answer->'rpc_error'));
END
$$;
REVOKE ALL ON FUNCTION agent._mcp_worker_finish(bigint, text, jsonb, bigint, text, text, jsonb, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_finish(bigint, text, jsonb, bigint, text, text, jsonb, boolean) IS
  'Internal (worker): what an asynchronous MCP tool call of a run came back with (p_answer: {"ok": true, "result"}, {"ok": false, "input_required": true, "input_requests", "request_state"} or {"ok": false, "error", "rpc_error"?}), as agent.mcp_agent_call_input returns it: a 2026-07-28 server asking for input pauses the run for people; p_list_changed marks the server''s tool list stale.';
