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
CREATE FUNCTION agent.fire_trigger(trigger_id bigint, by_user text, payload jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  t        agent.triggers%ROWTYPE;
  a        agent.agents%ROWTYPE;
  v_ws     text := agent._session_workspace();
  v_cap    integer;
  v_recent bigint;
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '0')::interval;
  v_fp     text;
  v_now    timestamptz := now();
  v_cutoff timestamptz;
  v_new    integer;
  v_id     bigint;
BEGIN
  IF trigger_id IS NULL THEN
    RAISE EXCEPTION 'trigger_id must not be null' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'an API trigger run needs the requesting user'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The run is manual: it acts as the user who fired the trigger (by_user).';
  END IF;
  IF payload IS NOT NULL AND jsonb_typeof(payload) <> 'object' THEN
    RAISE EXCEPTION 'trigger payload must be a json object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the trigger's own
    SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = trigger_id;
  END IF;
  -- a trigger of another workspace does not exist for this session
  SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = trigger_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'trigger % does not exist', trigger_id USING ERRCODE = 'undefined_object';
  END IF;
  IF t.kind <> 'api' THEN
    RAISE EXCEPTION 'trigger % is of kind %, not api', trigger_id, t.kind
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only a trigger of kind api is fired through agent.fire_trigger; events, schedules and mentions fire the others.';
  END IF;
  IF NOT t.enabled THEN
    RAISE EXCEPTION 'trigger % is disabled', trigger_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Enable it in the agent''s settings (agent.save_settings).';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = t.workspace_id AND x.id = t.agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', t.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF a.status = 'suspended' THEN
    RAISE EXCEPTION 'agent % is suspended', a.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'A suspended agent is started by no trigger; chat still works.';
  END IF;
  IF NOT coalesce(agent.user_can(by_user, a.id, 'chat'), false) THEN
    RAISE EXCEPTION 'user "%" may not run agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Firing an API trigger requires the interact level or higher on the agent.';
  END IF;
  -- deduplication, as for events: the first transaction to insert the
  -- fingerprint wins, a concurrent one waits for it
  IF v_window > interval '0' THEN
    -- the time and the cutoff as values: Citus refuses now() in the conflict
    -- clause of a distributed table
    v_fp := 'api:' || md5(coalesce(payload, '{}')::text);
    v_cutoff := v_now - v_window;
    INSERT INTO agent.event_dedup AS d (workspace_id, trigger_id, fingerprint, seen_at)
    VALUES (t.workspace_id, t.id, v_fp, v_now)
    ON CONFLICT ON CONSTRAINT event_dedup_pkey DO UPDATE SET seen_at = excluded.seen_at
      WHERE d.seen_at <= v_cutoff
    RETURNING 1 INTO v_new;
    IF v_new IS NULL THEN
      SELECT r.id INTO v_id FROM agent.runs r
       WHERE r.workspace_id = t.workspace_id AND r.trigger_id = t.id AND r.origin = 'api'
         AND r.input -> 'payload' = coalesce(payload, '{}')
       ORDER BY r.id DESC LIMIT 1;
      IF v_id IS NOT NULL THEN
        RETURN v_id;
      END IF;
    END IF;
  END IF;
  -- the hourly cap: one decision at a time per agent (the lock of
  -- agent._enqueue_run), counting stops at the cap
  v_cap := coalesce(a.hourly_run_cap, current_setting('pg_agents.hourly_run_cap')::integer);
  PERFORM pg_advisory_xact_lock(hashtext('pg_agents.cap'), hashtext(a.id::text));
  SELECT count(*) INTO v_recent FROM (
    SELECT 1 FROM agent.runs r
     WHERE r.workspace_id = a.workspace_id AND r.agent_id = a.id
       AND (r.regime = 'autonomous' OR (r.origin = 'api' AND r.trigger_id IS NOT NULL))
       AND r.created_at > now() - interval '1 hour' AND r.status <> 'budget_exceeded'
     LIMIT v_cap) s;
  IF v_recent >= v_cap THEN
    RAISE EXCEPTION 'hourly run cap of % reached for agent %', v_cap, a.id
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = 'Runs of API triggers count with the agent''s autonomous runs against its hourly run cap.';
  END IF;
  v_id := agent._enqueue_run(a.id, 'manual', 'api',
            jsonb_build_object('event', 'api.fired', 'resource_type', 'trigger', 'resource_id', t.id::text,
                               'actor', 'user:' || by_user, 'prompt', t.prompt,
                               'payload', coalesce(payload, '{}')),
            t.id, by_user);
  UPDATE agent.triggers x SET last_run_at = now() WHERE x.workspace_id = t.workspace_id AND x.id = t.id;
  RETURN v_id;
