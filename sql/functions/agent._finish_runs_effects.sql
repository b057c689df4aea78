CREATE OR REPLACE FUNCTION agent._finish_runs_effects(p_rows agent.runs[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws     text;
  v_rows   agent.runs[];
  v_aids   bigint[];
  v_owners text[];
BEGIN
  -- workspace by workspace (every statement names its workspace: Citus
  -- routes by it); a batch of the worker is mostly of one
  FOR v_ws IN SELECT DISTINCT u.workspace_id FROM unnest(p_rows) u ORDER BY 1 LOOP
    v_rows := CASE WHEN pg_catalog.cardinality(p_rows) = 1 THEN p_rows
                   ELSE ARRAY(SELECT u FROM unnest(p_rows) u WHERE u.workspace_id = v_ws ORDER BY u.id) END;

    -- pending approvals of an ended run can no longer be decided
    UPDATE agent.approvals SET status = 'expired', decided_at = now()
     WHERE workspace_id = v_ws AND run_id IN (SELECT u.id FROM unnest(v_rows) u) AND status = 'pending';

    -- the trigger keeps the last run's status and the first run's start (as one by one in id order)
    IF EXISTS (SELECT 1 FROM unnest(v_rows) u WHERE u.trigger_id IS NOT NULL) THEN
      UPDATE agent.triggers t
         SET last_status = l.status, last_error = l.error, last_run_at = coalesce(t.last_run_at, l.first_created)
        FROM (SELECT DISTINCT ON (u.trigger_id) u.trigger_id, u.status, u.error,
                     (SELECT u2.created_at FROM unnest(v_rows) u2
                       WHERE u2.trigger_id = u.trigger_id ORDER BY u2.id LIMIT 1) AS first_created
                FROM unnest(v_rows) u
               WHERE u.trigger_id IS NOT NULL
               ORDER BY u.trigger_id, u.id DESC) l
       WHERE t.workspace_id = v_ws AND t.id = l.trigger_id;
    END IF;

    -- one audit row (agent._audit_run) and one notification (agent._runs_notify
    -- of an ended run) per run, in id order; the owners read first, so that
    -- the statement that audits reads no distributed table (it runs here)
    SELECT array_agg(a.id), array_agg(a.owner_id) INTO v_aids, v_owners
      FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.id IN (SELECT u.agent_id FROM unnest(v_rows) u);
    PERFORM agent._audit_event('run.finish',
                               CASE WHEN u.status IN ('succeeded', 'cancelled') THEN 'success' ELSE 'error' END,
                               'run', u.id::text, u.workspace_id,
                               v_owners[array_position(v_aids, u.agent_id)],
                               jsonb_build_object('agent_id', u.agent_id, 'status', u.status, 'error', u.error,
                                                  'tokens_total', u.tokens_total),
                               format('run %s %s', u.id, u.status),
                               CASE WHEN u.status NOT IN ('succeeded', 'cancelled') THEN u.status END),
            pg_notify('agent_runs', json_build_object('run_id', u.id, 'agent_id', u.agent_id, 'status', u.status)::text)
       FROM unnest(v_rows) u;
  END LOOP;
END
$$;
