CREATE OR REPLACE FUNCTION agent._teams_ask_parent(p_run_id bigint, p_question text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r    agent.runs%ROWTYPE;
  p    agent.runs%ROWTYPE;
  v_id bigint;
BEGIN
  -- a run of another workspace is unknown (agent._lock_run checks before any lock)
  r := agent._lock_run(p_run_id);
  -- a parent of another workspace is no parent
  IF r.parent_run_id IS NULL
     OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = r.workspace_id AND x.id = r.parent_run_id) THEN
    RAISE EXCEPTION 'run % has no parent run', r.id USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF r.status <> 'running' THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state', DETAIL = format('It is %s.', r.status);
  END IF;
  SELECT * INTO p FROM agent.runs x WHERE x.workspace_id = r.workspace_id AND x.id = r.parent_run_id FOR UPDATE;
  v_id := agent._teams_post(p, 'run:' || r.id, p_question, 'question');
  -- a parent parked until its children end is woken up to see the question
  IF p.status = 'waiting_children' THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = p.workspace_id AND x.id = p.id RETURNING * INTO p;
    PERFORM agent._audit_run('run.resume', p, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: its child run %s asks a question', p.id, r.id));
    PERFORM agent._runs_notify(p.id, p.agent_id, 'queued');
  END IF;
  UPDATE agent.runs x SET status = 'waiting_input', lease_until = NULL,
         input_expires_at = now() + current_setting('pg_agents.approval_ttl')::interval
   WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
  PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_input', 'message_id', v_id),
                           format('run %s asks its parent run %s', r.id, p.id));
  PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_input');
  RETURN v_id;
END
$$;
