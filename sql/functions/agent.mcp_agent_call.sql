CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb, user_id text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
BEGIN
  -- the audit rows of this call name user_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(mcp_agent_call.user_id, ''), true);
  SELECT m.server_id, m.tool INTO v_server_id, v_tool
    FROM agent.mcp_agent_tools(mcp_agent_call.agent_id, mcp_agent_call.user_id) m
   WHERE m.exposed_name = mcp_agent_call.exposed_name;
  IF v_server_id IS NULL THEN
    RETURN jsonb_build_object('ok', false, 'denied', true,
                              'error', format('tool "%s" is not available to this agent', exposed_name),
                              'result', agent._mcp_failed_result(format('tool "%s" is not available to this agent', exposed_name)));
  END IF;
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = v_server_id;
  IF arguments IS NULL OR jsonb_typeof(arguments) <> 'object' THEN
    arguments := '{}';
  END IF;
  r := agent._mcp_call(s.id, s.url, s.headers, v_tool, arguments);
  IF (r->>'ok')::boolean THEN
    RETURN jsonb_build_object('ok', NOT coalesce((r->'result'->>'isError')::boolean, false),
                              'server', s.name, 'tool', v_tool, 'result', r->'result');
  END IF;
  RETURN jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                            'result', agent._mcp_failed_result(r->>'error', r->'rpc_error'));
END
$$;
