CREATE OR REPLACE FUNCTION agent._delegation_granted(p_parent_run_id bigint, p_child_run_id bigint,
                                          p_child_agent_id bigint, p_task text,
                                          p_attachments jsonb, p_token_budget bigint,
                                          p_record_step boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c agent.runs%ROWTYPE;
  p agent.runs%ROWTYPE;
  -- the parent's workspace (Citus routes by it): the session's, else the run's own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_parent_run_id;
  END IF;
  SELECT * INTO c FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_child_run_id;
  SELECT * INTO p FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_parent_run_id;
  -- the delegate step on the parent (agent.try_delegate); its output is the
  -- child's result, set when the child ends (at once if the child could not
  -- be queued)
  IF p_record_step THEN
    PERFORM agent._runs_add_step(
      p_parent_run_id, 'delegate', (SELECT a.name FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = p_child_agent_id),
      jsonb_build_object('child_run_id', c.id, 'child_agent_id', p_child_agent_id, 'task', p_task,
                         'attachments', p_attachments, 'token_budget', p_token_budget, 'depth', c.depth),
      CASE WHEN NOT agent._run_is_active(c.status) THEN
        jsonb_build_object('child_run_id', c.id, 'agent_id', c.agent_id, 'status', c.status,
                           'output', c.output, 'error', c.error, 'tokens_total', c.tokens_total) END,
      CASE WHEN NOT agent._run_is_active(c.status) THEN 'error' END,
      NOT agent._run_is_active(c.status));
  END IF;
  PERFORM agent._audit_run('run.delegate', c, 'success',
                           jsonb_build_object('parent_run_id', p_parent_run_id, 'parent_agent_id', p.agent_id,
                                              'child_agent_id', p_child_agent_id, 'token_budget', p_token_budget,
                                              'depth', c.depth, 'root_run_id', c.root_run_id, 'status', c.status),
                           format('run %s (agent %s) delegated to agent %s: run %s, budget %s tokens',
                                  p_parent_run_id, p.agent_id, p_child_agent_id, c.id, p_token_budget));
END
$$;
