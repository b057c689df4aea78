-- 0.3.0 -> 0.4.0, issue 32: every table of the extension in a logical dump.
CREATE OR REPLACE FUNCTION agent._audit_partition_setup(part regclass, note text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_citus boolean;
BEGIN
  EXECUTE pg_catalog.format('CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON %s '
                            'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_guard()', part);
  EXECUTE pg_catalog.format('CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON %s '
                            'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_guard()', part);
  EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_append_only', part);
  -- the row guard is the parent's, cloned on the partition; on Citus the
  -- clones on the shards do not carry the name Citus would give them, and
  -- the statement fails there: the parent's setting then stands
  IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_append_only_row', part);
  ELSE
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1)'
      INTO v_citus USING 'agent.audit_log'::pg_catalog.regclass;
    IF NOT v_citus THEN
      EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_append_only_row', part);
    END IF;
  END IF;
  EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_no_truncate', part);
  EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', part);
  EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM PUBLIC', part);
  EXECUTE pg_catalog.format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON %s FROM CURRENT_USER', part);
  EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', part, note);
  -- a member of the extension like its parent (its definition comes back
  -- with CREATE EXTENSION or agent.maintain_audit(), not from a dump)
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend
                  WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objid = part
                    AND refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND deptype = 'e') THEN
    EXECUTE pg_catalog.format('ALTER EXTENSION pg_agents ADD TABLE %s', part);
  END IF;
  -- its rows go into a logical dump (pg_dump --load-via-partition-root, see
  -- docs/operations.md), as pg_extension_config_dump() marks the partitions
  -- made at install; that function works inside an extension script only,
  -- so a partition made later is marked the way it marks one
  UPDATE pg_catalog.pg_extension
     SET extconfig = pg_catalog.array_append(extconfig, part::pg_catalog.oid),
         extcondition = pg_catalog.array_append(extcondition, ''::pg_catalog.text)
   WHERE extname = 'pg_agents'
     AND NOT (part::pg_catalog.oid = ANY (coalesce(extconfig, '{}'::pg_catalog.oid[])));
END
$$;
COMMENT ON FUNCTION agent._audit_partition_setup(regclass, text) IS
  'Internal: the guard triggers (enabled ALWAYS), row-level security, privileges, comment, extension membership and logical-dump mark of a new partition of agent.audit_log.';

-- (the tables and sequences marked for pg_dump: 978_dump_marks.include, sql/src/975_dump.sql)

-- no per-minute tick job where the worker ticks (issue 32)
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
COMMENT ON FUNCTION agent.schedule_maintenance() IS
  'Schedules agent.purge_audit() daily (03:17), agent.tick() every minute (not in the database the worker serves with pg_agents.worker_tick on: the worker ticks it) and agent.purge_runs(5000) every 10 minutes through pg_cron; re-running updates the jobs instead of duplicating them.';
