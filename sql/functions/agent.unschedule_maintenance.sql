CREATE OR REPLACE FUNCTION agent.unschedule_maintenance() RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_n integer := 0;
  v_ok boolean;
  v_name text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
    RAISE EXCEPTION 'pg_cron is not installed in this database'
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  FOREACH v_name IN ARRAY ARRAY['pg_agents_purge_audit', 'pg_agents_tick', 'pg_agents_purge_runs'] LOOP
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM cron.job WHERE jobname = $1 AND username = current_user)'
      INTO v_ok USING v_name;
    IF v_ok THEN
      EXECUTE 'SELECT cron.unschedule($1)' USING v_name;
      v_n := v_n + 1;
    END IF;
  END LOOP;
  RETURN v_n;
END
$$;
REVOKE ALL ON FUNCTION agent.unschedule_maintenance() FROM PUBLIC;
COMMENT ON FUNCTION agent.unschedule_maintenance() IS
  'Removes the pg_cron jobs agent.schedule_maintenance() made; returns how many.';
