CREATE OR REPLACE FUNCTION agent.requeue_runs(agent_id bigint DEFAULT NULL, workspace_id text DEFAULT NULL,
                                   status text DEFAULT 'failed',
                                   since timestamptz DEFAULT now() - interval '1 hour',
                                   by_user text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  o    agent.runs%ROWTYPE;
  v_id bigint;
  n    agent.runs%ROWTYPE;
  v_n  integer := 0;
  v_who text := coalesce(nullif(by_user, ''), 'dba:' || session_user::text);
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(requeue_runs.by_user, ''), true);
  IF status IS NULL OR status NOT IN ('failed', 'budget_exceeded', 'cancelled', 'expired') THEN
    RAISE EXCEPTION 'invalid status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Runs that ended failed, budget_exceeded, cancelled or expired are run again.';
  END IF;
  IF agent_id IS NULL AND workspace_id IS NULL THEN
    RAISE EXCEPTION 'agent.requeue_runs needs an agent or a workspace'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF since IS NULL THEN
    RAISE EXCEPTION 'since must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF agent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM agent.agents x WHERE x.id = agent_id) THEN
    RAISE EXCEPTION 'agent % does not exist', agent_id USING ERRCODE = 'undefined_object';
  END IF;
  FOR o IN
    SELECT x.* FROM agent.runs x
      JOIN agent.agents a ON a.workspace_id = x.workspace_id AND a.id = x.agent_id
     WHERE x.status = status AND x.finished_at >= since AND x.parent_run_id IS NULL
       AND (agent_id IS NULL OR x.agent_id = agent_id)
       AND (workspace_id IS NULL OR x.workspace_id = workspace_id)
       AND a.deleted_at IS NULL AND (x.regime = 'manual' OR a.status = 'active')
       -- not re-run already (by an earlier call)
       AND NOT EXISTS (SELECT 1 FROM agent.runs y
                        WHERE y.workspace_id = x.workspace_id AND y.agent_id = x.agent_id
                          AND y.created_at >= x.finished_at
                          AND y.origin = 'rerun' AND y.input ->> 'rerun_of' = x.id::text)
     ORDER BY x.id
  LOOP
    v_id := agent._enqueue_run(o.agent_id, o.regime, 'rerun', o.input || jsonb_build_object('rerun_of', o.id),
                               NULL, o.requested_by);
    SELECT * INTO n FROM agent.runs x WHERE x.workspace_id = o.workspace_id AND x.id = v_id;
    PERFORM agent._audit_run('run.rerun', n, 'success',
                             jsonb_build_object('rerun_of', o.id, 'by_user', by_user, 'db_user', session_user::text,
                                                'status', n.status, 'bulk', true),
                             format('run %s re-runs run %s (bulk, by %s)', v_id, o.id, v_who));
    v_n := v_n + 1;
  END LOOP;
  RETURN v_n;
END
$$;

COMMENT ON FUNCTION agent.requeue_runs(bigint, text, text, timestamptz, text) IS
  'Runs again the root runs of an agent or a workspace that ended with this status (default failed) since the given time (default: the last hour), e.g. after a provider outage: each gets a new linked run (origin rerun, input.rerun_of) through the same queue and caps; a run already re-run is skipped, as are runs of deleted agents and autonomous runs of suspended ones. Superuser only; audited. Returns how many runs were queued.';
