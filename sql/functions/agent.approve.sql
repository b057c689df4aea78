CREATE OR REPLACE FUNCTION agent.approve(approval_key text, by_user text, run_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  ap agent.approvals%ROWTYPE;
  r  agent.runs%ROWTYPE;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(approve.by_user, ''), true);
  ap := agent._approval_to_decide(approve.approval_key, by_user, approve.run_id);
  PERFORM agent._record_decision(ap, by_user, 'approved');
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id FOR UPDATE;
  IF r.status = 'waiting_approval'
     AND NOT EXISTS (SELECT 1 FROM agent.approvals p
                      WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.status = 'pending') THEN
    UPDATE agent.runs x SET status = 'queued' WHERE x.workspace_id = r.workspace_id AND x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.resume', r, 'success', jsonb_build_object('status', 'queued'),
                             format('run %s re-queued: approved by %s', r.id, by_user));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'queued');
  END IF;
  RETURN ap.run_id;
END
$$;

COMMENT ON FUNCTION agent.approve(text, text, bigint) IS
  'Approves one pending tool call (edit level on the agent required); run_id may be NULL unless the key is pending on several runs the user may decide. The run goes back to queued once none of its approvals is pending; the approval authorises that one call once (agent.consume_approval). Returns the run id.';
