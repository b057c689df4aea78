CREATE OR REPLACE FUNCTION agent._audit_run(p_action text, p_run agent.runs, p_status text DEFAULT 'success',
                                 p_inputs jsonb DEFAULT NULL, p_summary text DEFAULT NULL,
                                 p_error_code text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_owner text;
BEGIN
  IF NOT coalesce(current_setting('pg_agents.audit_enabled', true)::boolean, true) THEN
    RETURN;
  END IF;
  SELECT a.owner_id INTO v_owner FROM agent.agents a
   WHERE a.workspace_id = p_run.workspace_id AND a.id = p_run.agent_id;
  PERFORM agent._audit_event(p_action, p_status, 'run', p_run.id::text, p_run.workspace_id, v_owner,
                             jsonb_build_object('agent_id', p_run.agent_id) || coalesce(p_inputs, '{}'),
                             p_summary, p_error_code);
END
$$;
