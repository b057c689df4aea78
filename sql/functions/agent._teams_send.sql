CREATE OR REPLACE FUNCTION agent._teams_send(p_from_run bigint, p_to_run bigint, p_message text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
BEGIN
  -- runs of another workspace (than the session's, or the sender's) are
  -- unknown (agent._lock_run checks before any lock)
  r := agent._lock_run(p_to_run);
  IF r.parent_run_id IS DISTINCT FROM p_from_run
     OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = r.workspace_id AND x.id = p_from_run) THEN
    RAISE EXCEPTION 'run % is not a child of run %', p_to_run, p_from_run
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A run sends messages only to the runs it delegated to.';
  END IF;
  RETURN agent._teams_post(r, 'run:' || p_from_run, p_message);
END
$$;