END
$$;
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
CREATE OR REPLACE FUNCTION agent.activity(agent_id bigint, user_id text, status text DEFAULT NULL,
                               trigger_id bigint DEFAULT NULL, since timestamptz DEFAULT NULL,
                               until timestamptz DEFAULT NULL, lim int DEFAULT 50)
RETURNS TABLE(run_id bigint, created_at timestamptz, trigger_label text, origin text, regime text,
              requested_by text, run_status text, started_at timestamptz, finished_at timestamptz,
              duration interval, model text, tokens_in bigint, tokens_out bigint, tokens_total bigint,
              skills text[], tools text[], resources_read text[], resources_written text[],
              denied_steps integer, error text, rerun_of bigint, parent_run_id bigint, run_trigger_id bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_scope text;
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_status text := status;
  v_trig  bigint := trigger_id;
  v_ws    text;
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_status IS NOT NULL AND v_status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children', 'succeeded', 'failed',
                                               'budget_exceeded', 'cancelled', 'expired') THEN
    RAISE EXCEPTION 'invalid run status "%"', v_status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A run status is queued, running, waiting_approval, waiting_input, waiting_children, succeeded, failed, budget_exceeded, cancelled or expired.';
  END IF;
  IF lim IS NULL OR lim < 1 OR lim > 1000 THEN
    RAISE EXCEPTION 'lim must be between 1 and 1000' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF since IS NOT NULL AND until IS NOT NULL AND since > until THEN
    RAISE EXCEPTION 'since must not be after until' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- full: every run; edit, interact: their own manual runs; none (or an
  -- unknown or deleted agent, or one of another workspace): nothing,
  -- indistinguishably
  -- the session's workspace (a session bound to none: the agent's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent) THEN
    RETURN;
  END IF;
  v_scope := agent.activity_scope(v_user, v_agent);
  IF v_scope IS NULL THEN
    RETURN;
  END IF;
  -- the trigger label as agent._trigger_label writes it, from a colocated
  -- join: a function that queries, inside this query routed to the
  -- workspace's shard, would run on the shard's node under Citus
  RETURN QUERY
  SELECT * FROM (
  SELECT r.id, r.created_at,
         CASE r.origin
           WHEN 'schedule' THEN 'schedule: ' || coalesce(
                  agent.cron_describe(tg.schedule)
                  || CASE WHEN tg.timezone <> 'UTC' THEN ' (' || tg.timezone || ')' ELSE '' END,
                  '(trigger deleted)')
           WHEN 'event' THEN 'event: ' || coalesce(r.input ->> 'event', tg.event_name, '?')
                             || ' on ' || coalesce(r.input ->> 'resource_id',
                                                   'any ' || coalesce(r.input ->> 'resource_type', 'resource'))
           ELSE agent._trigger_label(r.origin, r.input, NULL, r.parent_run_id)
         END,
         r.origin, r.regime, r.requested_by, r.status, r.started_at, r.finished_at,
         r.finished_at - r.started_at, r.model, r.tokens_in, r.tokens_out, r.tokens_total,
         st.skills, st.tools, st.reads, st.writes, st.denied,
         coalesce(r.error, st.last_error),
         CASE WHEN (r.input ->> 'rerun_of') ~ '^[0-9]{1,18}$' THEN (r.input ->> 'rerun_of')::bigint END,
         r.parent_run_id, r.trigger_id
    FROM (SELECT x.* FROM agent.runs x
           WHERE x.workspace_id = v_ws AND x.agent_id = v_agent
             AND (v_scope = 'all' OR (x.regime = 'manual' AND x.requested_by = v_user))
             AND (v_status IS NULL OR x.status = v_status)
             AND (v_trig IS NULL OR x.trigger_id = v_trig)
             AND (since IS NULL OR x.created_at >= since)
             AND (until IS NULL OR x.created_at < until)
           ORDER BY x.created_at DESC, x.id DESC
           LIMIT lim) r
    LEFT JOIN LATERAL (
      SELECT coalesce(array_agg(DISTINCT coalesce(s.output ->> 'resource_id', s.input ->> 'resource_id'))
                        FILTER (WHERE s.kind = 'read' AND coalesce(s.output ->> 'resource_type', s.input ->> 'resource_type') = 'skill'),
                      '{}') AS skills,
             coalesce(array_agg(DISTINCT s.name) FILTER (WHERE s.kind IN ('tool', 'read', 'write', 'delegate')
                                                         AND s.name IS NOT NULL), '{}') AS tools,
             coalesce(array_agg(DISTINCT agent._step_resource(s.input, s.output))
                        FILTER (WHERE s.kind = 'read' AND agent._step_resource(s.input, s.output) IS NOT NULL), '{}') AS reads,
             coalesce(array_agg(DISTINCT agent._step_resource(s.input, s.output))
                        FILTER (WHERE s.kind = 'write' AND agent._step_resource(s.input, s.output) IS NOT NULL), '{}') AS writes,
             (count(*) FILTER (WHERE s.kind = 'denied'))::integer AS denied,
             (array_agg(coalesce(s.output ->> 'error', s.output::text) ORDER BY s.seq DESC)
                FILTER (WHERE s.kind = 'error' AND coalesce(s.status, 'error') <> 'retry'))[1] AS last_error
        -- v_ws, not r.workspace_id: a constant Citus routes the lateral join by
        FROM agent.run_steps s WHERE s.workspace_id = v_ws AND s.run_id = r.id
    ) st ON true
    LEFT JOIN agent.triggers tg ON tg.workspace_id = v_ws AND tg.id = r.trigger_id
                               AND r.origin IN ('schedule', 'event')
  UNION ALL
  -- anti-loop reports: a trigger that dropped events of the agent's own
  -- writes is one row (no run), at its last drop
  SELECT NULL::bigint, sk.self_skipped_at,
         format('anti-loop: trigger %s dropped %s event(s) of the agent''s own writes', sk.id, sk.self_skipped),
         'event'::text, 'autonomous'::text, NULL::text, 'self_skipped'::text, NULL::timestamptz, NULL::timestamptz,
         NULL::interval, NULL::text, NULL::bigint, NULL::bigint, NULL::bigint,
         '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], 0, NULL::text, NULL::bigint, NULL::bigint, sk.id
    FROM agent.triggers sk
   WHERE sk.workspace_id = v_ws AND sk.agent_id = v_agent AND sk.self_skipped > 0
     AND v_scope = 'all' AND v_status IS NULL
     AND (v_trig IS NULL OR sk.id = v_trig)
     AND (since IS NULL OR sk.self_skipped_at >= since)
     AND (until IS NULL OR sk.self_skipped_at < until)
  ) u
   ORDER BY 2 DESC, 1 DESC NULLS FIRST
   LIMIT lim;
