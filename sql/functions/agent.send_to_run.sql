CREATE OR REPLACE FUNCTION agent.send_to_run(run_id bigint, message text, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  v_id    bigint;
  v_owner text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(send_to_run.by_user, ''), true);
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- a run of another workspace is an unknown run (agent._lock_run checks
  -- before any lock)
  r := agent._lock_run(send_to_run.run_id);
  IF NOT agent.user_can(by_user, r.agent_id, 'chat') THEN
    RAISE EXCEPTION 'user "%" may not send messages to run %', by_user, r.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Sending to a run requires the chat level on its agent.';
  END IF;
  v_id := agent._teams_post(r, 'user:' || by_user, message);
  SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id;
  PERFORM agent._audit_event('run.message', 'success', 'run', r.id::text, r.workspace_id, v_owner,
                             jsonb_build_object('message_id', v_id, 'by_user', by_user),
                             format('%s sent a message to run %s', by_user, r.id));
  RETURN v_id;
END
$$;

COMMENT ON FUNCTION agent.send_to_run(bigint, text, text) IS
  'A human with the chat level on the agent queues a message for a queued, running or waiting run (42704 unknown run or a run of another workspace than the session''s, 42501 no chat level, 55000 the run has ended, 22023 empty message). The worker gives it to the model at the next safe point; a run waiting_input takes it as its answer and is re-queued. Returns the message id.';
