-- 0.3.0 -> 0.4.0: issue 31 (helper trig): the API trigger (agent.fire_trigger) and the anti-loop reports (agent.triggers.self_skipped*, agent.activity, agent.insights).

-- ---------------------------------------------------------------------------
-- The API trigger (issue 31): an application starts a run of a trigger of
-- kind api on behalf of a user.  The run is manual (it acts as by_user, who
-- needs the chat level), origin api, linked to the trigger; it goes through
-- the one queue (agent._enqueue_run), the agent's hourly run cap (counted
-- over its autonomous runs and its API-trigger runs of the last hour) and the
-- deduplication of events: the same payload fired again through the same
-- trigger within pg_agents.dedup_window queues nothing and returns the first
-- run's id.
-- ---------------------------------------------------------------------------
\ir ../../functions/agent.fire_trigger.sql
REVOKE ALL ON FUNCTION agent.fire_trigger(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.fire_trigger(bigint, text, jsonb) IS
  'Fires a trigger of kind api for by_user (who needs the chat level on the agent): queues a manual run, origin api, with the payload as its input; the agent''s hourly run cap and pg_agents.dedup_window apply as for events (the same payload again returns the first run''s id). A trigger of another workspace is 42704; another kind 42809; a disabled trigger or a suspended agent 55000.';

-- ---------------------------------------------------------------------------
-- Anti-loop reports (issue 31): an event of an agent's own write that a
-- trigger drops is counted on the trigger, and reported by an audit row
-- event.self_skipped at most once an hour (src/dispatch.c); agent.activity
-- and agent.insights show the counts.
-- ---------------------------------------------------------------------------
ALTER TABLE agent.triggers ADD COLUMN self_skipped bigint NOT NULL DEFAULT 0,
                           ADD COLUMN self_skipped_at timestamptz,
                           ADD COLUMN self_skip_reported_at timestamptz;
COMMENT ON COLUMN agent.triggers.self_skipped IS 'Events of the agent''s own writes this trigger dropped (anti-loop), in all.';
COMMENT ON COLUMN agent.triggers.self_skipped_at IS 'When it last dropped an event of the agent''s own write.';
COMMENT ON COLUMN agent.triggers.self_skip_reported_at IS 'When an audit row event.self_skipped last reported the dropped events (at most once an hour).';

-- agent.activity and agent.insights show the anti-loop counts
\ir ../../functions/agent.activity.sql

\ir ../../functions/agent.insights.sql
COMMENT ON FUNCTION agent.insights(bigint, text, timestamptz, timestamptz) IS
  'Insights of one agent over [since, until) of created_at (full level only, 42501 otherwise, unknown agents and agents of another workspace than the session''s included): one row per section and key — total, status, day and week (UTC), model, origin: runs, succeeded, failed (failed, budget_exceeded, expired), failure_rate over finished runs, own tokens — and resource: granted (agent.access now) versus actually read (read steps of the period), with runs that read it and a state granted_and_read, granted_not_read or read_not_granted; and anti_loop: per trigger that dropped events of the agent''s own writes, the count (detail.self_skipped), the last drop and the last report (not limited to the period).';
