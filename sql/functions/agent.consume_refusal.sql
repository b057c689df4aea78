CREATE OR REPLACE FUNCTION agent.consume_refusal(run_id bigint, tool text, input jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_key text := agent.approval_key(tool, coalesce(consume_refusal.input, '{}'));
  ap    agent.approvals%ROWTYPE;
  v_at  timestamptz;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws  text := agent._session_workspace();
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = consume_refusal.run_id;
  END IF;
  -- (the time as a value: Citus refuses volatile functions in an UPDATE)
  v_at := clock_timestamp();
  UPDATE agent.approvals p SET consumed_at = v_at
   WHERE p.workspace_id = v_ws
     AND p.id = (SELECT q.id FROM agent.approvals q
                  WHERE q.workspace_id = v_ws AND q.run_id = consume_refusal.run_id AND q.approval_key = v_key
                    AND q.status IN ('denied', 'expired') AND q.consumed_at IS NULL
                  ORDER BY q.id LIMIT 1
                  FOR UPDATE SKIP LOCKED)
     AND p.consumed_at IS NULL
  RETURNING * INTO ap;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  PERFORM agent._audit_event('approval.refuse', 'denied', 'approval', ap.id::text, ap.workspace_id, NULL,
                             jsonb_build_object('run_id', ap.run_id, 'tool', ap.tool, 'approval_key', ap.approval_key,
                                                'status', ap.status),
                             format('run %s is told that the call of %s was %s', ap.run_id, ap.tool, ap.status),
                             ap.status);
  RETURN jsonb_build_object('status', ap.status, 'decided_by', ap.decided_by, 'reason', ap.reason);
END
$$;
