CREATE OR REPLACE FUNCTION agent.delegation_context(run_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  a       agent.agents%ROWTYPE;
  v_max   int := agent.delegation_depth_limit();
  v_chain bigint[];
  v_to    jsonb;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = delegation_context.run_id;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = delegation_context.run_id;
  -- a run of another workspace is an unknown run
  IF r.id IS NULL THEN
    RAISE EXCEPTION 'run % does not exist', delegation_context.run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = r.agent_id;
  WITH RECURSIVE c(id, parent, agent_id, n) AS (
    SELECT x.id, x.parent_run_id, x.agent_id, 0 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = r.id
    UNION ALL
    SELECT x.id, x.parent_run_id, x.agent_id, c.n + 1 FROM agent.runs x JOIN c ON x.id = c.parent
     WHERE x.workspace_id = v_ws AND c.n < 16)
  SELECT array_agg(c.agent_id ORDER BY c.n DESC) INTO v_chain FROM c;
  SELECT coalesce(jsonb_agg(jsonb_build_object('agent_id', d.id, 'name', d.name) ORDER BY d.id), '[]')
    INTO v_to
    FROM agent.agents d
   WHERE d.workspace_id = v_ws
     AND d.id IN (SELECT (e #>> '{}')::bigint FROM jsonb_array_elements(a.delegation) e
                   WHERE (e #>> '{}') ~ '^[0-9]{1,18}$')
     AND d.deleted_at IS NULL AND d.status = 'active'
     AND d.id <> ALL (v_chain);
  RETURN jsonb_build_object(
    'depth', r.depth, 'max_depth', v_max, 'chain', to_jsonb(v_chain),
    'can_delegate', r.depth < v_max AND jsonb_array_length(v_to) > 0,
    'delegates', CASE WHEN r.depth < v_max THEN v_to ELSE '[]'::jsonb END,
    'remaining_budget', coalesce(r.token_budget, a.default_token_budget) - r.tokens_total - r.tokens_reserved);
END
$$;
