CREATE OR REPLACE FUNCTION agent._mcp_worker_elicit_poll(p_id bigint, p_expire boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_ap text;
  v_out jsonb;
  -- the question's workspace (Citus routes by it): the session's, else its own
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.mcp_elicitations x WHERE x.workspace_id = v_ws AND x.id = p_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_elicitations x WHERE x.id = p_id;
  END IF;
  SELECT * INTO e FROM agent.mcp_elicitations x WHERE x.workspace_id = v_ws AND x.id = p_id AND x.live FOR UPDATE;
  IF NOT FOUND OR e.status IN ('consumed', 'expired') THEN
    RETURN '{"action": "cancel"}';
  END IF;
  IF e.status = 'answered' THEN
    v_out := (SELECT v.value FROM pg_catalog.jsonb_each(e.response) v LIMIT 1);
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN coalesce(v_out, '{"action": "cancel"}');
  END IF;
  SELECT p.status INTO v_ap FROM agent.approvals p
   WHERE p.run_id = e.run_id AND p.approval_key = e.approval_key ORDER BY p.id DESC LIMIT 1;
  -- decided as an approval, not answered: denied is a decline, approved
  -- without content a cancel (no form was filled in)
  IF v_ap = 'denied' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "decline"}', answered_at = now()
     WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN '{"action": "decline"}';
  END IF;
  IF v_ap = 'approved' THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed', response = '{"action": "cancel"}', answered_at = now()
     WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    RETURN '{"action": "cancel"}';
  END IF;
  IF coalesce(p_expire, false) OR e.expires_at <= now() OR v_ap = 'expired' THEN
    UPDATE agent.mcp_elicitations x SET status = 'expired', response = '{"action": "cancel"}' WHERE x.workspace_id = e.workspace_id AND x.id = e.id;
    UPDATE agent.approvals p SET status = 'expired', decided_at = now()
     WHERE p.run_id = e.run_id AND p.approval_key = e.approval_key AND p.status = 'pending';
    PERFORM agent._audit_event('approval.expire', 'success', 'approval', e.id::text, e.workspace_id, NULL,
                               pg_catalog.jsonb_build_object('run_id', e.run_id, 'tool', e.exposed_name,
                                                             'approval_key', e.approval_key, 'elicitation', true),
                               pg_catalog.format('question of %s on run %s expired: cancel sent to the server',
                                                 e.exposed_name, e.run_id));
    RETURN '{"action": "cancel"}';
  END IF;
  RETURN NULL;
END
$$;
