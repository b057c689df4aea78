CREATE OR REPLACE FUNCTION agent._record_decision(ap agent.approvals, p_by_user text, p_decision text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_owner text;
BEGIN
  UPDATE agent.approvals p SET status = p_decision, decided_by = p_by_user, decided_at = now()
   WHERE p.workspace_id = ap.workspace_id AND p.id = ap.id;
  SELECT a.owner_id INTO v_owner
    FROM agent.agents a JOIN agent.runs x ON x.workspace_id = a.workspace_id AND x.agent_id = a.id
   WHERE x.workspace_id = ap.workspace_id AND x.id = ap.run_id;
  PERFORM agent._audit_event(CASE p_decision WHEN 'approved' THEN 'approval.approve' ELSE 'approval.deny' END,
                             CASE p_decision WHEN 'approved' THEN 'success' ELSE 'denied' END,
                             'approval', ap.id::text, ap.workspace_id, v_owner,
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool,
                                                'approval_key', ap.approval_key, 'by_user', p_by_user)
                               || CASE WHEN ap.reason IS NOT NULL THEN jsonb_build_object('reason', ap.reason)
                                       ELSE '{}'::jsonb END,
                             format('%s %s %s on run %s', p_by_user, p_decision, ap.tool, ap.run_id),
                             CASE p_decision WHEN 'denied' THEN 'denied' END);
END
$$;
