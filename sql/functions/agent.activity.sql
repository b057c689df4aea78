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
