-- agent.tick (issue 21): the due schedules in one query (agent._tick_due),
-- one row type per due schedule (agent._tick_slot) and per outcome
-- (agent._tick_outcome) instead of parallel arrays; the same behaviour.
-- A due schedule of agent.tick, locked: the trigger, its agent's liveness
-- and (ok) whether the set-based path may take it.
\ir ../../types/agent._tick_slot.sql
COMMENT ON TYPE agent._tick_slot IS
  'A due schedule trigger of agent.tick: id, agent, schedule, time zone, prompt, the slot it is due for, its creator, whether its agent is active (live) and whether the set-based path may take it (ok).';

-- What agent.tick did with a schedule: the run it made (run_id, agent_id,
-- status, error of a run the queue ended at once) or, on the per-trigger
-- path, the next slot and whether a run was made.
\ir ../../types/agent._tick_outcome.sql

-- The due schedules at p_now (index triggers_due_idx), locked in one
-- statement, in (due, id) order.  SKIP LOCKED: a trigger another tick is
-- handling is left to it; once that tick commits, next_run_at has moved past
-- now and the row no longer qualifies (READ COMMITTED re-checks a row it
-- waited for), so a slot fires once.
CREATE FUNCTION agent._tick_due(p_now timestamptz) RETURNS SETOF agent._tick_slot
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT t.id, t.agent_id, t.schedule, t.timezone, t.prompt, t.next_run_at, t.created_by,
         (a.status = 'active' AND a.deleted_at IS NULL), NULL::boolean
    FROM agent.triggers t
    JOIN agent.agents a ON a.id = t.agent_id
   WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= p_now
   ORDER BY t.next_run_at, t.id
     FOR NO KEY UPDATE OF t SKIP LOCKED
$$;
REVOKE ALL ON FUNCTION agent._tick_due(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._tick_due(timestamptz) IS
  'The due enabled schedule triggers at a time, locked FOR NO KEY UPDATE SKIP LOCKED, in (next_run_at, id) order (agent.tick).';

CREATE OR REPLACE FUNCTION agent.tick(now timestamptz DEFAULT now()) RETURNS integer
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
      PERFORM pg_advisory_xact_lock(hashtext('pg_agents.cap'), hashtext(x.agent_id::text))
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

  RETURN v_nmade + (SELECT count(*) FROM unnest(v_done) AS x WHERE x.ran)::integer;
END
$$;
REVOKE ALL ON FUNCTION agent.tick(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent.tick(timestamptz) IS
  'Queues every due enabled schedule trigger once (missed slots fire once), advances next_run_at with cron_next, then runs agent._tick_runs and agent._events_cleanup when present; returns the runs made.';
