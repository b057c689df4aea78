-- mcp (issue 16): elicitation from 2025-11-25 servers in the stream of a
-- worker's call (sql/src/706_mcp_elicitation.sql, 708_mcp_worker.sql).

ALTER TABLE agent.mcp_elicitations ADD COLUMN live boolean NOT NULL DEFAULT false;
ALTER TABLE agent.mcp_elicitations DROP CONSTRAINT mcp_elicitations_status_check;
ALTER TABLE agent.mcp_elicitations ADD CONSTRAINT mcp_elicitations_status_check
  CHECK (status IN ('pending', 'answered', 'consumed', 'expired'));
COMMENT ON COLUMN agent.mcp_elicitations.status IS 'pending, answered, consumed (sent to the server), or expired (a live question unanswered within pg_agents.mcp_elicitation_wait: cancel was sent).';
COMMENT ON COLUMN agent.mcp_elicitations.live IS 'A 2025-11-25 server''s elicitation/create request in the stream of the call, waiting on the open stream while the run stays running in its worker slot (pg_agents.mcp_elicitation_wait); input_requests is then {JSON-RPC id: request}.';

CREATE OR REPLACE VIEW agent.mcp_pending_input WITH (security_barrier) AS
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
BEGIN
  SELECT * INTO e FROM agent.mcp_elicitations x WHERE x.id = p_id AND x.live FOR UPDATE;
  IF NOT FOUND OR e.status IN ('consumed', 'expired') THEN
    RETURN '{"action": "cancel"}';
  END IF;
  IF e.status = 'answered' THEN
    v_out := (SELECT v.value FROM pg_catalog.jsonb_each(e.response) v LIMIT 1);
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.id = e.id;
    RETURN coalesce(v_out, '{"action": "cancel"}');
  END IF;
  SELECT p.status INTO v_ap FROM agent.approvals p
   WHERE p.run_id = e.run_id AND p.approval_key = e.approval_key ORDER BY p.id DESC LIMIT 1;
  -- decided as an approval, not answered: denied is a decline, approved
  -- without content a cancel (no form was filled in)
  IF v_ap = 'denied' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "decline"}', answered_at = now()
     WHERE x.id = e.id;
    RETURN '{"action": "decline"}';
  END IF;
  IF v_ap = 'approved' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "cancel"}', answered_at = now()
     WHERE x.id = e.id;
    RETURN '{"action": "cancel"}';
  END IF;
  IF coalesce(p_expire, false) OR e.expires_at <= now() OR v_ap = 'expired' THEN
    UPDATE agent.mcp_elicitations x SET status = 'expired', response = '{"action": "cancel"}' WHERE x.id = e.id;
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
