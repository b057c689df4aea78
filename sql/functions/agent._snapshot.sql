CREATE OR REPLACE FUNCTION agent._snapshot(p_agent_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_snap jsonb;
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT jsonb_build_object(
    'name', a.name,
    'instructions', a.instructions,
    'instruction_page_id', a.instruction_page_id,
    'model', a.model,
    'approval_mode', a.approval_mode,
    'scope', a.scope,
    'web_access', a.web_access,
    'delegation', a.delegation,
    'max_iterations', a.max_iterations,
    'hourly_run_cap', a.hourly_run_cap,
    'credit_limit_monthly', a.credit_limit_monthly,
    'default_token_budget', a.default_token_budget,
    'access', coalesce((SELECT jsonb_agg(jsonb_build_object('resource_type', g.resource_type,
                                                            'resource_id', g.resource_id,
                                                            'access', g.access)
                                         ORDER BY g.resource_type, g.resource_id)
                          FROM agent.access g WHERE g.workspace_id = a.workspace_id AND g.agent_id = a.id), '[]'),
    -- agent._trigger_json's object, built here: no whole-row t (on a Citus
    -- shard t has the shard's row type) and no function call per trigger
    'triggers', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                   'id', t.id, 'kind', t.kind, 'event_name', t.event_name,
                                   'resource_type', t.resource_type, 'resource_id', t.resource_id,
                                   'filter', t.filter, 'schedule', t.schedule, 'timezone', t.timezone,
                                   'prompt', t.prompt, 'enabled', t.enabled,
                                   'allow_self_retrigger', t.allow_self_retrigger,
                                   'show_typing', t.show_typing, 'run_as', t.run_as,
                                   'conversation', t.conversation) ORDER BY t.id)
                            FROM agent.triggers t WHERE t.workspace_id = a.workspace_id AND t.agent_id = a.id), '[]'))
    INTO v_snap
    FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = p_agent_id;
  RETURN v_snap;
END
$$;

COMMENT ON FUNCTION agent._snapshot(bigint) IS
  'Internal: the agent''s settings as a version snapshot: instructions, instruction_page_id, model, approval_mode, scope, web_access, delegation, limits, access list and triggers.';
