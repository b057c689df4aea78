CREATE OR REPLACE FUNCTION agent.wait_for_children(run_id bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
BEGIN
  r := agent._lock_run(wait_for_children.run_id);
  IF r.status <> 'running' THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run may wait for its children.', r.status);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.runs c
                  WHERE c.workspace_id = r.workspace_id AND c.parent_run_id = r.id AND agent._run_is_active(c.status)) THEN
    RETURN false;
  END IF;
  UPDATE agent.runs x SET status = 'waiting_children', lease_until = NULL
   WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
  PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_children'),
                           format('run %s waits for its child runs', r.id));
  PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_children');
  RETURN true;
END
$$;
