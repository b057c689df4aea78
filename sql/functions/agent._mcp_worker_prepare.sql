CREATE OR REPLACE FUNCTION agent._mcp_worker_prepare(p_run_id bigint, p_exposed_name text, p_arguments jsonb,
                                          p_server_id bigint, p_tool text, p_input_schema jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  e agent.mcp_elicitations%ROWTYPE;
  v_key text;
  v_out jsonb;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = p_server_id AND m.enabled;
  IF NOT FOUND THEN
    RETURN pg_catalog.jsonb_build_object('ok', false, 'denied', true,
                                         'error', pg_catalog.format('tool "%s" is not available to this agent', p_exposed_name),
                                         'result', agent._mcp_failed_result(pg_catalog.format('tool "%s" is not available to this agent', p_exposed_name)));
  END IF;
  IF p_arguments IS NULL OR pg_catalog.jsonb_typeof(p_arguments) <> 'object' THEN
    p_arguments := '{}';
  END IF;
  v_out := pg_catalog.jsonb_build_object('prepared', true, 'server_id', s.id, 'server', s.name, 'tool', p_tool,
                                         'url', s.url, 'headers', s.headers,
                                         'protocol_version', s.protocol_version, 'arguments', p_arguments,
                                         'tool_def', pg_catalog.jsonb_build_object('name', p_tool, 'inputSchema', p_input_schema));
  IF s.protocol_version = '2026-07-28' THEN
    -- an answered question of this run for this very call: sent with it
    v_key := agent.approval_key(p_exposed_name, p_arguments);
    SELECT * INTO e FROM agent.mcp_elicitations x
     WHERE x.workspace_id = s.workspace_id AND x.run_id = p_run_id AND x.approval_key = v_key AND x.status = 'answered'
     ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
    IF FOUND THEN
      UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
      PERFORM agent.consume_approval(p_run_id, p_exposed_name, p_arguments);
      v_out := v_out || pg_catalog.jsonb_build_object('input_responses', e.response,
                                                      'request_state', e.request_state);
    END IF;
  END IF;
  RETURN v_out;
END
$$;
