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

CREATE FUNCTION agent.tick(now timestamptz DEFAULT now()) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_now    timestamptz := $1;
  r        record;
  v_run    bigint;
  v_next   timestamptz;
  v_err    text;
  v_made   integer := 0;
  v_batch  boolean := false;
  -- the due rows, in (next_run_at, id) order
  d_ids    bigint[];
  d_agents bigint[];
  d_scheds text[];
  d_tzs    text[];
  d_prompts text[];
  d_dues   timestamptz[];
  d_bys    text[];
  d_live   boolean[];
  d_ok     boolean[];
  v_oktz   text[] := '{}';
  v_tz     text;
  v_nlive  integer;
  v_runids bigint[];
  v_seq    regclass;
  r_ids    bigint[];
  r_agents bigint[];
  r_trigs  bigint[];
  r_stats  text[];
  r_errs   text[];
  -- rows left to the per-trigger path, and its results
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

  -- Due schedules (index triggers_due_idx), locked in one statement.  SKIP
  -- LOCKED: a trigger another tick is handling is left to it; once that tick
  -- commits, next_run_at has moved past now and the row no longer qualifies
  -- (READ COMMITTED re-checks a row it waited for), so a slot fires once.
  -- The set-based path runs in one subtransaction that also takes the row
  -- locks (locks and writes under one transaction id: no MultiXact per row).
  -- Should anything in it fail, it is undone as a whole and every due
  -- schedule goes through the per-trigger path below.
  BEGIN
    SELECT array_agg(d.id ORDER BY d.next_run_at, d.id), array_agg(d.agent_id ORDER BY d.next_run_at, d.id),
           array_agg(d.schedule ORDER BY d.next_run_at, d.id), array_agg(d.timezone ORDER BY d.next_run_at, d.id),
           array_agg(d.prompt ORDER BY d.next_run_at, d.id), array_agg(d.next_run_at ORDER BY d.next_run_at, d.id),
           array_agg(d.created_by ORDER BY d.next_run_at, d.id), array_agg(d.live ORDER BY d.next_run_at, d.id)
      INTO d_ids, d_agents, d_scheds, d_tzs, d_prompts, d_dues, d_bys, d_live
      FROM (SELECT t.id, t.agent_id, t.schedule, t.timezone, t.prompt, t.next_run_at, t.created_by,
                   (a.status = 'active' AND a.deleted_at IS NULL) AS live
              FROM agent.triggers t
              JOIN agent.agents a ON a.id = t.agent_id
             WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= v_now
             ORDER BY t.next_run_at, t.id
               FOR NO KEY UPDATE OF t SKIP LOCKED) d;

    IF d_ids IS NOT NULL THEN
      -- Which rows the set-based path may take: cron_next cannot fail on them
      -- (valid expression, known time zone, finite now).  Zones are few: each
      -- distinct one is tried once.
      FOR v_tz IN SELECT DISTINCT z FROM unnest(d_tzs) AS z WHERE z IS NOT NULL LOOP
        BEGIN
          PERFORM agent.cron_next('* * * * *', timestamptz '2000-01-01 00:00Z', v_tz);
          v_oktz := v_oktz || v_tz;
        EXCEPTION WHEN OTHERS THEN
          NULL;   -- its rows take the per-trigger path, which records the error
        END;
      END LOOP;
      SELECT array_agg(coalesce(isfinite(v_now) AND agent.cron_valid(u.sched) AND u.tz = ANY (v_oktz), false)
                       ORDER BY u.i)
        INTO d_ok
        FROM unnest(d_scheds, d_tzs) WITH ORDINALITY AS u(sched, tz, i);

      -- One queue decision at a time per agent (the lock agent._enqueue_run
      -- takes), taken in agent id order before the cap is counted.
      PERFORM pg_advisory_xact_lock(hashtext('pg_agents.cap'), hashtext(x.agent_id::text))
         FROM (SELECT DISTINCT u.agent_id
                 FROM unnest(d_agents, d_live, d_ok) AS u(agent_id, live, ok)
                WHERE u.live AND u.ok
                ORDER BY u.agent_id) x;

      -- run ids first, in due order, so that each run is its own root
      SELECT count(*)::integer INTO v_nlive FROM unnest(d_live, d_ok) AS u(live, ok) WHERE u.live AND u.ok;
      v_seq := pg_get_serial_sequence('agent.runs', 'id')::regclass;
      SELECT coalesce(array_agg(nextval(v_seq) ORDER BY g), '{}')
        INTO v_runids FROM generate_series(1, v_nlive) AS g;

      -- One INSERT for all runs.  The hourly cap as agent._enqueue_run applies
      -- it, one run after the other: the k-th run of an agent in this tick is
      -- queued while (autonomous runs in the last hour, counted up to the cap)
      -- + k <= cap, else created budget_exceeded.
      WITH due AS (
        SELECT u.id, u.agent_id, u.prompt, u.due, u.by,
               row_number() OVER (ORDER BY u.i) AS rn,
               row_number() OVER (PARTITION BY u.agent_id ORDER BY u.i) AS k
          FROM unnest(d_ids, d_agents, d_prompts, d_dues, d_bys, d_live, d_ok)
               WITH ORDINALITY AS u(id, agent_id, prompt, due, by, live, ok, i)
         WHERE u.live AND u.ok
      ), recent AS MATERIALIZED (   -- one grouped count for all agents
        SELECT x.agent_id, count(*) AS n
          FROM agent.runs x
         WHERE x.agent_id = ANY (d_agents) AND x.regime = 'autonomous'
           AND x.created_at > pg_catalog.now() - interval '1 hour'
           AND x.status <> 'budget_exceeded'
         GROUP BY x.agent_id
      ), caps AS MATERIALIZED (
        SELECT a.id AS agent_id, a.workspace_id, c.cap, least(coalesce(rc.n, 0), c.cap) AS recent
          FROM agent.agents a
          CROSS JOIN LATERAL (SELECT coalesce(a.hourly_run_cap,
                                              current_setting('pg_agents.hourly_run_cap')::integer) AS cap) c
          LEFT JOIN recent rc ON rc.agent_id = a.id
         WHERE a.id IN (SELECT due.agent_id FROM due)
      ), plan AS (
        SELECT n.run_id, c.workspace_id, d.agent_id, d.id AS trigger_id, d.prompt, d.due, d.by,
               (c.recent + d.k <= c.cap) AS ok, c.cap
          FROM due d
          JOIN caps c ON c.agent_id = d.agent_id
          JOIN unnest(v_runids) WITH ORDINALITY AS n(run_id, rn) ON n.rn = d.rn
      ), ins AS (
      INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, parent_run_id, root_run_id, depth, regime,
                              origin, requested_by, status, priority, input, error, token_budget, finished_at)
      SELECT p.run_id, p.workspace_id, p.agent_id, p.trigger_id, NULL, p.run_id, 0, 'autonomous',
             'schedule', p.by, CASE WHEN p.ok THEN 'queued' ELSE 'budget_exceeded' END, 0,
             jsonb_build_object('prompt', p.prompt, 'scheduled_for', p.due, 'trigger_id', p.trigger_id),
             CASE WHEN NOT p.ok THEN format('hourly run cap of %s reached', p.cap) END, NULL,
             CASE WHEN NOT p.ok THEN pg_catalog.now() END
        FROM plan p
       ORDER BY p.run_id
      RETURNING id, agent_id, trigger_id, status, error)
      SELECT coalesce(array_agg(ins.id ORDER BY ins.id), '{}'), array_agg(ins.agent_id ORDER BY ins.id),
             array_agg(ins.trigger_id ORDER BY ins.id), array_agg(ins.status ORDER BY ins.id),
             array_agg(ins.error ORDER BY ins.id)
        INTO r_ids, r_agents, r_trigs, r_stats, r_errs
        FROM ins;
      IF cardinality(r_ids) <> v_nlive THEN
        RAISE EXCEPTION 'tick: % runs planned, % queued', v_nlive, cardinality(r_ids);
      END IF;

      -- One NOTIFY per run (delivered at commit), in run order.
      PERFORM pg_notify('agent_runs', json_build_object('run_id', x.id, 'agent_id', x.agent_id,
                                                        'status', x.status)::text)
         FROM unnest(r_ids, r_agents, r_stats) WITH ORDINALITY AS x(id, agent_id, status, i)
        ORDER BY x.i;

      -- Advance every taken schedule; last_run_at when a run was made, and a
      -- run the cap ended at once is the trigger's last outcome now (a queued
      -- one's is written when it finishes).
      UPDATE agent.triggers t
         SET next_run_at = agent.cron_next(t.schedule, v_now, t.timezone),
             last_run_at = CASE WHEN u.live THEN v_now ELSE t.last_run_at END,
             last_status = CASE WHEN x.status = 'budget_exceeded' THEN x.status ELSE t.last_status END,
             last_error  = CASE WHEN x.status = 'budget_exceeded' THEN x.error ELSE t.last_error END
        FROM unnest(d_ids, d_live, d_ok) AS u(id, live, ok)
        LEFT JOIN unnest(r_trigs, r_stats, r_errs) AS x(trigger_id, status, error) ON x.trigger_id = u.id
       WHERE u.ok AND t.id = u.id;

      IF 'queued' = ANY (r_stats) THEN
        PERFORM agent._request_wake();  -- sets the worker's latch at commit, once
      END IF;
      v_made := v_nlive;
    END IF;
    v_batch := true;
  EXCEPTION WHEN OTHERS THEN
    RAISE DEBUG 'pg_agents: tick batch undone (%), per-trigger path', SQLERRM;
    v_made := 0;
  END;
  IF NOT v_batch THEN
    SELECT array_agg(d.id ORDER BY d.next_run_at, d.id), array_agg(d.agent_id ORDER BY d.next_run_at, d.id),
           array_agg(d.schedule ORDER BY d.next_run_at, d.id), array_agg(d.timezone ORDER BY d.next_run_at, d.id),
           array_agg(d.prompt ORDER BY d.next_run_at, d.id), array_agg(d.next_run_at ORDER BY d.next_run_at, d.id),
           array_agg(d.created_by ORDER BY d.next_run_at, d.id), array_agg(d.live ORDER BY d.next_run_at, d.id)
      INTO d_ids, d_agents, d_scheds, d_tzs, d_prompts, d_dues, d_bys, d_live
      FROM (SELECT t.id, t.agent_id, t.schedule, t.timezone, t.prompt, t.next_run_at, t.created_by,
                   (a.status = 'active' AND a.deleted_at IS NULL) AS live
              FROM agent.triggers t
              JOIN agent.agents a ON a.id = t.agent_id
             WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= v_now
             ORDER BY t.next_run_at, t.id
               FOR NO KEY UPDATE OF t SKIP LOCKED) d;
    d_ok := array_fill(false, ARRAY[coalesce(cardinality(d_ids), 0)]);
  END IF;

  -- The per-trigger path, for the rows the batch could not take: each in its
  -- own subtransaction, so that one broken schedule never stops the others.
  FOR r IN
    SELECT u.id, u.agent_id, u.schedule, u.timezone, u.prompt, u.next_run_at, u.created_by, u.live
      FROM unnest(d_ids, d_agents, d_scheds, d_tzs, d_prompts, d_dues, d_bys, d_live, d_ok)
           WITH ORDINALITY AS u(id, agent_id, schedule, timezone, prompt, next_run_at, created_by, live, ok, i)
     WHERE NOT u.ok
     ORDER BY u.i
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

  RETURN v_made + (SELECT count(*) FROM unnest(v_ran) AS x(ran) WHERE ran)::integer;
END
$$;
REVOKE ALL ON FUNCTION agent.tick(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent.tick(timestamptz) IS
  'Queues every due enabled schedule trigger once (missed slots fire once), advances next_run_at with cron_next, then runs agent._tick_runs and agent._events_cleanup when present; returns the runs made.';
