-- 0.3.0 -> 0.4.0, issue 32: every table of the extension in a logical dump.
\ir ../../functions/agent._audit_partition_setup.sql

-- (the tables and sequences marked for pg_dump: 978_dump_marks.include, sql/src/975_dump.sql)

-- no per-minute tick job where the worker ticks (issue 32)
\ir ../../functions/agent.schedule_maintenance.sql
COMMENT ON FUNCTION agent.schedule_maintenance() IS
  'Schedules agent.purge_audit() daily (03:17), agent.tick() every minute (not in the database the worker serves with pg_agents.worker_tick on: the worker ticks it) and agent.purge_runs(5000) every 10 minutes through pg_cron; re-running updates the jobs instead of duplicating them.';
