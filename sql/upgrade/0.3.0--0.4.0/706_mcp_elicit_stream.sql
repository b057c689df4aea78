-- mcp (issue 16): elicitation from 2025-11-25 servers in the stream of a
-- worker's call (sql/src/706_mcp_elicitation.sql, 708_mcp_worker.sql).

ALTER TABLE agent.mcp_elicitations ADD COLUMN live boolean NOT NULL DEFAULT false;
ALTER TABLE agent.mcp_elicitations DROP CONSTRAINT mcp_elicitations_status_check;
ALTER TABLE agent.mcp_elicitations ADD CONSTRAINT mcp_elicitations_status_check
  CHECK (status IN ('pending', 'answered', 'consumed', 'expired'));
COMMENT ON COLUMN agent.mcp_elicitations.status IS 'pending, answered, consumed (sent to the server), or expired (a live question unanswered within pg_agents.mcp_elicitation_wait: cancel was sent).';
COMMENT ON COLUMN agent.mcp_elicitations.live IS 'A 2025-11-25 server''s elicitation/create request in the stream of the call, waiting on the open stream while the run stays running in its worker slot (pg_agents.mcp_elicitation_wait); input_requests is then {JSON-RPC id: request}.';

\ir ../../views/agent.mcp_pending_input.sql

CREATE OR REPLACE FUNCTION agent.answer_elicitation(key text, response jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_answers jsonb := '{}';
  v_one boolean;
  k text;
  q jsonb;
BEGIN
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.approval_key = answer_elicitation.key AND x.status = 'pending' AND x.expires_at > now()
     AND agent._workspace_ok(x.workspace_id)
     AND EXISTS (SELECT 1 FROM agent.runs r WHERE r.id = x.run_id
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
   WHERE x.id = e.id;
  -- the run resumes like on an approval (edit level on the agent required);
  -- a live question's run never stopped: the worker sends the answer on the
  -- server's open stream (agent._mcp_worker_elicit_poll)
  RETURN agent.approve(e.approval_key, by_user, e.run_id);
END
$$;
REVOKE ALL ON FUNCTION agent.answer_elicitation(text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.answer_elicitation(text, jsonb, text) IS
  'Answers the question an MCP server asked during a run''s tool call (key: the approval key shown in agent.mcp_pending_input) for by_user, who must be allowed to approve the run''s calls: {"action": "accept", "content": {...}} (the form''s defaults filled in), {"action": "decline"} or {"action": "cancel"}; several questions are answered as {input key: answer}. The run resumes and the server gets the answer (a live question of a 2025-11-25 server: on the stream the worker keeps open). Returns the run id.';

-- A 2025-11-25 server's elicitation/create request in the stream of a
-- worker's call (docs/mcp.md, "Elicitation"): the stream stays open, the run
-- stays running in its slot, the question waits for people like an approval
-- (agent.mcp_pending_input, agent.answer_elicitation) for
-- pg_agents.mcp_elicitation_wait at most (or pg_agents.approval_ttl, if
-- shorter); the worker looks for the answer (agent._mcp_worker_elicit_poll)
-- and sends it on the server's session.
\ir ../../functions/agent._mcp_worker_elicit.sql

\ir ../../functions/agent._mcp_worker_elicit_poll.sql
REVOKE ALL ON FUNCTION agent._mcp_worker_elicit_poll(bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_elicit_poll(bigint, boolean) IS
  'Internal (worker): the answer to send to the server for a live elicitation: a person''s (agent.answer_elicitation, then consumed), a decline when its approval was denied, a cancel when it was approved without an answer, or when it expired (p_expire: pg_agents.mcp_elicitation_wait passed; recorded as expired, with its approval); NULL while it waits.';
