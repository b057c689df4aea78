-- pg_agents: elicitation through people (docs/mcp.md, "Elicitation").
--
-- When an MCP server asks for input in the middle of a worker's tool call
-- (a 2026-07-28 input_required result carrying elicitation/create
-- requests), the run waits exactly like on an approval: the form is stored
-- in agent.mcp_elicitations, a pending approval of that call is opened (the
-- run goes to waiting_approval, and expires after pg_agents.approval_ttl
-- like any approval), and agent.answer_elicitation() records a person's
-- answer (accept with content, decline or cancel, the form's defaults
-- applied as SEP-1034 says) and approves the call: the run resumes, the
-- worker sends the call again with the answer and the server's requestState,
-- and the server's result (whatever it does with a decline) is the tool's.

CREATE FUNCTION agent._mcp_call_input(server_id bigint, url text, headers jsonb, tool text, arguments jsonb,
                                      input_responses jsonb, request_state text)
RETURNS jsonb
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_call_input';
COMMENT ON FUNCTION agent._mcp_call_input(bigint, text, jsonb, text, jsonb, jsonb, text) IS
  'Internal: one tools/call that may come back input_required: {"ok": true, "result"}, {"ok": false, "input_required": true, "input_requests", "request_state"} or {"ok": false, "error", "rpc_error"?}; never raises for a remote failure.';

CREATE TABLE agent.mcp_elicitations (
    id             bigint GENERATED ALWAYS AS IDENTITY,
    workspace_id   text NOT NULL,
    run_id         bigint NOT NULL,
    approval_key   text NOT NULL,
    server_id      bigint,
    exposed_name   text NOT NULL,
    input_requests jsonb NOT NULL CHECK (jsonb_typeof(input_requests) = 'object'),
    request_state  text,
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'consumed', 'expired')),
    response       jsonb,
    answered_by    text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    answered_at    timestamptz,
    live           boolean NOT NULL DEFAULT false,
    CONSTRAINT mcp_elicitations_pkey PRIMARY KEY (id, workspace_id),
    FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX mcp_elicitations_run_idx ON agent.mcp_elicitations (run_id, approval_key);
REVOKE ALL ON agent.mcp_elicitations FROM PUBLIC;
COMMENT ON TABLE agent.mcp_elicitations IS 'Input an MCP server asked for during a run''s tool call, and the answer people gave; the application reads agent.mcp_pending_input.';
COMMENT ON COLUMN agent.mcp_elicitations.id IS 'Elicitation id.';
COMMENT ON COLUMN agent.mcp_elicitations.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.mcp_elicitations.run_id IS 'The waiting run.';
COMMENT ON COLUMN agent.mcp_elicitations.approval_key IS 'Key of the pending approval the run waits on (agent.approval_key of the call): what agent.answer_elicitation is given.';
COMMENT ON COLUMN agent.mcp_elicitations.server_id IS 'The MCP server that asked.';
COMMENT ON COLUMN agent.mcp_elicitations.exposed_name IS 'The tool called (mcp__<server>__<tool>).';
COMMENT ON COLUMN agent.mcp_elicitations.input_requests IS 'The server''s inputRequests: {key: {"method": "elicitation/create", "params": {"message", "requestedSchema"}}}.';
COMMENT ON COLUMN agent.mcp_elicitations.request_state IS 'The server''s requestState, echoed unchanged with the answer.';
COMMENT ON COLUMN agent.mcp_elicitations.status IS 'pending, answered, consumed (sent to the server), or expired (a live question unanswered within pg_agents.mcp_elicitation_wait: cancel was sent).';
COMMENT ON COLUMN agent.mcp_elicitations.response IS 'The answers, {key: ElicitResult}, defaults applied.';
COMMENT ON COLUMN agent.mcp_elicitations.answered_by IS 'Who answered.';
COMMENT ON COLUMN agent.mcp_elicitations.created_at IS 'When the server asked.';
COMMENT ON COLUMN agent.mcp_elicitations.expires_at IS 'When the question expires with its approval (pg_agents.approval_ttl).';
COMMENT ON COLUMN agent.mcp_elicitations.answered_at IS 'When it was answered.';
COMMENT ON COLUMN agent.mcp_elicitations.live IS 'A 2025-11-25 server''s elicitation/create request in the stream of the call, waiting on the open stream while the run stays running in its worker slot (pg_agents.mcp_elicitation_wait); input_requests is then {JSON-RPC id: request}.';

CREATE VIEW agent.mcp_pending_input WITH (security_barrier) AS
  SELECT e.approval_key, e.run_id, e.workspace_id, e.exposed_name, r.key AS input_key,
         r.value->'params'->>'message' AS message, r.value->'params'->'requestedSchema' AS requested_schema,
         e.created_at, e.expires_at
    FROM agent.mcp_elicitations e, pg_catalog.jsonb_each(e.input_requests) r
   WHERE e.status = 'pending' AND e.expires_at > pg_catalog.now()
     AND EXISTS (SELECT 1 FROM agent.runs x WHERE x.id = e.run_id
                    AND x.status = CASE WHEN e.live THEN 'running' ELSE 'waiting_approval' END)
     AND (e.workspace_id = pg_catalog.current_setting('pg_agents.workspace', true)
          OR pg_catalog.current_setting('is_superuser') = 'on');
