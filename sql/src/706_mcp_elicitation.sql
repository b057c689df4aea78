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

\ir ../views/agent.mcp_pending_input.sql

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

\ir ../functions/agent.mcp_agent_call_input.sql
REVOKE ALL ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) IS
  'Worker entry point: agent.mcp_agent_call for a run, where a 2026-07-28 server (as recorded at its last refresh; any other goes to agent.mcp_agent_call) asking for input pauses the run: the question is stored (agent.mcp_elicitations), a pending approval of the call opened, {"ok": false, "paused": true, "approval_key"} returned; once answered (agent.answer_elicitation) the same call sends the answer with the server''s requestState.';

\ir ../functions/agent.answer_elicitation.sql
REVOKE ALL ON FUNCTION agent.answer_elicitation(text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.answer_elicitation(text, jsonb, text) IS
  'Answers the question an MCP server asked during a run''s tool call (key: the approval key shown in agent.mcp_pending_input) for by_user, who must be allowed to approve the run''s calls: {"action": "accept", "content": {...}} (the form''s defaults filled in), {"action": "decline"} or {"action": "cancel"}; several questions are answered as {input key: answer}. The run resumes and the server gets the answer (a live question of a 2025-11-25 server: on the stream the worker keeps open). Returns the run id.';
