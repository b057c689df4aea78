CREATE OR REPLACE FUNCTION agent.audit_events(target_type text DEFAULT NULL, target_id text DEFAULT NULL,
                                   actor_kind text DEFAULT NULL, status text DEFAULT NULL,
                                   run_id bigint DEFAULT NULL, action text DEFAULT NULL,
                                   since timestamptz DEFAULT NULL, lim integer DEFAULT 100)
RETURNS SETOF agent.audit_log
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- computed once and passed as a value: the query names its workspace
  -- (Citus routes it to that workspace's shard)
  v_ws text := agent.current_workspace();
BEGIN
  IF audit_events.actor_kind IS NOT NULL AND audit_events.actor_kind NOT IN ('agent', 'human', 'system') THEN
    RAISE EXCEPTION 'invalid actor kind "%"', audit_events.actor_kind
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An actor kind is agent, human or system.';
  END IF;
  IF audit_events.status IS NOT NULL AND audit_events.status NOT IN ('success', 'error', 'denied') THEN
    RAISE EXCEPTION 'invalid audit status "%"', audit_events.status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An audit status is success, error or denied.';
  END IF;
  IF lim IS NULL OR lim < 1 OR lim > 10000 THEN
    RAISE EXCEPTION 'invalid limit %', coalesce(lim::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The limit is between 1 and 10000.';
  END IF;
  RETURN QUERY
    SELECT l.* FROM agent.audit_log l
     WHERE l.workspace_id = v_ws
       AND (audit_events.target_type IS NULL OR l.target_type = audit_events.target_type)
       AND (audit_events.target_id IS NULL OR l.target_id = audit_events.target_id)
       AND (audit_events.actor_kind IS NULL OR l.actor_kind = audit_events.actor_kind)
       AND (audit_events.status IS NULL OR l.status = audit_events.status)
       AND (audit_events.run_id IS NULL OR l.run_id = audit_events.run_id)
       AND (audit_events.action IS NULL OR l.action = audit_events.action)
       AND (audit_events.since IS NULL OR l.at >= audit_events.since)
     ORDER BY l.at DESC, l.id DESC
     LIMIT lim;
END
$$;
COMMENT ON FUNCTION agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer) IS
  'Audit rows of the caller''s workspace (pg_agents.workspace), newest first, filtered; without a workspace identity nothing matches.';
