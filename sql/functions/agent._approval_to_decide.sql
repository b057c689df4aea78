CREATE OR REPLACE FUNCTION agent._approval_to_decide(p_key text, p_by_user text, p_run_id bigint)
RETURNS agent.approvals
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ids   bigint[];
  v_any   boolean;
  v_state text;
  ap      agent.approvals%ROWTYPE;
  v_root  bigint;
  v_agents bigint[];
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws    text := agent._session_workspace();
  v_now   timestamptz := now();
BEGIN
  IF p_key IS NULL OR p_by_user IS NULL OR p_by_user = '' THEN
    RAISE EXCEPTION 'approval key and deciding user are required'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: that of the key's latest
    -- approval (a pending one first)
    SELECT p.workspace_id INTO v_ws FROM agent.approvals p
     WHERE p.approval_key = p_key AND (p_run_id IS NULL OR p.run_id = p_run_id)
     ORDER BY p.status = 'pending' DESC, p.id DESC LIMIT 1;
  END IF;
  -- every statement names the workspace (Citus routes by it); the levels
  -- are checked after the read (agent.user_can reads distributed tables)
  SELECT array_agg(p.id ORDER BY p.id), array_agg(x.agent_id ORDER BY p.id), count(*) > 0
    INTO v_ids, v_agents, v_any
    FROM agent.approvals p JOIN agent.runs x ON x.workspace_id = p.workspace_id AND x.id = p.run_id
   WHERE p.workspace_id = v_ws AND p.approval_key = p_key AND p.status = 'pending' AND p.expires_at > v_now
     AND (p_run_id IS NULL OR p.run_id = p_run_id);
  IF v_any THEN
    v_ids := ARRAY(SELECT u.id FROM unnest(v_ids, v_agents) u(id, agent_id)
                    WHERE coalesce(agent.user_can(p_by_user, u.agent_id, 'edit_settings'), false) ORDER BY u.id);
    IF cardinality(v_ids) = 0 THEN
      v_ids := NULL;
    END IF;
  END IF;
  IF NOT v_any THEN
    SELECT p.status INTO v_state FROM agent.approvals p
     WHERE p.workspace_id = v_ws AND p.approval_key = p_key AND (p_run_id IS NULL OR p.run_id = p_run_id)
     ORDER BY p.id DESC LIMIT 1;
    IF v_state IS NULL THEN
      RAISE EXCEPTION 'no pending approval with key "%"', p_key
        USING ERRCODE = 'undefined_object';
    END IF;
    RAISE EXCEPTION 'approval "%" is no longer pending', p_key
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('It is %s.', CASE WHEN v_state = 'pending' THEN 'past its expiry time' ELSE v_state END);
  END IF;
  IF v_ids IS NULL THEN
    RAISE EXCEPTION 'user "%" may not decide approval "%"', p_by_user, p_key
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Deciding an approval requires the edit level on the agent.';
  END IF;
  IF cardinality(v_ids) > 1 THEN
    RAISE EXCEPTION 'approval key "%" is pending on % runs', p_key, cardinality(v_ids)
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The same tool call waits for approval in several runs; a decision applies to one.',
            HINT = 'Pass the run id as the third argument.';
  END IF;
  SELECT coalesce(rt.id, x.id) INTO v_root
    FROM agent.approvals p JOIN agent.runs x ON x.workspace_id = p.workspace_id AND x.id = p.run_id
    LEFT JOIN agent.runs rt ON rt.workspace_id = x.workspace_id AND rt.id = x.root_run_id
   WHERE p.workspace_id = v_ws AND p.id = v_ids[1];
  -- the tree lock (agent._lock_tree), then the approval
  PERFORM 1 FROM agent.runs rt WHERE rt.workspace_id = v_ws AND rt.id = v_root FOR UPDATE;
  SELECT * INTO ap FROM agent.approvals p WHERE p.workspace_id = v_ws AND p.id = v_ids[1] FOR UPDATE;
  IF ap.status <> 'pending' THEN
    RAISE EXCEPTION 'approval "%" is no longer pending', p_key
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('It is %s.', ap.status);
  END IF;
  RETURN ap;
END
$$;
