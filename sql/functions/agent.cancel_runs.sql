CREATE OR REPLACE FUNCTION agent.cancel_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                  status text DEFAULT NULL, by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_super boolean := current_setting('is_superuser') = 'on';
  v_ws    text := agent._session_workspace();
  a       agent.agents%ROWTYPE;
  c       record;
  v_who   text;
  v_n     integer := 0;
  v_per   jsonb := '{}';
  k       text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(cancel_runs.by_user, ''), true);
  IF status IS NOT NULL AND status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children') THEN
    RAISE EXCEPTION 'invalid status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Only active runs are cancelled: queued, running, waiting_approval, waiting_input or waiting_children.';
  END IF;
  IF NOT v_super AND (by_user IS NULL OR by_user = '') THEN
    RAISE EXCEPTION 'by_user must not be empty'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The application cancels runs on behalf of a user, who is audited.';
  END IF;
  IF agent_id IS NULL AND workspace_id IS NULL AND v_ws IS NULL THEN
    RAISE EXCEPTION 'agent.cancel_runs needs an agent or a workspace'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name agent_id or workspace_id (or set pg_agents.workspace).';
  END IF;
  IF agent_id IS NOT NULL THEN
    -- the session's workspace (a superuser session bound to none: the agent's own)
    k := v_ws;
    IF k IS NULL THEN
      SELECT y.workspace_id INTO k FROM agent.agents y WHERE y.id = agent_id;
    END IF;
    SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = k AND x.id = agent_id;
    IF NOT FOUND
       OR (workspace_id IS NOT NULL AND a.workspace_id IS DISTINCT FROM workspace_id) THEN
      RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT v_super AND NOT coalesce(agent.user_can(by_user, agent_id, 'edit_settings'), false) THEN
      RAISE EXCEPTION 'user "%" may not cancel the runs of agent %', by_user, agent_id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Cancelling the runs of an agent requires the edit level on it.';
    END IF;
  END IF;
  -- another workspace than the session's holds no run for this session
  IF workspace_id IS NOT NULL AND NOT agent._workspace_ok(workspace_id) THEN
    RETURN 0;
  END IF;
  workspace_id := coalesce(workspace_id, a.workspace_id, v_ws);
  v_who := coalesce(nullif(by_user, ''), 'dba:' || session_user::text);

  FOR c IN
    SELECT x.id, x.workspace_id AS ws,
           coalesce((SELECT rt.id FROM agent.runs rt
                      WHERE rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id), x.id) AS root
      FROM agent.runs x
     WHERE x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
       AND (status IS NULL OR x.status = status)
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
     ORDER BY x.id
  LOOP
    PERFORM agent._lock_tree(c.root);
    -- still active (and still of that status) once its tree is ours
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = c.ws AND x.id = c.id
                                 AND x.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
                                 AND (status IS NULL OR x.status = status));
    IF agent._finish_run(c.id, 'cancelled', NULL, format('cancelled by %s (bulk cancel)', v_who)) THEN
      v_n := v_n + 1;
      k := c.ws;
      v_per := jsonb_set(v_per, ARRAY[k], to_jsonb(coalesce((v_per ->> k)::integer, 0) + 1));
    END IF;
  END LOOP;

  -- one audit row per workspace touched (each run also has its run.finish row)
  FOR k IN SELECT jsonb_object_keys(v_per) LOOP
    PERFORM agent._audit_event('runs.cancel', 'success', 'workspace', k, k, NULL,
                               jsonb_build_object('agent_id', agent_id, 'status', status, 'by_user', by_user,
                                                  'db_user', session_user::text, 'cancelled', (v_per ->> k)::integer),
                               format('%s runs cancelled by %s', v_per ->> k, v_who), NULL);
  END LOOP;
  RETURN v_n;
END
$$;

COMMENT ON FUNCTION agent.cancel_runs(bigint, text, text, text) IS
  'Cancels the active runs of an agent or of a workspace (optionally of one status), with their active descendants; a worker holding one of them drops it at its next step. Superuser: any workspace. The application: within the session''s workspace, on behalf of by_user (edit level on the agent when one is named). Audited (one runs.cancel row per workspace, one run.finish row per run). Returns how many matching runs were cancelled.';
