CREATE OR REPLACE FUNCTION agent._lock_tree(p_root_run_id bigint, p_skip_locked boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the workspace of the tree (Citus routes by it): the session's, or, for a
  -- session bound to none (the worker, maintenance) or one working on
  -- another workspace's run (agent.tick), the root run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_root_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_root_run_id;
  END IF;
  IF p_skip_locked THEN
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_root_run_id FOR UPDATE SKIP LOCKED;
    RETURN FOUND;
  END IF;
  PERFORM 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_root_run_id FOR UPDATE;
  RETURN true;
END
$$;
