CREATE OR REPLACE FUNCTION agent.schedule_maintenance()
RETURNS TABLE(job_name text, schedule text, command text, jobid bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_jobs text[][] := ARRAY[
    ARRAY['pg_agents_purge_audit', '17 3 * * *',
          'SELECT agent.set_identity(''system''); SELECT agent.purge_audit()'],
    ARRAY['pg_agents_tick', '* * * * *',
          'SELECT agent.set_identity(''system''); SELECT agent.tick()'],
    -- run retention (agent.purge_runs, docs/runs.md): a batch every 10 minutes
    ARRAY['pg_agents_purge_runs', '*/10 * * * *',
          'SELECT agent.set_identity(''system''); SELECT agent.purge_runs(5000)']];
  i int;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
    RAISE EXCEPTION 'pg_cron is not installed in this database'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'agent.schedule_maintenance() schedules agent.purge_audit(), agent.tick() and agent.purge_runs() through pg_cron.',
            HINT = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database and run CREATE EXTENSION pg_cron; or call agent.purge_audit() daily, agent.tick() every minute and agent.purge_runs() every few minutes from another scheduler.';
  END IF;
  FOR i IN 1 .. pg_catalog.array_length(v_jobs, 1) LOOP
    job_name := v_jobs[i][1];
    schedule := v_jobs[i][2];
    command := v_jobs[i][3];
    -- the worker ticks the database it serves itself (pg_agents.worker_tick,
    -- about once a second): no minute job beside it, and one left from
    -- before goes
    IF job_name = 'pg_agents_tick'
       AND coalesce(pg_catalog.current_setting('pg_agents.worker_tick', true), 'on') = 'on'
       AND pg_catalog.current_setting('pg_agents.database', true) = pg_catalog.current_database() THEN
      IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        EXECUTE 'SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = $1 AND username = current_user'
          USING job_name;
      END IF;
      CONTINUE;
    END IF;
    -- a named job is updated in place when it exists
    EXECUTE 'SELECT cron.schedule($1, $2, $3)' INTO jobid USING job_name, schedule, command;
    RETURN NEXT;
  END LOOP;
END
$$;
