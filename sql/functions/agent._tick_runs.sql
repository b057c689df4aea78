CREATE OR REPLACE FUNCTION agent._tick_runs(p_now timestamptz DEFAULT now()) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_max       int := current_setting('pg_agents.max_attempts')::int;
  c           record;
  r           agent.runs%ROWTYPE;
  ap          agent.approvals%ROWTYPE;
  v_reclaimed int := 0;
  v_abandoned int := 0;
  v_expired   int := 0;
  v_cancelled int := 0;
  v_owner     text;
BEGIN
  -- runs whose executor's lease has passed
  -- (each run's workspace named in every statement after the first: Citus
  -- routes by it; the tree lock as agent._lock_tree's)
  FOR c IN SELECT x.workspace_id, x.id, coalesce(rt.id, x.id) AS root
             FROM agent.runs x LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
            WHERE x.status = 'running' AND x.lease_until < p_now ORDER BY x.id
  LOOP
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.root FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.id FOR UPDATE;
    CONTINUE WHEN r.status <> 'running' OR NOT r.lease_until < p_now;
    IF r.attempts >= v_max THEN
      PERFORM agent._finish_run(r.id, 'failed', NULL, format('run abandoned after %s attempts', r.attempts));
      v_abandoned := v_abandoned + 1;
    ELSE
      UPDATE agent.runs x SET status = 'queued', lease_until = NULL
       WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
      PERFORM agent._audit_run('run.reclaim', r, 'success',
                               jsonb_build_object('status', 'queued', 'attempts', r.attempts),
                               format('run %s re-queued: its lease expired (attempt %s of %s)', r.id, r.attempts, v_max));
      PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
      v_reclaimed := v_reclaimed + 1;
    END IF;
  END LOOP;

  -- runs of deleted agents never start (agent.claim_runs skips them); from
  -- the few deleted agents (agents_deleted_idx) to their runs (runs_agent_idx),
  -- never through every active run (the tick's own queued runs included)
  FOR c IN SELECT x.workspace_id, x.id, coalesce(rt.id, x.id) AS root, x.agent_id
             FROM agent.agents a
             CROSS JOIN LATERAL (
                   SELECT y.workspace_id, y.id, y.root_run_id, y.agent_id FROM agent.runs y
                    WHERE y.workspace_id = a.workspace_id AND y.agent_id = a.id
                      AND y.status IN ('queued', 'waiting_approval', 'waiting_input', 'waiting_children')) x
             LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
            WHERE a.deleted_at IS NOT NULL
            ORDER BY x.id
  LOOP
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.root FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    IF agent._finish_run(c.id, 'cancelled', NULL, format('agent %s was deleted', c.agent_id)) THEN
      v_cancelled := v_cancelled + 1;
    END IF;
  END LOOP;

  -- pending approvals past their time-to-live
  FOR c IN SELECT p.workspace_id, p.id, coalesce(rt.id, x.id) AS root FROM agent.approvals p
             JOIN agent.runs x ON x.workspace_id = p.workspace_id AND x.id = p.run_id
             LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
            WHERE p.status = 'pending' AND p.expires_at <= p_now ORDER BY p.id
  LOOP
    PERFORM 1 FROM agent.runs x WHERE x.workspace_id = c.workspace_id AND x.id = c.root FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    SELECT * INTO ap FROM agent.approvals p WHERE p.workspace_id = c.workspace_id AND p.id = c.id FOR UPDATE;
    CONTINUE WHEN ap.status <> 'pending';
    UPDATE agent.approvals p SET status = 'expired', decided_at = p_now
     WHERE p.workspace_id = ap.workspace_id AND p.id = ap.id;
    SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id;
    SELECT a.owner_id INTO v_owner FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id;
    PERFORM agent._audit_event('approval.expire', 'success', 'approval', ap.id::text, ap.workspace_id,
                               v_owner,
                               jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool, 'approval_key', ap.approval_key),
                               format('approval of %s on run %s expired', ap.tool, ap.run_id));
    v_expired := v_expired + 1;
    IF r.status = 'waiting_approval' THEN
      PERFORM agent._finish_run(r.id, 'expired', NULL,
                                format('approval of tool "%s" expired at %s', ap.tool, ap.expires_at));
    END IF;
  END LOOP;

  RETURN jsonb_build_object('reclaimed', v_reclaimed, 'abandoned', v_abandoned,
                            'approvals_expired', v_expired, 'cancelled_deleted', v_cancelled);
END
$$;
