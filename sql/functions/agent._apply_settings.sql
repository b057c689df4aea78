CREATE OR REPLACE FUNCTION agent._apply_settings(p_agent_id bigint, p_settings jsonb, p_by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s      jsonb := p_settings;
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  -- computed first: Citus refuses a non-immutable function (jsonb_build_object)
  -- inside CASE or COALESCE of an UPDATE of a distributed table
  v_prov jsonb := jsonb_build_object('provider', p_settings -> 'provider');
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  IF s ? 'delegation' THEN
    PERFORM agent._check_delegation(p_agent_id, s -> 'delegation');
  END IF;
  UPDATE agent.agents a SET
    name                 = CASE WHEN s ? 'name' THEN btrim(s ->> 'name') ELSE a.name END,
    instructions         = CASE WHEN s ? 'instructions' THEN s ->> 'instructions' ELSE a.instructions END,
    instruction_page_id  = CASE WHEN s ? 'instruction_page_id' THEN s ->> 'instruction_page_id' ELSE a.instruction_page_id END,
    model                = CASE WHEN s ? 'model' THEN s ->> 'model' ELSE a.model END,
    approval_mode        = CASE WHEN s ? 'approval_mode' THEN s ->> 'approval_mode' ELSE a.approval_mode END,
    scope                = CASE WHEN s ? 'provider' AND jsonb_typeof(s -> 'provider') = 'string'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}')
                                       || v_prov
                                  WHEN s ? 'provider'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}') - 'provider'
                                  WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END,
    web_access           = CASE WHEN s ? 'web_access' THEN (s ->> 'web_access')::boolean ELSE a.web_access END,
    delegation           = CASE WHEN s ? 'delegation' THEN s -> 'delegation' ELSE a.delegation END,
    max_iterations       = CASE WHEN s ? 'max_iterations' THEN (s ->> 'max_iterations')::integer ELSE a.max_iterations END,
    hourly_run_cap       = CASE WHEN s ? 'hourly_run_cap' THEN (s ->> 'hourly_run_cap')::integer ELSE a.hourly_run_cap END,
    credit_limit_monthly = CASE WHEN s ? 'credit_limit_monthly' THEN (s ->> 'credit_limit_monthly')::integer ELSE a.credit_limit_monthly END,
    default_token_budget = CASE WHEN s ? 'default_token_budget' THEN (s ->> 'default_token_budget')::bigint ELSE a.default_token_budget END,
    updated_at           = now()
  WHERE a.workspace_id = v_ws AND a.id = p_agent_id;
  IF s ? 'access' THEN
    DELETE FROM agent.access g
     WHERE g.workspace_id = v_ws AND g.agent_id = p_agent_id
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(s -> 'access') e
                        WHERE e ->> 'resource_type' = g.resource_type AND e ->> 'resource_id' = g.resource_id);
    INSERT INTO agent.access AS g (workspace_id, agent_id, resource_type, resource_id, access, granted_by, granted_at)
    SELECT DISTINCT ON (e ->> 'resource_type', e ->> 'resource_id')
           v_ws, p_agent_id, e ->> 'resource_type', e ->> 'resource_id',
           coalesce(e ->> 'access', 'read'), p_by_user, now()
      FROM jsonb_array_elements(s -> 'access') WITH ORDINALITY AS x(e, n)
     WHERE v_ws IS NOT NULL
     ORDER BY e ->> 'resource_type', e ->> 'resource_id', n DESC
    ON CONFLICT (agent_id, resource_type, resource_id, workspace_id) DO UPDATE
      SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = EXCLUDED.granted_at
      WHERE g.access IS DISTINCT FROM EXCLUDED.access;
  END IF;
END
$$;
COMMENT ON FUNCTION agent._apply_settings(bigint, jsonb, text) IS
  'Internal: writes checked settings to the agent; an "access" list replaces its grants; a "delegation" list may name only agents of the agent''s workspace (agent._check_delegation).';
