-- runas (issue 31, item 5): run_as applies to schedule triggers only (a row
-- trigger refuses run_as shared on another kind, a draft refuses the key
-- there; agent.set_trigger, in 984_actors.sql, refuses the key), and users'
-- own secrets (agent.secrets.user_id, in 986_prov.sql) used by the runs
-- that act for them (src/providers.c).

-- run_as says whom a schedule's runs act for (450_cron.sql); a trigger of
-- another kind acts for the event's user (event, mention) or the caller
-- (api), so run_as 'shared' there would be stored and ignored: refused on
-- every write (issue 31).  Its stored 'creator' is the column's default,
-- which no kind but schedule reads.
\ir ../../functions/agent._triggers_check_run_as.sql
CREATE TRIGGER triggers_check_run_as BEFORE INSERT OR UPDATE OF kind, run_as ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_check_run_as();
COMMENT ON COLUMN agent.triggers.run_as IS 'Schedule triggers only: creator (a personal job: its runs act for created_by, with their own provider secrets, while they may edit the agent) or shared (its runs act for the workspace, with its secrets); other kinds keep the default creator, which nothing reads (run_as shared is refused there).';
COMMENT ON TRIGGER triggers_check_run_as ON agent.triggers IS
  'run_as other than creator only on schedule triggers.';

\ir ../../functions/agent._draft_trigger_problem.sql

