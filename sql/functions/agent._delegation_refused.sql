CREATE OR REPLACE FUNCTION agent._delegation_refused(p_parent_run_id bigint, p_child_agent_id bigint, p_task text,
                                          p_reason text, p_message text, p_detail text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  p agent.runs%ROWTYPE;
  -- the parent's workspace (Citus routes by it): the session's, else the run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_parent_run_id;
  END IF;
  SELECT * INTO p FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id;
  PERFORM agent._runs_add_step(
    p_parent_run_id, 'denied', 'delegate_to_agent',
    jsonb_build_object('child_agent_id', p_child_agent_id, 'task', p_task),
    jsonb_build_object('reason', p_reason, 'error', p_message, 'detail', p_detail),
    'denied', true);
  PERFORM agent._audit_run('run.delegate', p, 'denied',
                           jsonb_build_object('parent_run_id', p.id, 'child_agent_id', p_child_agent_id,
                                              'depth', p.depth, 'reason', p_reason, 'error', p_message),
                           format('delegation from run %s to agent %s refused: %s', p.id, p_child_agent_id, p_message),
                           p_reason);
END
$$;
