CREATE OR REPLACE FUNCTION agent._finish_run(p_run_id bigint, p_status text, p_output jsonb, p_error text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r        agent.runs%ROWTYPE;
  p        agent.runs%ROWTYPE;
  v_budget bigint;
  v_child  bigint;
  v_unused bigint;
  v_at     timestamptz;
  -- the workspace of the tree, named by every statement (Citus routes by
  -- it): the session's, else (a session bound to none, or agent.tick on
  -- another workspace's run) the run's own
  v_ws     text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  -- the caller holds the tree lock
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id FOR UPDATE;
  IF NOT FOUND OR NOT agent._run_is_active(r.status) THEN
    RETURN false;
  END IF;
  UPDATE agent.runs x
     SET status = p_status, output = coalesce(p_output, x.output), error = p_error,
         finished_at = now(), lease_until = NULL
   WHERE x.workspace_id = v_ws AND x.id = p_run_id
  RETURNING * INTO r;

  -- children still at work are cancelled (deepest first, through recursion)
  FOR v_child IN SELECT c.id FROM agent.runs c
                  WHERE c.workspace_id = v_ws AND c.parent_run_id = p_run_id AND agent._run_is_active(c.status)
                  ORDER BY c.id
  LOOP
    PERFORM agent._finish_run(v_child, 'cancelled', NULL,
                              format('cancelled: parent run %s ended %s', p_run_id, p_status));
  END LOOP;

  IF r.parent_run_id IS NOT NULL THEN
    SELECT coalesce(r.token_budget, a.default_token_budget) INTO v_budget
      FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = r.agent_id;
    -- the unused part of the reservation goes back to the parent's envelope
    v_unused := greatest(0, v_budget - r.tokens_total);
    UPDATE agent.runs x SET tokens_reserved = greatest(0, x.tokens_reserved - v_unused)
     WHERE x.workspace_id = v_ws AND x.id = r.parent_run_id
    RETURNING * INTO p;
    -- the parent sees the child's end as the result of its delegate step
    -- (the time as a value: Citus refuses volatile functions in an UPDATE)
    v_at := clock_timestamp();
    UPDATE agent.run_steps s
       SET output = jsonb_build_object('child_run_id', r.id, 'agent_id', r.agent_id,
                                       'status', r.status, 'output', r.output, 'error', r.error,
                                       'tokens_total', r.tokens_total),
           status = CASE WHEN r.status = 'succeeded' THEN 'ok' ELSE 'error' END,
           finished_at = v_at
     WHERE s.workspace_id = v_ws AND s.run_id = r.parent_run_id AND s.kind = 'delegate'
       AND s.input ->> 'child_run_id' = r.id::text;
    -- a parent waiting for its children goes back to the queue when the last one ends
    IF p.status = 'waiting_children'
       AND NOT EXISTS (SELECT 1 FROM agent.runs c
                        WHERE c.workspace_id = v_ws AND c.parent_run_id = p.id AND agent._run_is_active(c.status)) THEN
      UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = v_ws AND x.id = p.id RETURNING * INTO p;
      PERFORM agent._audit_run('run.resume', p, 'success', jsonb_build_object('status', 'queued'),
                               format('run %s re-queued: its child runs have ended', p.id));
      PERFORM agent._runs_notify(p.id, p.agent_id, 'queued');
    END IF;
  END IF;

  -- approvals, trigger, audit row, notification
  PERFORM agent._finish_runs_effects(ARRAY[r]);
  RETURN true;
END
$$;
