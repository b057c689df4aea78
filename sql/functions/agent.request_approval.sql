CREATE OR REPLACE FUNCTION agent.request_approval(run_id bigint, tool text, input jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r     agent.runs%ROWTYPE;
  v_in  jsonb := coalesce(request_approval.input, '{}');
  v_key text;
  v_id  bigint;
  v_len bigint;
  v_max bigint;
  v_owner text;
BEGIN
  IF tool IS NULL THEN
    RAISE EXCEPTION 'tool name must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the approver sees exactly what will run: the whole input, or no approval
  v_len := pg_catalog.octet_length(v_in::text);
  v_max := pg_catalog.pg_size_bytes(pg_catalog.current_setting('pg_agents.approval_max_input'));
  IF v_len > v_max THEN
    RAISE EXCEPTION 'tool input of % bytes is too large to be approved', v_len
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = pg_catalog.format('An approval shows the whole input of the call it authorises, up to pg_agents.approval_max_input (%s bytes).', v_max),
            HINT = 'Make the change in smaller calls, or ask a superuser to raise pg_agents.approval_max_input.';
  END IF;
  IF agent._has_credential(v_in) THEN
    RAISE EXCEPTION 'tool input holds a credential-shaped value'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An approval stores the input exactly as it will run, and a credential is never stored: the call is refused.',
            HINT = 'Refer to the secret (e.g. by the name of a configured connection) instead of passing it.';
  END IF;
  v_key := agent.approval_key(tool, v_in);
  r := agent._lock_run(request_approval.run_id);
  IF r.status NOT IN ('running', 'waiting_approval') THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run asks for an approval.', r.status);
  END IF;
  SELECT p.id INTO v_id FROM agent.approvals p
   WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.approval_key = v_key AND p.status = 'pending';
  IF NOT FOUND THEN
    INSERT INTO agent.approvals (workspace_id, run_id, approval_key, tool, input, status, expires_at)
    VALUES (r.workspace_id, r.id, v_key, tool, v_in, 'pending',
            now() + current_setting('pg_agents.approval_ttl')::interval)
    RETURNING id INTO v_id;
    SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id;
    PERFORM agent._audit_event('approval.request', 'success', 'approval', v_id::text, r.workspace_id, v_owner,
                               jsonb_build_object('run_id', r.id, 'tool', tool, 'approval_key', v_key,
                                                  'input', agent.redact(v_in)),
                               format('run %s asks approval for %s', r.id, tool));
  END IF;
  IF r.status <> 'waiting_approval' THEN
    UPDATE agent.runs x SET status = 'waiting_approval', lease_until = NULL
     WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_approval'),
                             format('run %s waits for approval of %s', r.id, tool));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_approval');
  END IF;
  RETURN v_key;
END
$$;
