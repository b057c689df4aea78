-- agent.schedule_maintenance(): pg_cron jobs, idempotent.
SELECT job_name, schedule, command FROM agent.schedule_maintenance() ORDER BY 1;
SELECT jobname, schedule, command, database = current_database() AS here
  FROM cron.job WHERE jobname LIKE 'pg_agents_%' ORDER BY 1;
-- again: the same three jobs, updated in place
SELECT count(DISTINCT jobid) FROM agent.schedule_maintenance();
SELECT count(*) FROM cron.job WHERE jobname LIKE 'pg_agents_%';
SELECT agent.unschedule_maintenance();
SELECT count(*) FROM cron.job WHERE jobname LIKE 'pg_agents_%';
SELECT agent.unschedule_maintenance();
-- not for everyone
CREATE ROLE audit_rc_plain;
SET ROLE audit_rc_plain;
SELECT agent.schedule_maintenance();
RESET ROLE;
DROP ROLE audit_rc_plain;
