CREATE OR REPLACE FUNCTION agent._teams_manage_jobs(p_run_id bigint, p_action text, p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r       agent.runs%ROWTYPE;
  a       agent.agents%ROWTYPE;
  t       agent.triggers%ROWTYPE;
  v_user  text;
  v_scope text := coalesce(p_args->>'scope', 'personal');
  v_sched text := p_args->>'schedule';
  v_tz    text := coalesce(p_args->>'timezone', 'UTC');
  v_job   bigint;
  v_man   boolean;
BEGIN
  SELECT * INTO r FROM agent.runs x WHERE x.id = p_run_id;
  -- a run of another workspace is an unknown run
  IF NOT agent._workspace_ok(r.workspace_id) OR r.id IS NULL THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'undefined_object';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = r.workspace_id AND x.id = r.agent_id;
  v_user := coalesce(r.requested_by, a.owner_id);
  v_man := r.regime = 'manual';
  -- Changing a job needs what agent.set_trigger needs: the edit level, of the
  -- run's user in a manual run, of the agent's owner in an autonomous one
  -- (the run acts with the agent's grants, which its owner bounds).
  IF p_action IN ('create', 'update', 'delete')
     AND NOT coalesce(agent.user_can(CASE WHEN v_man THEN r.requested_by ELSE a.owner_id END, a.id, 'edit_settings'),
                      false) THEN
    RAISE EXCEPTION 'user "%" may not change the jobs of agent %',
                    coalesce(CASE WHEN v_man THEN r.requested_by ELSE a.owner_id END, 'NULL'), a.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Creating, changing or deleting a job needs the edit level on the agent, as agent.set_trigger does.';
  END IF;
  -- A job created or changed in a manual run is left disabled: its runs are
  -- autonomous (the agent's grants), so only a human with the edit level
  -- enables it, through agent.set_trigger; text the model read cannot.
  IF v_man AND p_action = 'update' AND coalesce((p_args->>'enabled')::boolean, false) THEN
    RAISE EXCEPTION 'a job cannot be enabled from a chat'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A job created or changed in a manual run stays disabled until a user with the edit level enables it (agent.set_trigger).';
  END IF;
  IF p_action = 'list' THEN
    RETURN jsonb_build_object('jobs', coalesce((
      SELECT jsonb_agg(jsonb_build_object('job_id', x.id, 'schedule', x.schedule, 'timezone', x.timezone,
                                          'description', agent.cron_describe(x.schedule), 'prompt', x.prompt,
                                          'enabled', x.enabled,
                                          'scope', CASE x.run_as WHEN 'shared' THEN 'shared' ELSE 'personal' END,
                                          'created_by', x.created_by, 'next_run_at', x.next_run_at,
                                          'last_status', x.last_status) ORDER BY x.id)
        FROM agent.triggers x
       WHERE x.workspace_id = a.workspace_id AND x.agent_id = a.id AND x.kind = 'schedule'
         AND (x.run_as = 'shared' OR x.created_by IS NOT DISTINCT FROM v_user)), '[]'));
  ELSIF p_action = 'create' THEN
    IF v_scope NOT IN ('personal', 'shared') THEN
      RAISE EXCEPTION 'invalid job scope "%"', v_scope
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A job is personal or shared.';
    END IF;
    IF v_sched IS NULL OR NOT agent.cron_valid(v_sched) THEN
      RAISE EXCEPTION 'invalid schedule "%"', coalesce(v_sched, 'NULL')
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A schedule is a 5-field cron expression.';
    END IF;
    INSERT INTO agent.triggers (workspace_id, agent_id, kind, schedule, timezone, prompt, run_as, created_by, enabled)
    VALUES (a.workspace_id, a.id, 'schedule', v_sched, v_tz, p_args->>'prompt',
            CASE v_scope WHEN 'shared' THEN 'shared' ELSE 'creator' END, v_user, NOT v_man)
    RETURNING * INTO t;
  ELSIF p_action IN ('update', 'delete') THEN
    v_job := (p_args->>'job_id')::bigint;
    SELECT * INTO t FROM agent.triggers x
     WHERE x.workspace_id = a.workspace_id AND x.id = v_job AND x.agent_id = a.id AND x.kind = 'schedule'
       AND (x.run_as = 'shared' OR x.created_by IS NOT DISTINCT FROM v_user)
     FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'job % does not exist', coalesce(v_job::text, 'NULL')
        USING ERRCODE = 'undefined_object', DETAIL = 'Only this agent''s schedules you can see can be changed.';
    END IF;
    IF t.created_by IS DISTINCT FROM v_user AND NOT agent.user_can(v_user, a.id, 'delete') THEN
      RAISE EXCEPTION 'user "%" may not change shared job %', v_user, t.id
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'Only the job''s creator or a user with the full level on the agent may change a shared job.';
    END IF;
    IF p_action = 'delete' THEN
      DELETE FROM agent.triggers x WHERE x.id = t.id;
      PERFORM agent._audit_event('job.delete', 'success', 'trigger', t.id::text, a.workspace_id, a.owner_id,
                                 jsonb_build_object('agent_id', a.id, 'run_id', p_run_id, 'by_user', v_user,
                                                    'schedule', t.schedule),
                                 format('run %s deleted job %s', p_run_id, t.id));
      RETURN jsonb_build_object('job_id', t.id, 'deleted', true);
    END IF;
    IF v_sched IS NOT NULL AND NOT agent.cron_valid(v_sched) THEN
      RAISE EXCEPTION 'invalid schedule "%"', v_sched
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A schedule is a 5-field cron expression.';
    END IF;
    IF p_args ? 'scope' AND v_scope NOT IN ('personal', 'shared') THEN
      RAISE EXCEPTION 'invalid job scope "%"', v_scope
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A job is personal or shared.';
    END IF;
    UPDATE agent.triggers x
       SET schedule = coalesce(v_sched, x.schedule),
           timezone = coalesce(p_args->>'timezone', x.timezone),
           prompt = coalesce(p_args->>'prompt', x.prompt),
           enabled = CASE WHEN v_man THEN false ELSE coalesce((p_args->>'enabled')::boolean, x.enabled) END,
           run_as = CASE WHEN p_args ? 'scope' THEN CASE v_scope WHEN 'shared' THEN 'shared' ELSE 'creator' END
                         ELSE x.run_as END,
           updated_at = now()
     WHERE x.id = t.id RETURNING * INTO t;
  ELSE
    RAISE EXCEPTION 'unknown manage_jobs action "%"', coalesce(p_action, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'An action is create, list, update or delete.';
  END IF;
  PERFORM agent._audit_event('job.' || p_action, 'success', 'trigger', t.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('agent_id', a.id, 'run_id', p_run_id, 'by_user', v_user,
                                                'schedule', t.schedule),
                             format('run %s %sd job %s', p_run_id, p_action, t.id));
  RETURN jsonb_build_object('job_id', t.id, 'schedule', t.schedule, 'timezone', t.timezone,
                            'description', agent.cron_describe(t.schedule), 'prompt', t.prompt,
                            'enabled', t.enabled,
                            'scope', CASE t.run_as WHEN 'shared' THEN 'shared' ELSE 'personal' END,
                            'next_run_at', t.next_run_at)
         || CASE WHEN v_man THEN jsonb_build_object('note',
              'The job is disabled until a user with the edit level on the agent enables it.') ELSE '{}' END;
END
$$;
REVOKE ALL ON FUNCTION agent._teams_manage_jobs(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._teams_manage_jobs(bigint, text, jsonb) IS
  'Internal (manage_jobs tool): create, list, update or delete the schedule triggers of the run''s agent (a run of another workspace than the session''s is unknown, 42704), acting as the run''s requester (else the agent''s owner). personal jobs (run_as creator) are visible to their creator, shared ones (run_as shared) to everyone; only the creator or a full user changes a shared job (42501). Schedules are validated with agent.cron_valid (22023). Creating, changing or deleting needs the edit level (as agent.set_trigger) of the run''s user in a manual run, of the agent''s owner in an autonomous one (42501); a job created or changed in a manual run is left disabled and cannot be enabled from it (42501): a user with the edit level enables it with agent.set_trigger. The worker gates delete through the approval gate before calling this.';
