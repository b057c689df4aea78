-- pg_agents: cron schedules and the tick (docs/cron.md).
--
--   agent.cron_valid / cron_describe / cron_next   (C, src/cron.c)
--   agent.cron_upcoming                             the next n firings
--   agent._schedule_before_save                     next_run_at on save
--   agent.tick                                      queues due schedules, then
--                                                   the other modules' periodic work

CREATE FUNCTION agent.cron_valid(expr text) RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_agents_cron_valid'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION agent.cron_valid(text) IS
  'Whether a 5-field cron expression (or @hourly/@daily/@weekly/@monthly/@yearly) is valid; false for bad input, never an error.';

CREATE FUNCTION agent.cron_describe(expr text) RETURNS text
AS 'MODULE_PATHNAME', 'pg_agents_cron_describe'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION agent.cron_describe(text) IS
  'A cron expression in plain English, e.g. "at 09:00 on Monday through Friday"; raises 22023 for a bad expression.';

CREATE FUNCTION agent.cron_next(expr text, after timestamptz DEFAULT now(), tz text DEFAULT 'UTC')
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'pg_agents_cron_next'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION agent.cron_next(text, timestamptz, text) IS
  'First firing of a cron expression strictly after "after", in time zone tz (DST-correct); NULL when nothing matches within five years.';

CREATE FUNCTION agent.cron_upcoming(expr text, n integer DEFAULT 5,
                                    after timestamptz DEFAULT now(), tz text DEFAULT 'UTC')
RETURNS SETOF timestamptz
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  WITH RECURSIVE s(i, at) AS (
    SELECT 1, agent.cron_next(expr, after, tz)
    UNION ALL
    SELECT i + 1, agent.cron_next(expr, at, tz) FROM s WHERE i < n AND at IS NOT NULL
  )
  SELECT at FROM s WHERE at IS NOT NULL AND i <= n ORDER BY i
$$;
COMMENT ON FUNCTION agent.cron_upcoming(text, integer, timestamptz, text) IS
  'The next n firings of a cron expression after "after" in time zone tz (repeated cron_next).';

-- ---------------------------------------------------------------------------
-- next_run_at on save
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._schedule_before_save() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NEW.kind <> 'schedule' OR NEW.schedule IS NULL THEN
    RETURN NEW;   -- the table's CHECK refuses a schedule trigger without a schedule
  END IF;
  IF TG_OP = 'INSERT' OR OLD.kind IS DISTINCT FROM 'schedule'
     OR NEW.schedule IS DISTINCT FROM OLD.schedule
     OR NEW.timezone IS DISTINCT FROM OLD.timezone
     OR NEW.enabled IS DISTINCT FROM OLD.enabled THEN
    -- validates both (22023 naming the bad field or the unknown zone)
    NEW.next_run_at := agent.cron_next(NEW.schedule, now(), NEW.timezone);
    IF NEW.next_run_at IS NULL THEN
      RAISE EXCEPTION 'schedule "%" never fires', NEW.schedule
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'No time in the next five years matches it.',
              HINT = 'Check the day-of-month and month fields, e.g. "0 0 31 2 *" asks for February 31.';
    END IF;
    IF NOT NEW.enabled THEN
      NEW.next_run_at := NULL;   -- re-enabling computes it again from now
    END IF;
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION agent._schedule_before_save() IS
  'Trigger: validates the schedule and time zone of a schedule trigger and computes next_run_at from now() when they or enabled change.';

-- UPDATE OF: an UPDATE that sets none of these columns (the tick's own
-- writes: next_run_at, last_*) cannot change them, so the trigger stays out.
CREATE TRIGGER triggers_schedule_next BEFORE INSERT OR UPDATE OF kind, schedule, timezone, enabled
  ON agent.triggers FOR EACH ROW EXECUTE FUNCTION agent._schedule_before_save();
COMMENT ON TRIGGER triggers_schedule_next ON agent.triggers IS
  'Computes next_run_at of schedule triggers when saved (agent._schedule_before_save).';

-- ---------------------------------------------------------------------------
-- The tick
-- ---------------------------------------------------------------------------

-- A due schedule of agent.tick, locked: the trigger, its agent's liveness
-- and (ok) whether the set-based path may take it.
\ir ../types/agent._tick_slot.sql
COMMENT ON TYPE agent._tick_slot IS
  'A due schedule trigger of agent.tick: id, agent, schedule, time zone, prompt, the slot it is due for, the user its run acts for (created_by: the creator of a run_as creator job, NULL for a shared one), whether it may fire (live: its agent is active and a creator job''s creator may still edit it) and whether the set-based path may take it (ok).';

-- What agent.tick did with a schedule: the run it made (run_id, agent_id,
-- status, error of a run the queue ended at once) or, on the per-trigger
-- path, the next slot and whether a run was made.
\ir ../types/agent._tick_outcome.sql

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
\ir ../functions/agent._tick_due.sql

\ir ../functions/agent.tick.sql