COMMENT ON VIEW agent.mcp_pending_input IS 'Questions MCP servers are waiting on, of the session''s workspace: the form to show a person (message, requested JSON schema), the approval key to answer with.';
COMMENT ON COLUMN agent.mcp_pending_input.approval_key IS 'What agent.answer_elicitation is given.';
COMMENT ON COLUMN agent.mcp_pending_input.run_id IS 'The waiting run.';
COMMENT ON COLUMN agent.mcp_pending_input.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.mcp_pending_input.exposed_name IS 'The tool being called.';
COMMENT ON COLUMN agent.mcp_pending_input.input_key IS 'Key of the question among the server''s inputRequests.';
COMMENT ON COLUMN agent.mcp_pending_input.message IS 'The server''s question.';
COMMENT ON COLUMN agent.mcp_pending_input.requested_schema IS 'JSON schema of the expected answer (with defaults).';
COMMENT ON COLUMN agent.mcp_pending_input.created_at IS 'When the server asked.';
COMMENT ON COLUMN agent.mcp_pending_input.expires_at IS 'When the question (and the run) expires.';

-- One answer checked and completed: {"action", "content"?}, defaults of the
-- requested schema filled into an accepted content (SEP-1034).
CREATE FUNCTION agent._mcp_elicit_result(p_request jsonb, p_answer jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_content jsonb;
  k text;
  d jsonb;
BEGIN
  IF p_answer IS NULL OR pg_catalog.jsonb_typeof(p_answer) <> 'object'
     OR NOT coalesce(p_answer->>'action', '') IN ('accept', 'decline', 'cancel') THEN
    RAISE EXCEPTION 'an elicitation answer is {"action": "accept", "content": {...}}, {"action": "decline"} or {"action": "cancel"}'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_answer->>'action' <> 'accept' THEN
    RETURN pg_catalog.jsonb_build_object('action', p_answer->>'action');
  END IF;
  v_content := coalesce(p_answer->'content', '{}');
  IF pg_catalog.jsonb_typeof(v_content) <> 'object' THEN
    RAISE EXCEPTION 'the content of an accepted elicitation must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, d IN SELECT p.key, p.value->'default'
                FROM pg_catalog.jsonb_each(coalesce(p_request->'params'->'requestedSchema'->'properties', '{}')) p
               WHERE p.value ? 'default' LOOP
    IF NOT v_content ? k THEN
      v_content := v_content || pg_catalog.jsonb_build_object(k, d);
    END IF;
  END LOOP;
  RETURN pg_catalog.jsonb_build_object('action', 'accept', 'content', v_content);
END
$$;
COMMENT ON FUNCTION agent._mcp_elicit_result(jsonb, jsonb) IS
  'Internal: checks an elicitation answer and fills the requested schema''s defaults into an accepted content (SEP-1034).';

CREATE FUNCTION agent.mcp_agent_call_input(agent_id bigint, run_id bigint, exposed_name text,
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
REVOKE ALL ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) IS
  'Worker entry point: agent.mcp_agent_call for a run, where a 2026-07-28 server (as recorded at its last refresh; any other goes to agent.mcp_agent_call) asking for input pauses the run: the question is stored (agent.mcp_elicitations), a pending approval of the call opened, {"ok": false, "paused": true, "approval_key"} returned; once answered (agent.answer_elicitation) the same call sends the answer with the server''s requestState.';

CREATE FUNCTION agent.answer_elicitation(key text, response jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_answers jsonb := '{}';
  v_one boolean;
  k text;
  q jsonb;
  v_ws text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(answer_elicitation.by_user, ''), true);
  -- the session's workspace, else (a superuser session bound to none) that
  -- of the key's latest pending question; then the row locked in it
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_elicitations x
     WHERE x.approval_key = answer_elicitation.key AND x.status = 'pending' ORDER BY x.id DESC LIMIT 1;
  END IF;
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.workspace_id = v_ws AND x.approval_key = answer_elicitation.key AND x.status = 'pending' AND x.expires_at > now()
     AND EXISTS (SELECT 1 FROM agent.runs r WHERE r.workspace_id = x.workspace_id AND r.id = x.run_id
                    AND r.status = CASE WHEN x.live THEN 'running' ELSE 'waiting_approval' END)
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no pending elicitation with key "%"', key USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- one question: the answer itself; several: {input key: answer}
  v_one := (SELECT count(*) FROM pg_catalog.jsonb_object_keys(e.input_requests)) = 1;
  FOR k, q IN SELECT * FROM pg_catalog.jsonb_each(e.input_requests) LOOP
    v_answers := v_answers || pg_catalog.jsonb_build_object(k,
                   agent._mcp_elicit_result(q, CASE WHEN v_one AND response ? 'action' THEN response ELSE response->k END));
  END LOOP;
  UPDATE agent.mcp_elicitations x
     SET status = 'answered', response = v_answers, answered_by = by_user, answered_at = now()
   WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
  -- the run resumes like on an approval (edit level on the agent required);
  -- a live question's run never stopped: the worker sends the answer on the
  -- server's open stream (agent._mcp_worker_elicit_poll)
  RETURN agent.approve(e.approval_key, by_user, e.run_id);
END
$$;
REVOKE ALL ON FUNCTION agent.answer_elicitation(text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.answer_elicitation(text, jsonb, text) IS
  'Answers the question an MCP server asked during a run''s tool call (key: the approval key shown in agent.mcp_pending_input) for by_user, who must be allowed to approve the run''s calls: {"action": "accept", "content": {...}} (the form''s defaults filled in), {"action": "decline"} or {"action": "cancel"}; several questions are answered as {input key: answer}. The run resumes and the server gets the answer (a live question of a 2025-11-25 server: on the stream the worker keeps open). Returns the run id.';
