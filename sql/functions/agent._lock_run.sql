CREATE OR REPLACE FUNCTION agent._lock_run(p_run_id bigint) RETURNS agent.runs
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws   text := agent._session_workspace();
  v_root bigint;
  r      agent.runs%ROWTYPE;
BEGIN
  IF p_run_id IS NULL THEN
    RAISE EXCEPTION 'run id must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace (the worker): the run's own
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  -- every statement names the workspace (Citus routes by it; the tree is in one)
  SELECT coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.workspace_id = v_ws AND rt.id = x.root_run_id), x.id)
    INTO v_root
    FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'undefined_object';
  END IF;
  -- the tree lock (agent._lock_tree), then the run
  PERFORM 1 FROM agent.runs rt WHERE rt.workspace_id = v_ws AND rt.id = v_root FOR UPDATE;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id FOR UPDATE;
  RETURN r;
END
$$;
