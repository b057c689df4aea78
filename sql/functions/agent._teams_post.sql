CREATE OR REPLACE FUNCTION agent._teams_post(p_run agent.runs, p_sender text, p_body text, p_kind text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_kind text := coalesce(p_kind, CASE WHEN p_run.status = 'waiting_input' THEN 'answer' ELSE 'followup' END);
  v_seq  integer;
  v_id   bigint;
BEGIN
  IF p_body IS NULL OR btrim(p_body) = '' THEN
    RAISE EXCEPTION 'message must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT agent._run_is_active(p_run.status) THEN
    RAISE EXCEPTION 'run % has already ended', p_run.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run ended %s; messages go only to queued, running or waiting runs.', p_run.status),
            HINT = 'Start a new run (agent.start_run or agent.rerun) instead.';
  END IF;
  SELECT coalesce(max(m.seq), 0) + 1 INTO v_seq FROM agent.run_messages m
   WHERE m.workspace_id = p_run.workspace_id AND m.run_id = p_run.id;
  INSERT INTO agent.run_messages (workspace_id, run_id, seq, sender, kind, body)
  VALUES (p_run.workspace_id, p_run.id, v_seq, p_sender, v_kind, p_body)
  RETURNING id INTO v_id;
  IF p_run.status = 'waiting_input' AND v_kind = 'answer' THEN
    UPDATE agent.runs x SET status = 'queued', input_expires_at = NULL
     WHERE x.workspace_id = p_run.workspace_id AND x.id = p_run.id;
    PERFORM agent._audit_run('run.resume', p_run, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: answered by %s', p_run.id, p_sender));
    PERFORM agent._runs_notify(p_run.id, p_run.agent_id, 'queued');
  END IF;
  PERFORM agent._request_wake();
  RETURN v_id;
END
$$;
