CREATE OR REPLACE FUNCTION agent._events_cleanup(p_now timestamptz DEFAULT now()) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- SHOW gives the window with a unit (10min, 600s, 1h...), which interval input reads
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '600')::interval;
  v_n      bigint;
BEGIN
  DELETE FROM agent.event_dedup d WHERE d.seen_at < p_now - v_window;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  DELETE FROM agent.event_launches l WHERE l.seen_at < p_now - v_window;
  RETURN v_n;
END
$$;
REVOKE ALL ON FUNCTION agent._events_cleanup(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._events_cleanup(timestamptz) IS
  'Internal (called by agent.tick): deletes dedup fingerprints and launch records (agent.event_launches) older than pg_agents.dedup_window; returns how many fingerprints.';