END
$$;
COMMENT ON FUNCTION agent.activity(bigint, text, text, bigint, timestamptz, timestamptz, int) IS
  'The agent''s runs, newest first, as the user may see them (full: all; edit, interact: their own manual runs; no access, unknown agent or an agent of another workspace than the session''s: nothing): trigger label, status, duration, model, tokens, skills, tools and resources used (from run_steps), error in clear, re-run and delegation links. Filters: status, trigger, period [since, until) on created_at, lim (1-1000). A trigger that dropped events of the agent''s own writes (anti-loop) adds one row without a run (run_id NULL, run_status self_skipped, the count in trigger_label, at its last drop), for the full level and no status filter.';

CREATE OR REPLACE FUNCTION agent.insights(agent_id bigint, user_id text, since timestamptz DEFAULT NULL,
                               until timestamptz DEFAULT NULL)
RETURNS TABLE(section text, key text, runs bigint, succeeded bigint, failed bigint,
              failure_rate numeric, tokens bigint, detail jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_agent bigint := agent_id;
  v_user  text := user_id;
  v_level text;
  v_ws    text;
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF since IS NOT NULL AND until IS NOT NULL AND since > until THEN
    RAISE EXCEPTION 'since must not be after until' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- an agent of another workspace is an unknown agent
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  -- two statements: a function that queries inside a routed query would be
  -- run on the shard's node (Citus: no nested distributed query)
  IF EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent) THEN
    v_level := agent._user_level(v_user, v_agent);
  END IF;
  IF v_level IS DISTINCT FROM 'full' THEN
    -- the same answer for no access and for an unknown agent
    RAISE EXCEPTION 'user "%" cannot view the insights of agent %', v_user, v_agent
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = CASE WHEN v_level IS NULL THEN format('User "%s" has no access to this agent.', v_user)
                          ELSE format('User "%s" holds the %s level.', v_user, v_level) END,
            HINT = 'Insights need the full level.';
  END IF;
  RETURN QUERY
  WITH r AS (
    SELECT x.*, agent._run_failed(x.status) AS is_failed, NOT agent._run_is_active(x.status) AS is_done
      FROM agent.runs x
     WHERE x.workspace_id = v_ws AND x.agent_id = v_agent
       AND (since IS NULL OR x.created_at >= since)
       AND (until IS NULL OR x.created_at < until)
  ), agg AS (
    -- one pass over the runs for every section
    SELECT CASE WHEN GROUPING(k.st) = 0 THEN 2 WHEN GROUPING(k.dy) = 0 THEN 3 WHEN GROUPING(k.wk) = 0 THEN 4
                WHEN GROUPING(k.md) = 0 THEN 5 WHEN GROUPING(k.og) = 0 THEN 6 ELSE 1 END AS ord,
           CASE WHEN GROUPING(k.st) = 0 THEN 'status' WHEN GROUPING(k.dy) = 0 THEN 'day' WHEN GROUPING(k.wk) = 0 THEN 'week'
                WHEN GROUPING(k.md) = 0 THEN 'model' WHEN GROUPING(k.og) = 0 THEN 'origin' ELSE 'total' END AS section,
           coalesce(k.st, k.dy, k.wk, k.md, k.og) AS key,
           count(*)::bigint AS runs,
           (count(*) FILTER (WHERE k.status = 'succeeded'))::bigint AS succeeded,
           (count(*) FILTER (WHERE k.is_failed))::bigint AS failed,
           round((count(*) FILTER (WHERE k.is_failed))::numeric / nullif(count(*) FILTER (WHERE k.is_done), 0), 4) AS failure_rate,
           sum(k.tokens_in + k.tokens_out)::bigint AS tokens,
           jsonb_build_object('tokens_in', sum(k.tokens_in), 'tokens_out', sum(k.tokens_out),
                              'tokens_cached', sum(k.tokens_cached),
                              'finished', count(*) FILTER (WHERE k.is_done),
                              'cancelled', count(*) FILTER (WHERE k.status = 'cancelled'),
                              'active', count(*) FILTER (WHERE NOT k.is_done),
                              'avg_duration_s', round(extract(epoch FROM avg(k.finished_at - k.started_at))::numeric, 3)) AS detail
      FROM (SELECT r.*, r.status AS st,
                   to_char((r.created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS dy,
                   to_char(date_trunc('week', r.created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS wk,
                   coalesce(r.model, '(none)') AS md, r.origin AS og
              FROM r) k
     GROUP BY GROUPING SETS ((), (k.st), (k.dy), (k.wk), (k.md), (k.og))
  ), touched AS (
    SELECT coalesce(s.output ->> 'resource_type', s.input ->> 'resource_type') AS rt,
           coalesce(s.output ->> 'resource_id', s.input ->> 'resource_id') AS rid,
           s.kind, s.run_id, s.started_at, r.regime
      FROM agent.run_steps s JOIN r ON r.workspace_id = s.workspace_id AND r.id = s.run_id
     WHERE s.workspace_id = v_ws AND s.kind IN ('read', 'write') AND coalesce(s.status, 'ok') = 'ok'
  ), used AS (
    SELECT t.rt, t.rid,
           count(*) FILTER (WHERE t.kind = 'read') AS reads,
           count(*) FILTER (WHERE t.kind = 'write') AS writes,
           count(DISTINCT t.run_id) FILTER (WHERE t.kind = 'read') AS read_runs,
           count(*) FILTER (WHERE t.kind = 'read' AND t.regime = 'manual') AS manual_reads,
           max(t.started_at) FILTER (WHERE t.kind = 'read') AS last_read_at
      FROM touched t WHERE t.rt IS NOT NULL AND t.rid IS NOT NULL
     GROUP BY t.rt, t.rid
  ), res AS (
    SELECT coalesce(g.resource_type, u.rt) AS rt, coalesce(g.resource_id, u.rid) AS rid,
           g.access AS granted, coalesce(u.reads, 0) AS reads, coalesce(u.writes, 0) AS writes,
           coalesce(u.read_runs, 0) AS read_runs, coalesce(u.manual_reads, 0) AS manual_reads, u.last_read_at
      FROM (SELECT * FROM agent.access x WHERE x.workspace_id = v_ws AND x.agent_id = v_agent) g
      FULL JOIN used u ON u.rt = g.resource_type AND u.rid = g.resource_id
  )
  SELECT a.section, a.key, a.runs, a.succeeded, a.failed, a.failure_rate, a.tokens, a.detail
    FROM (SELECT agg.*, agg.key AS sortkey FROM agg
          UNION ALL
          SELECT 7, 'resource', res.rt || ':' || res.rid, res.read_runs, NULL, NULL, NULL, NULL,
                 jsonb_build_object('granted', res.granted, 'reads', res.reads, 'writes', res.writes,
                                    'manual_reads', res.manual_reads, 'last_read_at', res.last_read_at,
                                    'state', CASE WHEN res.granted IS NOT NULL AND res.reads > 0 THEN 'granted_and_read'
                                                  WHEN res.granted IS NOT NULL THEN 'granted_not_read'
                                                  ELSE 'read_not_granted' END),
                 res.rt || ':' || res.rid
            FROM res
          UNION ALL
          -- anti-loop: the events of its own writes each trigger dropped
          SELECT 8, 'anti_loop', 'trigger:' || sk.id, NULL, NULL, NULL, NULL, NULL,
                 jsonb_build_object('trigger_id', sk.id, 'self_skipped', sk.self_skipped,
                                    'last_skipped_at', sk.self_skipped_at, 'reported_at', sk.self_skip_reported_at),
                 lpad(sk.id::text, 20, '0')
            FROM agent.triggers sk
           WHERE sk.workspace_id = v_ws AND sk.agent_id = v_agent AND sk.self_skipped > 0) a
   ORDER BY a.ord, a.sortkey NULLS FIRST;
END
$$;
COMMENT ON FUNCTION agent.insights(bigint, text, timestamptz, timestamptz) IS
  'Insights of one agent over [since, until) of created_at (full level only, 42501 otherwise, unknown agents and agents of another workspace than the session''s included): one row per section and key — total, status, day and week (UTC), model, origin: runs, succeeded, failed (failed, budget_exceeded, expired), failure_rate over finished runs, own tokens — and resource: granted (agent.access now) versus actually read (read steps of the period), with runs that read it and a state granted_and_read, granted_not_read or read_not_granted; and anti_loop: per trigger that dropped events of the agent''s own writes, the count (detail.self_skipped), the last drop and the last report (not limited to the period).';
