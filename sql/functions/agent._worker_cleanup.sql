CREATE OR REPLACE FUNCTION agent._worker_cleanup() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table;
  -- a colocated join, on the workspace too)
  DELETE FROM agent.run_state s USING agent.runs r
   WHERE r.workspace_id = s.workspace_id AND r.id = s.run_id
     AND r.status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children');
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;
