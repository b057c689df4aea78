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
CREATE TYPE agent._tick_slot AS (
  id          bigint,
  agent_id    bigint,
  schedule    text,
  timezone    text,
  prompt      text,
  due         timestamptz,
  created_by  text,
  live        boolean,
  ok          boolean
);
COMMENT ON TYPE agent._tick_slot IS
  'A due schedule trigger of agent.tick: id, agent, schedule, time zone, prompt, the slot it is due for, the user its run acts for (created_by: the creator of a run_as creator job, NULL for a shared one), whether it may fire (live: its agent is active and a creator job''s creator may still edit it) and whether the set-based path may take it (ok).';

-- What agent.tick did with a schedule: the run it made (run_id, agent_id,
-- status, error of a run the queue ended at once) or, on the per-trigger
-- path, the next slot and whether a run was made.
CREATE TYPE agent._tick_outcome AS (
  trigger_id  bigint,
  run_id      bigint,
  agent_id    bigint,
  next_run_at timestamptz,
  ran         boolean,
  status      text,
  error       text
);
COMMENT ON TYPE agent._tick_outcome IS
  'What agent.tick did with one schedule trigger: the run made (run_id, agent_id), the next slot, whether a run was made, and the status and error of a run the queue ended at once.';

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
CREATE FUNCTION agent._tick_due(p_now timestamptz) RETURNS SETOF agent._tick_slot
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws  text;
  v_all agent._tick_slot[] := '{}';
  v_one agent._tick_slot[];
  v_n   integer := 0;
  v_lost bigint[];
