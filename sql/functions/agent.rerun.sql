CREATE OR REPLACE FUNCTION agent.rerun(run_id bigint, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  o    agent.runs%ROWTYPE;
  a    agent.agents%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(rerun.by_user, ''), true);
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = rerun.run_id;
  END IF;
  SELECT * INTO o FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = rerun.run_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', rerun.run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = o.agent_id;
  IF a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', o.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF o.regime = 'manual' THEN
    IF NOT coalesce(agent.user_can(by_user, o.agent_id, 'chat'), false)
       OR (o.requested_by IS DISTINCT FROM by_user
           AND agent.activity_scope(by_user, o.agent_id) IS DISTINCT FROM 'all') THEN
      RAISE EXCEPTION 'user "%" may not re-run run %', by_user, o.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Re-running a manual run requires the chat level and seeing the run (one''s own run, or the full level).';
    END IF;
  ELSE
    IF NOT coalesce(agent.user_can(by_user, o.agent_id, 'edit_settings'), false) THEN
      RAISE EXCEPTION 'user "%" may not re-run run %', by_user, o.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Re-running an autonomous run requires the edit level on the agent.';
    END IF;
    IF a.status = 'suspended' THEN
      RAISE EXCEPTION 'agent % is suspended', a.id
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = 'A suspended agent starts no autonomous run; chat still works.';
    END IF;
  END IF;
  v_id := agent._enqueue_run(o.agent_id, o.regime, 'rerun',
                             o.input || jsonb_build_object('rerun_of', o.id), NULL,
                             CASE WHEN o.regime = 'manual' THEN by_user ELSE coalesce(by_user, o.requested_by) END);
  SELECT * INTO n FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_id;
  PERFORM agent._audit_run('run.rerun', n, 'success',
                           jsonb_build_object('rerun_of', o.id, 'by_user', by_user, 'status', n.status),
                           format('run %s re-runs run %s', v_id, o.id));
  RETURN v_id;
END
$$;

COMMENT ON FUNCTION agent.rerun(bigint, text) IS
  'Queues a new run of the same agent with the same input plus input.rerun_of, origin rerun, the original''s regime. Manual runs need the chat level (and, for another user''s run, seeing it: agent.activity_scope = all); autonomous runs need edit_settings. Returns the new run id.';
