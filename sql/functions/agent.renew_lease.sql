CREATE OR REPLACE FUNCTION agent.renew_lease(run_id bigint) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_until timestamptz;
  v_status text;
  -- the session's workspace, or the run's own for a session bound to none
  v_ws text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    SELECT r.workspace_id INTO v_ws FROM agent.runs r WHERE r.id = renew_lease.run_id;
  END IF;
  UPDATE agent.runs r
     SET lease_until = now() + current_setting('pg_agents.run_lease')::interval
   WHERE r.workspace_id = v_ws AND r.id = renew_lease.run_id AND r.status = 'running'
  RETURNING r.lease_until INTO v_until;
  IF NOT FOUND THEN
    SELECT r.status INTO v_status FROM agent.runs r WHERE r.workspace_id = v_ws AND r.id = renew_lease.run_id;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'run % does not exist', renew_lease.run_id USING ERRCODE = 'undefined_object';
    END IF;
    RAISE EXCEPTION 'run % is not running', renew_lease.run_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run holds a lease.', v_status);
  END IF;
  RETURN v_until;
END
$$;