BEGIN
  FOR v_ws IN
    SELECT DISTINCT t.workspace_id FROM agent.triggers t
     WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= p_now
     ORDER BY 1
  LOOP
    SELECT array_agg(ROW(d.id, d.agent_id, d.schedule, d.timezone, d.prompt, d.next_run_at, d.acts_for,
                         d.live AND d.creator_ok, NULL::boolean)::agent._tick_slot ORDER BY d.next_run_at, d.id),
           array_agg(d.id) FILTER (WHERE d.live AND NOT d.creator_ok)
      INTO v_one, v_lost
      FROM (SELECT t.id, t.agent_id, t.schedule, t.timezone, t.prompt, t.next_run_at,
                   CASE WHEN t.run_as = 'shared' THEN NULL ELSE t.created_by END AS acts_for,
                   (a.status = 'active' AND a.deleted_at IS NULL) AS live,
                   (t.run_as = 'shared' OR t.created_by IS NULL OR t.created_by = a.owner_id
                    OR EXISTS (SELECT 1 FROM agent.shares s
                                WHERE s.workspace_id = t.workspace_id AND s.agent_id = t.agent_id
                                  AND s.user_id = t.created_by AND s.level IN ('edit', 'full'))
                    OR EXISTS (SELECT 1 FROM agent.shares s
                                 JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = t.created_by
                                                           AND (g.workspace_id IS NULL OR g.workspace_id = t.workspace_id)
                                WHERE s.workspace_id = t.workspace_id AND s.agent_id = t.agent_id
                                  AND s.level IN ('edit', 'full'))) AS creator_ok
              FROM agent.triggers t
              JOIN agent.agents a ON a.workspace_id = t.workspace_id AND a.id = t.agent_id
             WHERE t.workspace_id = v_ws
               AND t.enabled AND t.kind = 'schedule' AND t.next_run_at <= p_now
             ORDER BY t.next_run_at, t.id
               FOR NO KEY UPDATE OF t SKIP LOCKED) d;
    IF v_lost IS NOT NULL THEN
      UPDATE agent.triggers t
         SET last_status = 'error',
             last_error = format('run_as creator: %s may no longer edit agent %s, so the job makes no run '
                                 '(it runs again once they may, or as a shared job)', t.created_by, t.agent_id)
       WHERE t.workspace_id = v_ws AND t.id = ANY (v_lost);
    END IF;
    IF v_one IS NOT NULL THEN
      v_all := v_all || v_one;
      v_n := v_n + 1;
    END IF;
  END LOOP;
  IF v_n <= 1 THEN
    RETURN QUERY SELECT * FROM unnest(v_all);
  ELSE
    RETURN QUERY SELECT * FROM unnest(v_all) u ORDER BY u.due, u.id;
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._tick_due(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._tick_due(timestamptz) IS
  'The due enabled schedule triggers at a time, locked FOR NO KEY UPDATE SKIP LOCKED, in (next_run_at, id) order (agent.tick); created_by is the user a run acts for (run_as: the creator of a creator job while they may edit the agent, else the job is not live and its last_error says why; NULL for a shared job).';

CREATE FUNCTION agent.tick(now timestamptz DEFAULT now()) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_now    timestamptz := $1;
  r        agent._tick_slot;
  v_due    agent._tick_slot[];      -- the due rows, in (due, id) order
  v_made   agent._tick_outcome[];   -- the runs of the set-based path
  v_done   agent._tick_outcome[] := '{}';   -- the per-trigger path's results
  v_run    bigint;
  v_next   timestamptz;
  v_err    text;
  v_stat   text;
  v_rerr   text;
  v_nmade  integer := 0;
  v_batch  boolean := false;
  v_oktz   text[] := '{}';
  v_tz     text;
  v_nlive  integer;
  v_runids bigint[];
  v_seq    regclass;
BEGIN
  IF v_now IS NULL THEN
    RAISE EXCEPTION 'tick needs a time' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- The set-based path runs in one subtransaction that also takes the row
  -- locks (locks and writes under one transaction id: no MultiXact per row).
  -- Should anything in it fail, it is undone as a whole and every due
  -- schedule goes through the per-trigger path below.
  BEGIN
    SELECT array_agg(d ORDER BY d.due, d.id) INTO v_due FROM agent._tick_due(v_now) d;

    IF v_due IS NOT NULL THEN
      -- Which rows the set-based path may take: cron_next cannot fail on them
      -- (valid expression, known time zone, finite now).  Zones are few: each
      -- distinct one is tried once.
      FOR v_tz IN SELECT DISTINCT u.timezone FROM unnest(v_due) AS u WHERE u.timezone IS NOT NULL LOOP
        BEGIN
          PERFORM agent.cron_next('* * * * *', timestamptz '2000-01-01 00:00Z', v_tz);
          v_oktz := v_oktz || v_tz;
        EXCEPTION WHEN OTHERS THEN
          NULL;   -- its rows take the per-trigger path, which records the error
        END;
      END LOOP;
      SELECT array_agg(ROW(u.id, u.agent_id, u.schedule, u.timezone, u.prompt, u.due, u.created_by, u.live,
                           coalesce(isfinite(v_now) AND agent.cron_valid(u.schedule)
                                    AND u.timezone = ANY (v_oktz), false))::agent._tick_slot
                       ORDER BY u.i)
        INTO v_due
        FROM unnest(v_due) WITH ORDINALITY AS u(id, agent_id, schedule, timezone, prompt, due, created_by, live, ok, i);

      -- One queue decision at a time per agent (the lock agent._enqueue_run
      -- takes), taken in agent id order before the cap is counted.
      PERFORM agent._lock('cap', x.agent_id::text)
         FROM (SELECT DISTINCT u.agent_id FROM unnest(v_due) AS u
                WHERE u.live AND u.ok
                ORDER BY u.agent_id) x;

      -- run ids first, in due order, so that each run is its own root
      SELECT count(*)::integer INTO v_nlive FROM unnest(v_due) AS u WHERE u.live AND u.ok;
      v_seq := pg_get_serial_sequence('agent.runs', 'id')::regclass;
      SELECT coalesce(array_agg(nextval(v_seq) ORDER BY g), '{}')
        INTO v_runids FROM generate_series(1, v_nlive) AS g;

      -- One INSERT for all runs.  The hourly cap as agent._enqueue_run applies
      -- it, one run after the other: the k-th run of an agent in this tick is
      -- queued while (autonomous runs in the last hour, counted up to the cap)
      -- + k <= cap, else created budget_exceeded.
      WITH due AS (
        SELECT u.id, u.agent_id, u.prompt, u.due, u.created_by AS by,
               row_number() OVER (ORDER BY u.i) AS rn,
               row_number() OVER (PARTITION BY u.agent_id ORDER BY u.i) AS k
          FROM unnest(v_due) WITH ORDINALITY
               AS u(id, agent_id, schedule, timezone, prompt, due, created_by, live, ok, i)
         WHERE u.live AND u.ok
      ), recent AS MATERIALIZED (   -- one grouped count for all agents
        SELECT x.agent_id, count(*) AS n
          FROM agent.runs x
         WHERE x.agent_id = ANY (ARRAY(SELECT u.agent_id FROM unnest(v_due) AS u)) AND x.regime = 'autonomous'
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
      SELECT coalesce(array_agg(ROW(ins.trigger_id, ins.id, ins.agent_id, NULL, true, ins.status,
                                    ins.error)::agent._tick_outcome ORDER BY ins.id), '{}')
        INTO v_made
        FROM ins;
      IF cardinality(v_made) <> v_nlive THEN
        RAISE EXCEPTION 'tick: % runs planned, % queued', v_nlive, cardinality(v_made);
      END IF;

      -- One NOTIFY per run (delivered at commit), in run order.
      PERFORM pg_notify('agent_runs', json_build_object('run_id', x.run_id, 'agent_id', x.agent_id,
                                                        'status', x.status)::text)
         FROM unnest(v_made) WITH ORDINALITY AS x(trigger_id, run_id, agent_id, next_run_at, ran, status, error, i)
        ORDER BY x.i;

      -- Advance every taken schedule; last_run_at when a run was made, and a
      -- run the cap ended at once is the trigger's last outcome now (a queued
      -- one's is written when it finishes).
      UPDATE agent.triggers t
         SET next_run_at = agent.cron_next(t.schedule, v_now, t.timezone),
             last_run_at = CASE WHEN u.live THEN v_now ELSE t.last_run_at END,
             last_status = CASE WHEN x.status = 'budget_exceeded' THEN x.status ELSE t.last_status END,
             last_error  = CASE WHEN x.status = 'budget_exceeded' THEN x.error ELSE t.last_error END
        FROM unnest(v_due) AS u
        LEFT JOIN unnest(v_made) AS x ON x.trigger_id = u.id
       WHERE u.ok AND t.id = u.id;

      IF EXISTS (SELECT 1 FROM unnest(v_made) AS x WHERE x.status = 'queued') THEN
        PERFORM agent._request_wake();  -- sets the worker's latch at commit, once
      END IF;
      v_nmade := v_nlive;
    END IF;
    v_batch := true;
  EXCEPTION WHEN OTHERS THEN
    RAISE DEBUG 'pg_agents: tick batch undone (%), per-trigger path', SQLERRM;
    v_nmade := 0;
  END;
  IF NOT v_batch THEN   -- the same due rows, locked again, none taken yet
    SELECT array_agg(ROW(d.id, d.agent_id, d.schedule, d.timezone, d.prompt, d.due, d.created_by, d.live,
                         false)::agent._tick_slot ORDER BY d.due, d.id)
      INTO v_due FROM agent._tick_due(v_now) d;
  END IF;

  -- The per-trigger path, for the rows the batch could not take: each in its
  -- own subtransaction, so that one broken schedule never stops the others.
  FOR r IN
    SELECT u.id, u.agent_id, u.schedule, u.timezone, u.prompt, u.due, u.created_by, u.live, u.ok
      FROM unnest(v_due) WITH ORDINALITY AS u(id, agent_id, schedule, timezone, prompt, due, created_by, live, ok, i)
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
                                                       'scheduled_for', r.due,
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
      v_done := v_done || ROW(r.id, v_run, r.agent_id, v_next, v_run IS NOT NULL, v_stat, v_rerr)::agent._tick_outcome;
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

  IF cardinality(v_done) > 0 THEN
    UPDATE agent.triggers t
       SET next_run_at = u.next_run_at,
           last_run_at = CASE WHEN u.ran THEN v_now ELSE t.last_run_at END,
           last_status = CASE WHEN u.status IS NOT NULL THEN u.status ELSE t.last_status END,
           last_error  = CASE WHEN u.status IS NOT NULL THEN u.error ELSE t.last_error END
      FROM unnest(v_done) AS u
     WHERE t.id = u.trigger_id;
  END IF;

  -- The other modules' periodic work, when installed.  One tick at a time
  -- does it: a concurrent tick skips it rather than wait for the rows the
  -- other one is cleaning up (the lock is held until this transaction ends).
  IF agent._lock('tick', '', false) THEN
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
    -- run_stats' rollup (955_rollup.sql): the closed days folded
    IF to_regprocedure('agent._run_rollup_fold(integer)') IS NOT NULL THEN
      EXECUTE 'SELECT agent._run_rollup_fold()';
    END IF;
  END IF;

  RETURN v_nmade + (SELECT count(*) FROM unnest(v_done) AS x WHERE x.ran)::integer;
END
$$;
REVOKE ALL ON FUNCTION agent.tick(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent.tick(timestamptz) IS
  'Queues every due enabled schedule trigger once (missed slots fire once), advances next_run_at with cron_next, then runs agent._tick_runs and agent._events_cleanup when present; returns the runs made.';
