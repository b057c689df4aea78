-- Issue 31, the web switch and run_as (helper web): web_fetch needs no SQL
-- (src/tools_web.c reads agents.web_access); run_as of schedule triggers is
-- honoured by agent._tick_due (sql/src/450_cron.sql).

-- The due schedules at p_now (index triggers_due_idx), locked in one
-- statement, in (due, id) order.  SKIP LOCKED: a trigger another tick is
-- handling is left to it; once that tick commits, next_run_at has moved past
-- now and the row no longer qualifies (READ COMMITTED re-checks a row it
-- waited for), so a slot fires once.
-- The rows are locked one workspace at a time (a locking statement names its
-- workspace, so that Citus routes it to one shard), then returned in (due,
-- id) order across workspaces.
-- run_as (issue 31): the slot's created_by is the user its run acts for
-- (the run's requested_by).  A `creator` job acts for its creator, and only
-- while the creator may edit the agent (its owner, or an edit or full share,
-- directly or through a group, in the trigger's workspace): a job whose
-- creator lost that level makes no run (the slot is not live), its schedule
-- advances, and last_status / last_error say why.  A `shared` job acts for
-- the workspace, not a person (requested_by NULL), whoever created it.  A
-- trigger without a creator (an application's) acts as before.
\ir ../../functions/agent._tick_due.sql
-- Issue 31, the web switch and run_as (helper web): web_fetch needs no SQL
-- (src/tools_web.c reads agents.web_access); run_as of schedule triggers is
-- honoured by agent._tick_due (sql/src/450_cron.sql).

-- The due schedules at p_now (index triggers_due_idx), locked in one
-- statement, in (due, id) order.  SKIP LOCKED: a trigger another tick is
-- handling is left to it; once that tick commits, next_run_at has moved past
-- now and the row no longer qualifies (READ COMMITTED re-checks a row it
-- waited for), so a slot fires once.
-- The rows are locked one workspace at a time (a locking statement names its
-- workspace, so that Citus routes it to one shard), then returned in (due,
-- id) order across workspaces.
-- run_as (issue 31): the slot's created_by is the user its run acts for
-- (the run's requested_by).  A `creator` job acts for its creator, and only
-- while the creator may edit the agent (its owner, or an edit or full share,
-- directly or through a group, in the trigger's workspace): a job whose
-- creator lost that level makes no run (the slot is not live), its schedule
-- advances, and last_status / last_error say why.  A `shared` job acts for
-- the workspace, not a person (requested_by NULL), whoever created it.  A
-- trigger without a creator (an application's) acts as before.
\ir ../../functions/agent._tick_due.sql

COMMENT ON TYPE agent._tick_slot IS
  'A due schedule trigger of agent.tick: id, agent, schedule, time zone, prompt, the slot it is due for, the user its run acts for (created_by: the creator of a run_as creator job, NULL for a shared one), whether it may fire (live: its agent is active and a creator job''s creator may still edit it) and whether the set-based path may take it (ok).';
