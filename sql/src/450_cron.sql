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
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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

CREATE TRIGGER triggers_schedule_next BEFORE INSERT OR UPDATE ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._schedule_before_save();
COMMENT ON TRIGGER triggers_schedule_next ON agent.triggers IS
  'Computes next_run_at of schedule triggers when saved (agent._schedule_before_save).';

-- ---------------------------------------------------------------------------
-- The tick
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.tick(now timestamptz DEFAULT now()) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  v_now   timestamptz := $1;
  r       record;
  v_run   bigint;
  v_next  timestamptz;
  v_err   text;
  v_ids   bigint[] := '{}';
  v_nexts timestamptz[] := '{}';
  v_ran   boolean[] := '{}';
  v_stats text[] := '{}';
  v_errs  text[] := '{}';
  v_stat  text;
  v_rerr  text;
BEGIN
  IF v_now IS NULL THEN
    RAISE EXCEPTION 'tick needs a time' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- Due schedules (index triggers_due_idx).  SKIP LOCKED: a trigger another
  -- tick is handling is left to it; once that tick commits, next_run_at has
  -- moved past now and the row no longer qualifies (READ COMMITTED re-checks
  -- a row it waited for), so a slot fires once.
  FOR r IN
    SELECT t.id, t.agent_id, t.schedule, t.timezone, t.prompt, t.next_run_at, t.created_by,
           (a.status = 'active' AND a.deleted_at IS NULL) AS live
      FROM agent.triggers t
      JOIN agent.agents a ON a.id = t.agent_id
     WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= v_now
     ORDER BY t.next_run_at, t.id
       FOR UPDATE OF t SKIP LOCKED
  LOOP
    BEGIN
      -- one run for however many slots were missed; next: the first slot after now
      v_next := agent.cron_next(r.schedule, v_now, r.timezone);
      v_run := NULL;
      v_stat := NULL;
      v_rerr := NULL;
      IF r.live THEN   -- suspended or deleted agents: no run, the schedule still advances
        v_run := agent._enqueue_run(r.agent_id, 'autonomous', 'schedule',
                                    jsonb_build_object('prompt', r.prompt,
                                                       'scheduled_for', r.next_run_at,
                                                       'trigger_id', r.id),
                                    r.id, r.created_by, NULL, NULL);
        -- a run the queue ended at once (hourly cap: budget_exceeded) is the
        -- trigger's last outcome now; a queued one's is written when it finishes
        SELECT x.status, x.error INTO v_stat, v_rerr FROM agent.runs x WHERE x.id = v_run;
        IF v_stat = 'queued' THEN
          v_stat := NULL;
          v_rerr := NULL;
        END IF;
      END IF;
      -- recorded once the block can no longer roll back
      v_ids := v_ids || r.id;
      v_nexts := v_nexts || v_next;
      v_ran := v_ran || (v_run IS NOT NULL);
      v_stats := v_stats || v_stat;
      v_errs := v_errs || v_rerr;
    EXCEPTION WHEN OTHERS THEN
      -- one broken schedule never stops the others: record why, and move it
      -- to its next slot (or stop it when its schedule no longer computes)
      v_err := SQLERRM;
      BEGIN
        v_next := agent.cron_next(r.schedule, v_now, r.timezone);
      EXCEPTION WHEN OTHERS THEN
        v_next := NULL;
      END;
      UPDATE agent.triggers
         SET next_run_at = v_next, last_status = 'error',
             last_error = format('schedule could not fire: %s', v_err)
       WHERE id = r.id;
      RAISE WARNING 'pg_agents: schedule trigger % could not fire: %', r.id, v_err;
    END;
  END LOOP;

  IF cardinality(v_ids) > 0 THEN
    UPDATE agent.triggers t
       SET next_run_at = u.next_at,
           last_run_at = CASE WHEN u.ran THEN v_now ELSE t.last_run_at END,
           last_status = CASE WHEN u.st IS NOT NULL THEN u.st ELSE t.last_status END,
           last_error  = CASE WHEN u.st IS NOT NULL THEN u.err ELSE t.last_error END
      FROM unnest(v_ids, v_nexts, v_ran, v_stats, v_errs) AS u(id, next_at, ran, st, err)
     WHERE t.id = u.id;
  END IF;

  -- The other modules' periodic work, when installed.  One tick at a time
  -- does it: a concurrent tick skips it rather than wait for the rows the
  -- other one is cleaning up (the lock is held until this transaction ends).
  IF pg_try_advisory_xact_lock(hashtext('pg_agents.tick'), 0) THEN
    IF to_regprocedure('agent._tick_runs(timestamptz)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._tick_runs($1)' USING v_now;
    END IF;
    IF to_regprocedure('agent._events_cleanup(timestamptz)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._events_cleanup($1)' USING v_now;
    END IF;
    -- teams (900_teams.sql): unanswered ask_parent questions expire
    IF to_regprocedure('agent._tick_teams(timestamptz)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._tick_teams($1)' USING v_now;
    END IF;
  END IF;

  RETURN (SELECT count(*) FROM unnest(v_ran) AS x(ran) WHERE ran)::integer;
END
$$;
REVOKE ALL ON FUNCTION agent.tick(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent.tick(timestamptz) IS
  'Queues every due enabled schedule trigger once (missed slots fire once), advances next_run_at with cron_next, then runs agent._tick_runs and agent._events_cleanup when present; returns the runs made.';
