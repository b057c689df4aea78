-- 0.3.0 -> 0.4.0, MCP calls of the worker made asynchronous
-- (sql/src/700_mcp.sql, 707_mcp_refresh.sql, 708_mcp_worker.sql): the tool
-- list's ttlMs and list_changed staleness, agent.mcp_refresh storing them,
-- agent.mcp_refresh_due honouring them, and the worker's prepare/finish
-- functions.

ALTER TABLE agent.mcp_servers ADD COLUMN tools_ttl_ms integer;
ALTER TABLE agent.mcp_servers ADD COLUMN tools_stale boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN agent.mcp_servers.tools_ttl_ms IS 'ttlMs the server gave with its last tools/list (how long the list may be cached), NULL when it gave none; the worker lists again once it passed.';
COMMENT ON COLUMN agent.mcp_servers.tools_stale IS 'The server said its tool list changed (notifications/tools/list_changed during a worker''s call): listed again at the worker''s next refresh pass.';

CREATE OR REPLACE FUNCTION agent.mcp_refresh_due(max_age interval DEFAULT '1 hour', max_servers integer DEFAULT 5)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
  n integer := 0;
BEGIN
  IF max_age IS NULL OR max_age < interval '1 minute' THEN
    RAISE EXCEPTION 'max_age must be at least one minute' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR v_id IN SELECT s.id FROM agent.mcp_servers s
               WHERE s.enabled AND s.last_error IS NULL
                 AND (s.tools_stale OR s.tools_refreshed_at < now() - max_age
                      OR (s.tools_ttl_ms IS NOT NULL AND s.tools_refreshed_at <
                          now() - greatest(make_interval(secs => s.tools_ttl_ms / 1000.0), interval '5 minutes')))
                 AND agent._workspace_ok(s.workspace_id)
               ORDER BY s.tools_stale DESC, s.tools_refreshed_at, s.id
               LIMIT greatest(coalesce(max_servers, 5), 1) LOOP
    PERFORM agent.mcp_refresh(v_id);
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh_due(interval, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh_due(interval, integer) IS
  'Worker and admin: lists again the tools of at most max_servers enabled servers whose list is stale (the server said it changed), older than the server''s ttlMs (at least five minutes), or older than max_age (a server whose last refresh failed is left to the admin); returns how many were refreshed.';

COMMENT ON FUNCTION agent._mcp_list(bigint, text, jsonb) IS
  'Internal: initialize and tools/list (all pages) over HTTP from this backend; returns {"ok": true, "protocolVersion", "serverInfo", "tools", "ttlMs"?} or {"ok": false, "error"}; never raises for a remote failure.';

CREATE OR REPLACE FUNCTION agent.mcp_refresh(server_id bigint)
RETURNS TABLE(id bigint, name text, connected boolean, tool_count integer, error text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
  t jsonb;
  v_names text[] := '{}';
  v_name text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m
   WHERE m.id = mcp_refresh.server_id AND agent._workspace_ok(m.workspace_id) FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_refresh.server_id USING ERRCODE = 'undefined_object';
  END IF;
  r := agent._mcp_list(s.id, s.url, s.headers);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_servers m SET last_error = r->>'error' WHERE m.id = s.id;
    RETURN QUERY SELECT s.id, s.name, false, NULL::integer, r->>'error';
    RETURN;
  END IF;
  FOR t IN SELECT * FROM jsonb_array_elements(r->'tools') LOOP
    v_name := t->>'name';
    IF v_name IS NULL OR v_name = ANY (v_names) THEN
      CONTINUE;
    END IF;
    v_names := v_names || v_name;
    INSERT INTO agent.mcp_tools AS mt (workspace_id, server_id, name, exposed_name, description,
                                       input_schema, annotations, refreshed_at)
    VALUES (s.workspace_id, s.id, v_name, agent._mcp_exposed_name(s.id, v_name), t->>'description',
            CASE WHEN jsonb_typeof(t->'inputSchema') = 'object' THEN t->'inputSchema'
                 ELSE '{"type": "object"}' END,
            t->'annotations', now())
    ON CONFLICT ON CONSTRAINT mcp_tools_pkey DO UPDATE
       SET description = EXCLUDED.description, input_schema = EXCLUDED.input_schema,
           annotations = EXCLUDED.annotations, refreshed_at = EXCLUDED.refreshed_at;
  END LOOP;
  DELETE FROM agent.mcp_tools mt WHERE mt.server_id = s.id AND NOT (mt.name = ANY (v_names));
  UPDATE agent.mcp_servers m
     SET last_error = NULL, tools_refreshed_at = now(),
         protocol_version = r->>'protocolVersion', server_info = r->'serverInfo',
         tools_ttl_ms = CASE WHEN jsonb_typeof(r->'ttlMs') = 'number' THEN (r->>'ttlMs')::integer END,
         tools_stale = false
   WHERE m.id = s.id;
  RETURN QUERY SELECT s.id, s.name, true, cardinality(v_names), NULL::text;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh(bigint) IS
  'Connects to one MCP server from this backend (initialize, tools/list to the last page) and replaces its tools in agent.mcp_tools; a failure is recorded in last_error and returned, never raised.';

CREATE FUNCTION agent._mcp_worker_prepare(p_run_id bigint, p_exposed_name text, p_arguments jsonb,
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
     WHERE x.run_id = p_run_id AND x.approval_key = v_key AND x.status = 'answered'
     ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
    IF FOUND THEN
      UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.id = e.id;
      PERFORM agent.consume_approval(p_run_id, p_exposed_name, p_arguments);
      v_out := v_out || pg_catalog.jsonb_build_object('input_responses', e.response,
                                                      'request_state', e.request_state);
    END IF;
  END IF;
  RETURN v_out;
END
$$;
REVOKE ALL ON FUNCTION agent._mcp_worker_prepare(bigint, text, jsonb, bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_prepare(bigint, text, jsonb, bigint, text, jsonb) IS
  'Internal (worker): prepares an MCP tool call of a run (the tool as agent.mcp_agent_tools gave it, the approval gate passed) for the asynchronous request: {"prepared": true, "server_id", "server", "tool", "url", "headers", "protocol_version", "arguments", "tool_def", "input_responses"?, "request_state"?} (an answered elicitation of this call is consumed with its approval), or a refusal when the server is gone or disabled. Holds the server''s headers: superusers only, never recorded.';

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
