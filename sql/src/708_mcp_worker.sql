-- pg_agents: asynchronous MCP calls of the worker (docs/mcp.md, "How the
-- worker calls MCP servers").
--
-- The worker never holds a transaction across an MCP request: a short
-- transaction checks the call and prepares it (agent._mcp_worker_prepare,
-- after the approval gate), the request goes out through the worker's curl
-- multi handle with no transaction open, and a second short transaction
-- records the answer (agent._mcp_worker_finish): the same step, the same
-- pause for people (2026-07-28 input_required) and the same failed results
-- as agent.mcp_agent_call_input, which stays for synchronous use.

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

-- A 2025-11-25 server's elicitation/create request in the stream of a
-- worker's call (docs/mcp.md, "Elicitation"): the stream stays open, the run
-- stays running in its slot, the question waits for people like an approval
-- (agent.mcp_pending_input, agent.answer_elicitation) for
-- pg_agents.mcp_elicitation_wait at most (or pg_agents.approval_ttl, if
-- shorter); the worker looks for the answer (agent._mcp_worker_elicit_poll)
-- and sends it on the server's session.
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

CREATE FUNCTION agent._mcp_worker_elicit_poll(p_id bigint, p_expire boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_ap text;
  v_out jsonb;
  -- the question's workspace (Citus routes by it): the session's, else its own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.mcp_elicitations x WHERE x.workspace_id = v_ws AND x.id = p_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_elicitations x WHERE x.id = p_id;
  END IF;
  SELECT * INTO e FROM agent.mcp_elicitations x WHERE x.workspace_id = v_ws AND x.id = p_id AND x.live FOR UPDATE;
  IF NOT FOUND OR e.status IN ('consumed', 'expired') THEN
    RETURN '{"action": "cancel"}';
  END IF;
  IF e.status = 'answered' THEN
    v_out := (SELECT v.value FROM pg_catalog.jsonb_each(e.response) v LIMIT 1);
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN coalesce(v_out, '{"action": "cancel"}');
  END IF;
  SELECT p.status INTO v_ap FROM agent.approvals p
   WHERE p.run_id = e.run_id AND p.approval_key = e.approval_key ORDER BY p.id DESC LIMIT 1;
  -- decided as an approval, not answered: denied is a decline, approved
  -- without content a cancel (no form was filled in)
  IF v_ap = 'denied' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "decline"}', answered_at = now()
     WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN '{"action": "decline"}';
  END IF;
  IF v_ap = 'approved' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "cancel"}', answered_at = now()
     WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN '{"action": "cancel"}';
  END IF;
  IF coalesce(p_expire, false) OR e.expires_at <= now() OR v_ap = 'expired' THEN
    UPDATE agent.mcp_elicitations x SET status = 'expired', response = '{"action": "cancel"}' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    UPDATE agent.approvals p SET status = 'expired', decided_at = now()
     WHERE p.run_id = e.run_id AND p.approval_key = e.approval_key AND p.status = 'pending';
    PERFORM agent._audit_event('approval.expire', 'success', 'approval', e.id::text, e.workspace_id, NULL,
                               pg_catalog.jsonb_build_object('run_id', e.run_id, 'tool', e.exposed_name,
                                                             'approval_key', e.approval_key, 'elicitation', true),
                               pg_catalog.format('question of %s on run %s expired: cancel sent to the server',
                                                 e.exposed_name, e.run_id));
    RETURN '{"action": "cancel"}';
  END IF;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION agent._mcp_worker_elicit_poll(bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_elicit_poll(bigint, boolean) IS
  'Internal (worker): the answer to send to the server for a live elicitation: a person''s (agent.answer_elicitation, then consumed), a decline when its approval was denied, a cancel when it was approved without an answer, or when it expired (p_expire: pg_agents.mcp_elicitation_wait passed; recorded as expired, with its approval); NULL while it waits.';
