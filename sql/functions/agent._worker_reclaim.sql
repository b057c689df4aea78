CREATE OR REPLACE FUNCTION agent._worker_reclaim(p_worker_pid integer) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c        record;
  n        integer := 0;
  v_max    integer := coalesce(nullif(current_setting('pg_agents.max_attempts', true), '')::integer, 3);
  v_tries  integer;
BEGIN
  -- the runs first (a colocated join), then each locked in its workspace
  -- (Citus routes by it and refuses FOR UPDATE across workspaces)
  FOR c IN
    SELECT ru.workspace_id, ru.id
      FROM agent.runs ru JOIN agent.run_state s ON s.workspace_id = ru.workspace_id AND s.run_id = ru.id
     WHERE ru.status = 'running' AND s.worker_pid IS DISTINCT FROM p_worker_pid
     ORDER BY ru.id
  LOOP
    SELECT ru.attempts INTO v_tries FROM agent.runs ru
     WHERE ru.workspace_id = c.workspace_id AND ru.id = c.id AND ru.status = 'running'
       FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    IF v_tries >= v_max THEN
      PERFORM agent.finish_run(c.id, 'failed', NULL,
        format('the worker stopped during this run %s times (pg_agents.max_attempts = %s)', v_tries, v_max));
    ELSE
      UPDATE agent.runs SET status = 'queued', lease_until = NULL WHERE workspace_id = c.workspace_id AND id = c.id;
      UPDATE agent.run_state SET worker_pid = NULL WHERE workspace_id = c.workspace_id AND run_id = c.id;
    END IF;
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
