CREATE OR REPLACE FUNCTION agent._allowlist_denied(p_to_type text, p_reason text, p_target_id text, p_detail jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_agent  bigint := agent.current_agent_id();
  v_run    bigint;
  v_ws     text;
  v_seq    integer;
  v_reason text := CASE WHEN p_reason IN ('not_granted', 'grant_read_only', 'owner_denied', 'agent_suspended',
                                         'agent_deleted', 'agent_not_found')
                        THEN p_reason ELSE 'not_granted' END;
  v_det    jsonb := agent.redact(coalesce(p_detail, '{}'::jsonb));
  v_type   text := pg_catalog.left(coalesce(p_to_type, ''), 200);
  v_target text := pg_catalog.left(p_target_id, 200);
BEGIN
  IF v_agent IS NULL THEN
    RETURN;
  END IF;
  IF pg_catalog.octet_length(v_det::text) > 4096 THEN
    v_det := pg_catalog.jsonb_build_object('truncated', true);
  END IF;
  BEGIN
    v_run := nullif(pg_catalog.current_setting('pg_agents.run_id', true), '')::bigint;
  EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
    v_run := NULL;
  END;
  -- the session's workspace (one bound to none: the agent's own)
  v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  IF v_run IS NOT NULL THEN
    PERFORM 1 FROM agent.runs r
     WHERE r.workspace_id = v_ws AND r.id = v_run AND r.agent_id = v_agent AND r.status = 'running' FOR UPDATE;
    IF FOUND THEN
      SELECT coalesce(max(s.seq), 0) + 1 INTO v_seq FROM agent.run_steps s WHERE s.workspace_id = v_ws AND s.run_id = v_run;
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, finished_at)
      VALUES (v_ws, v_run, v_seq, 'denied', 'follow_relation', v_det,
              pg_catalog.jsonb_build_object('resource_type', v_type, 'reason', v_reason), 'denied',
              pg_catalog.clock_timestamp());
    END IF;
  END IF;
  SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM agent._audit_event('agent.follow_relation', 'denied', v_type, v_target, v_ws, NULL,
                             v_det, pg_catalog.format('relation to a %s cut: %s', v_type, v_reason), v_reason);
END
$$;
COMMENT ON FUNCTION agent._allowlist_denied(text, text, text, jsonb) IS
  'Internal to agent.follow_relation: records a cut relation target as a denied step of the current run (only a running run of the session''s own agent; type and a known reason code only; redacted, bounded detail) and as a denied audit row in the agent''s workspace. Executable by agents_tool and agents_app only.';
