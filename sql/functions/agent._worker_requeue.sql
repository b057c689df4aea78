CREATE OR REPLACE FUNCTION agent._worker_requeue(p_run_ids bigint[], p_worker_pid integer) RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r agent.runs%ROWTYPE;
  n integer := 0;
BEGIN
  FOR r IN
    UPDATE agent.runs x
       SET status = 'queued', lease_until = NULL, attempts = greatest(x.attempts - 1, 0)
     WHERE x.id = ANY (p_run_ids) AND x.status = 'running'
       AND EXISTS (SELECT 1 FROM agent.run_state s
                    WHERE s.workspace_id = x.workspace_id AND s.run_id = x.id AND s.worker_pid = p_worker_pid)
    RETURNING x.*
  LOOP
    UPDATE agent.run_state s SET worker_pid = NULL WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id;
    PERFORM agent._audit_run('run.requeue', r, 'success',
                             jsonb_build_object('status', 'queued', 'attempts', r.attempts, 'reason', 'drain'),
                             format('run %s re-queued: the worker stopped (drain)', r.id));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
COMMENT ON FUNCTION agent._worker_requeue(bigint[], integer) IS
  'Internal (worker drain): the running runs among these that this worker process holds go back to the queue (attempts not counted; the conversation in agent.run_state kept); audited; returns how many.';
