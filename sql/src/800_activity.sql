-- pg_agents: activity, insights, assisted creation and the template gallery
-- (docs/activity.md; plan P3-T04, P3-T12, P3-T13).
--
--   agent.activity / agent.run_detail      what the agent did, per the §7.4 visibility
--   agent.insights (view and function)     counters that equal agent.runs / run_steps
--   agent.generate_draft / agent.draft     a draft run of the workspace's hidden assistant
--   agent.create_from_draft                the only path that saves a draft (triggers disabled)
--   agent.templates                        six gallery drafts, through create_from_draft
--
-- Visibility (decided, docs/activity.md): full sees every run; edit and
-- interact see only the manual runs they asked for; a user without access
-- gets exactly what an unknown agent or run gives (nothing), so that the
-- answer never tells whether the agent exists.

-- ---------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._run_failed(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT $1 IN ('failed', 'budget_exceeded', 'expired') $$;
COMMENT ON FUNCTION agent._run_failed(text) IS
  'Internal: whether a run status counts as a failure in insights (failed, budget_exceeded, expired; cancelled is a human choice, not a failure).';

CREATE FUNCTION agent._trigger_label(p_origin text, p_input jsonb, p_trigger_id bigint, p_parent_run_id bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t    agent.triggers%ROWTYPE;
  v_ws text;
BEGIN
  IF p_origin IN ('schedule', 'event') AND p_trigger_id IS NOT NULL THEN
    -- the trigger of the session's workspace, else (a session bound to none,
    -- a run of another workspace's row) the trigger's own
    v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
    SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = p_trigger_id;
    -- by id alone only without Citus: called by a trigger on a Citus shard
    -- (agent._conversation_run_ended), a statement that does not name the
    -- workspace is refused there; the label then says what the input says
    IF NOT FOUND AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
      SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = p_trigger_id;
      SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = p_trigger_id;
    END IF;
  END IF;
  RETURN CASE p_origin
    WHEN 'schedule' THEN 'schedule: ' || coalesce(
           agent.cron_describe(t.schedule) || CASE WHEN t.timezone <> 'UTC' THEN ' (' || t.timezone || ')' ELSE '' END,
           '(trigger deleted)')
    WHEN 'event' THEN 'event: ' || coalesce(p_input ->> 'event', t.event_name, '?')
                      || ' on ' || coalesce(p_input ->> 'resource_id', 'any ' || coalesce(p_input ->> 'resource_type', 'resource'))
    WHEN 'mention' THEN 'mention in ' || coalesce(p_input ->> 'resource_type', 'resource') || ' '
                        || coalesce(p_input ->> 'resource_id', '?')
    WHEN 'chat' THEN 'chat'
    WHEN 'api' THEN 'api'
    WHEN 'delegation' THEN 'delegation from run ' || coalesce(p_parent_run_id::text, p_input ->> 'parent_run_id', '?')
    WHEN 'rerun' THEN 're-run of run ' || coalesce(p_input ->> 'rerun_of', '?')
    WHEN 'draft' THEN 'draft: assisted creation'
    ELSE p_origin
  END;
END
$$;
COMMENT ON FUNCTION agent._trigger_label(text, jsonb, bigint, bigint) IS
  'Internal: what started a run, in clear ("schedule: at 09:00 every day", "event: collection.row_added on public.tickets", "chat", "delegation from run N", "re-run of run N").';

-- resource_type / resource_id of a read or write step (worker: input and
-- output both carry them)
CREATE FUNCTION agent._step_resource(p_input jsonb, p_output jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce(p_output ->> 'resource_type', p_input ->> 'resource_type') || ':'
         || coalesce(p_output ->> 'resource_id', p_input ->> 'resource_id')
$$;
COMMENT ON FUNCTION agent._step_resource(jsonb, jsonb) IS
  'Internal: "type:id" of the resource a read, write or denied step touched (NULL when the step names none).';

CREATE FUNCTION agent._check_user(p_user_id text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_user_id IS NULL OR p_user_id = '' THEN
    RAISE EXCEPTION 'user_id must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._check_user(text) IS 'Internal: refuses (22023) a NULL or empty user id.';

-- A workspace named in an argument (or a draft) must be the session's.
CREATE FUNCTION agent._check_workspace_arg(p_workspace_id text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NOT agent._workspace_ok(p_workspace_id) THEN
    RAISE EXCEPTION 'workspace "%" is not the session''s workspace', p_workspace_id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Every call of the pg_agents API works inside the session''s workspace (pg_agents.workspace).';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._check_workspace_arg(text) IS
  'Internal: refuses (42501) a workspace id named in an argument or a draft that the session may not name (agent._workspace_ok).';

-- ---------------------------------------------------------------------------
-- Activity
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.activity(agent_id bigint, user_id text, status text DEFAULT NULL,
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

CREATE FUNCTION agent.run_detail(run_id bigint, user_id text)
RETURNS TABLE(seq integer, at timestamptz, kind text, name text, status text, summary text,
              resource text, tokens integer, duration interval, input jsonb, output jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r       agent.runs%ROWTYPE;
  v_scope text;
  v_run   bigint := run_id;
  v_user  text := user_id;
  v_ws    text;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  -- a run of another workspace is an unknown run (a session bound to none:
  -- the run's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = v_run;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_run;
  IF r.id IS NULL THEN
    RETURN;
  END IF;
  v_scope := agent.activity_scope(v_user, r.agent_id);
  -- the user who asked for a draft sees its steps (the assistant itself is nobody's)
  IF r.origin = 'draft' AND r.requested_by = v_user THEN
    v_scope := 'own_manual';
  END IF;
  IF v_scope IS NULL OR (v_scope <> 'all' AND NOT (r.regime = 'manual' AND r.requested_by = v_user)) THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT * FROM (
    SELECT s.seq, s.started_at, s.kind, s.name, s.status,
           CASE s.kind
             WHEN 'llm' THEN format('model %s: %s tokens', coalesce(s.name, '?'), s.tokens)
             WHEN 'read' THEN format('read %s', agent._step_resource(s.input, s.output))
             WHEN 'write' THEN format('wrote %s', agent._step_resource(s.input, s.output))
             WHEN 'denied' THEN format('denied: %s%s (%s)', coalesce(s.name, '?'),
                                       coalesce(' on ' || agent._step_resource(s.input, NULL), ''),
                                       coalesce(s.output ->> 'reason', s.output ->> 'error', 'refused'))
             WHEN 'delegate' THEN format('delegated to %s: run %s %s', coalesce(s.name, '?'),
                                         coalesce(s.output ->> 'child_run_id', s.input ->> 'child_run_id', '?'),
                                         coalesce(s.output ->> 'status', 'pending'))
             WHEN 'approval' THEN format('approval of %s: %s', coalesce(s.name, '?'), coalesce(s.status, 'pending'))
             WHEN 'error' THEN format('error in %s: %s', coalesce(s.name, '?'),
                                      coalesce(s.output ->> 'error', s.output::text, 'unknown'))
             WHEN 'tool' THEN
               CASE WHEN s.name = 'search_resources'
                    THEN format('searched "%s": %s result(s)', coalesce(s.input ->> 'query', ''),
                                coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                                                 THEN s.output -> 'results' END), 0))
                    ELSE format('called %s', coalesce(s.name, '?')) END
             ELSE coalesce(s.name, s.kind)
           END,
           CASE WHEN s.kind IN ('read', 'write', 'denied') THEN agent._step_resource(s.input, s.output) END,
           s.tokens, s.finished_at - s.started_at, s.input, s.output
      FROM agent.run_steps s WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id
    UNION ALL
    -- the decisions on the run's approvals (who decided, when)
    SELECT NULL::integer, coalesce(p.decided_at, p.requested_at), 'approval'::text, p.tool, p.status,
           format('approval %s of %s%s', p.status, p.tool,
                  coalesce(' by ' || p.decided_by, '') || CASE WHEN p.status = 'pending'
                                                               THEN ' (expires ' || p.expires_at::text || ')' ELSE '' END),
           NULL::text, 0, p.decided_at - p.requested_at, p.input,
           jsonb_build_object('approval_key', p.approval_key, 'decided_by', p.decided_by, 'consumed', p.consumed_at IS NOT NULL)
      FROM agent.approvals p WHERE p.workspace_id = r.workspace_id AND p.run_id = r.id
  ) d(seq, at, kind, name, status, summary, resource, tokens, duration, input, output)
  ORDER BY d.seq NULLS LAST, d.at;
END
$$;
COMMENT ON FUNCTION agent.run_detail(bigint, text) IS
  'The steps of one run in order (model calls with tokens, reads, writes, tool calls, searches, denied steps, delegations, errors) with a one-line summary, then the run''s approvals and their decisions. Same visibility as agent.activity (and the requester of a draft run sees its steps): a run the user may not see, or a run of another workspace than the session''s, gives nothing, exactly like an unknown run.';

-- ---------------------------------------------------------------------------
-- Insights
-- ---------------------------------------------------------------------------

CREATE VIEW agent.insights AS
SELECT g.workspace_id, g.agent_id, a.name AS agent_name, g.day, g.status, g.runs,
       g.tokens_in, g.tokens_out, g.tokens_in + g.tokens_out AS tokens, g.avg_duration,
       sum(g.runs) OVER w AS day_runs,
       round(sum(CASE WHEN agent._run_failed(g.status) THEN g.runs ELSE 0 END) OVER w
             / nullif(sum(CASE WHEN NOT agent._run_is_active(g.status) THEN g.runs ELSE 0 END) OVER w, 0), 4)
         AS day_failure_rate,
       g.tokens_cached
FROM (
  SELECT r.workspace_id, r.agent_id, (r.created_at AT TIME ZONE 'UTC')::date AS day, r.status,
         count(*) AS runs, sum(r.tokens_in)::bigint AS tokens_in, sum(r.tokens_out)::bigint AS tokens_out,
         avg(r.finished_at - r.started_at) AS avg_duration, sum(r.tokens_cached)::bigint AS tokens_cached
    FROM agent.runs r
   WHERE (SELECT agent._session_workspace()) IS NULL
      OR (r.workspace_id = (SELECT agent._session_workspace())
          AND (SELECT agent._may_read_workspace(agent._session_workspace())))
   GROUP BY 1, 2, 3, 4
) g
JOIN agent.agents a ON a.workspace_id = g.workspace_id AND a.id = g.agent_id
WINDOW w AS (PARTITION BY g.agent_id, g.day);
REVOKE ALL ON agent.insights FROM PUBLIC;
COMMENT ON VIEW agent.insights IS
  'Runs per agent, UTC day (of created_at) and status, for analytics: runs, own tokens (the run''s own tokens_in + tokens_out, never the rolled-up tokens_total, so that sums do not count a child twice), average duration, and the day''s run count and failure rate (failed, budget_exceeded, expired over finished runs). Scoped to the session''s workspace (pg_agents.workspace; a non-superuser session that sets none is refused, a superuser one sees every workspace), and only to one the role may read (agents_app: any; agents_reader: those bound by agent.bind_reader).';
COMMENT ON COLUMN agent.insights.workspace_id IS 'Workspace of the agent.';
COMMENT ON COLUMN agent.insights.agent_id IS 'Agent.';
COMMENT ON COLUMN agent.insights.agent_name IS 'Agent name now.';
COMMENT ON COLUMN agent.insights.day IS 'UTC date of the runs'' created_at.';
COMMENT ON COLUMN agent.insights.status IS 'Run status.';
COMMENT ON COLUMN agent.insights.runs IS 'Runs of that agent, day and status.';
COMMENT ON COLUMN agent.insights.tokens_in IS 'Sum of the runs'' own prompt tokens.';
COMMENT ON COLUMN agent.insights.tokens_out IS 'Sum of the runs'' own completion tokens.';
COMMENT ON COLUMN agent.insights.tokens IS 'tokens_in + tokens_out.';
COMMENT ON COLUMN agent.insights.avg_duration IS 'Average finished_at - started_at of the runs that have both.';
COMMENT ON COLUMN agent.insights.day_runs IS 'All runs of the agent that day, every status.';
COMMENT ON COLUMN agent.insights.day_failure_rate IS 'Failed, budget_exceeded and expired runs over finished runs of the agent that day (4 decimals); NULL when none finished.';
COMMENT ON COLUMN agent.insights.tokens_cached IS 'Sum of the runs'' own prompt tokens read from the provider''s prompt cache (a part of tokens_in).';

CREATE FUNCTION agent.insights(agent_id bigint, user_id text, since timestamptz DEFAULT NULL,
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

-- ---------------------------------------------------------------------------
-- Assisted creation: the hidden assistant, draft runs, create_from_draft
-- ---------------------------------------------------------------------------

CREATE TABLE agent.assistants (
    workspace_id text PRIMARY KEY,
    agent_id     bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT assistants_agent_id_key UNIQUE (agent_id, workspace_id),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE agent.assistants IS
  'The hidden built-in agent of each workspace that runs assisted-creation drafts (owner pg_agents:assistant: no user holds a level on it, so it is listed nowhere; its draft runs are manual runs acting as the requesting user).';
COMMENT ON COLUMN agent.assistants.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.assistants.agent_id IS 'The assistant agent of that workspace.';
COMMENT ON COLUMN agent.assistants.created_at IS 'When it was created (on the workspace''s first draft).';

CREATE FUNCTION agent._assistant_instructions() RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT $i$You help a user create a custom agent from a short description.

1. For every page, collection or other resource the description names, call search_resources with the words that name it (and its resource_type, e.g. "collection" or "page", when the description says which). You only ever see what the user may read.
2. Then answer with ONE JSON object and nothing else (no prose, no code fence):
{"name": "<short agent name>",
 "instructions": "<what the agent should do, as instructions to it>",
 "triggers": [<zero or more triggers>],
 "access": [{"resource_type": "<type from a search result>", "resource_id": "<id from a search result>", "access": "read" or "edit"}]}
A trigger is {"kind": "schedule", "schedule": "<5-field cron>", "timezone": "UTC", "prompt": "<task>"}
or {"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": "<id from a search result or null>", "filter": {}, "prompt": "<task>"}.
Propose access only to resources a search returned in this conversation; never invent or guess an id. If nothing was found, "access" is []. Never write or change anything.$i$ $$;
COMMENT ON FUNCTION agent._assistant_instructions() IS
  'Internal: the instructions of the assistant agent: search for what the description names, answer one JSON draft {name, instructions, triggers, access}, propose only what a search found.';

CREATE FUNCTION agent._assistant_for(p_workspace_id text) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  IF v_id IS NULL THEN
    PERFORM agent._lock('assistant', p_workspace_id);
    SELECT s.agent_id INTO v_id FROM agent.assistants s WHERE s.workspace_id = p_workspace_id;
  END IF;
  IF v_id IS NULL THEN
    INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, approval_mode, max_iterations)
    VALUES (p_workspace_id, 'pg_agents:assistant', 'Agent creation assistant', agent._assistant_instructions(),
            'writes', 8)
    RETURNING id INTO v_id;
    INSERT INTO agent.assistants (workspace_id, agent_id) VALUES (p_workspace_id, v_id);
  ELSE
    -- keep the instructions current across upgrades
    UPDATE agent.agents a SET instructions = agent._assistant_instructions(), updated_at = now()
     WHERE a.workspace_id = p_workspace_id AND a.id = v_id AND a.instructions IS DISTINCT FROM agent._assistant_instructions();
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._assistant_for(text) FROM PUBLIC;
COMMENT ON FUNCTION agent._assistant_for(text) IS
  'Internal: the workspace''s hidden assistant agent, created on first use.';

CREATE FUNCTION agent.generate_draft(description text, user_id text, workspace_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_ws   text := coalesce(nullif(workspace_id, ''), agent._session_workspace());
  v_user text := user_id;
  v_aid  bigint;
  v_run  bigint;
BEGIN
  -- the audit rows of this call name user_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(generate_draft.user_id, ''), true);
  IF description IS NULL OR btrim(description) = '' THEN
    RAISE EXCEPTION 'description must not be empty' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Describe what the agent should do, e.g. "triage the tickets of the Support collection".';
  END IF;
  IF length(description) > 4000 THEN
    RAISE EXCEPTION 'description is too long' USING ERRCODE = 'invalid_parameter_value',
          DETAIL = 'A description has at most 4000 characters.';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_ws IS NULL THEN
    RAISE EXCEPTION 'generate_draft needs a workspace' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Pass workspace_id or set pg_agents.workspace.';
  END IF;
  PERFORM agent._check_workspace_arg(v_ws);
  v_aid := agent._assistant_for(v_ws);
  -- a manual run acting as the user: its searches go through the user's own ACL
  v_run := agent._enqueue_run(v_aid, 'manual', 'draft',
                              jsonb_build_object('prompt', 'Draft an agent for this description:' || E'\n' || description,
                                                 'description', description),
                              NULL, v_user);
  PERFORM agent._audit_event('agent.generate_draft', 'success', 'run', v_run::text, v_ws, v_user,
                             jsonb_build_object('description', description, 'by_user', v_user),
                             format('%s asked for an agent draft (run %s)', v_user, v_run));
  RETURN v_run;
END
$$;
REVOKE ALL ON FUNCTION agent.generate_draft(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.generate_draft(text, text, text) IS
  'Queues a draft run (origin draft, manual regime acting as user_id, so its searches see only what the user may read) of the workspace''s hidden assistant agent; the worker and the LLM turn the description into a draft, read with agent.draft(run_id). Nothing else is saved. workspace_id defaults to the session''s workspace (pg_agents.workspace) and must be it (42501 otherwise). Returns the run id.';

-- What is wrong with one trigger of a draft (NULL when it is valid).
CREATE FUNCTION agent._draft_trigger_problem(t jsonb) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k    text;
  kind text;
BEGIN
  IF t IS NULL OR jsonb_typeof(t) <> 'object' THEN
    RETURN 'a trigger must be a JSON object';
  END IF;
  FOR k IN SELECT jsonb_object_keys(t) LOOP
    IF k NOT IN ('kind', 'event_name', 'resource_type', 'resource_id', 'filter', 'schedule', 'timezone',
                 'prompt', 'allow_self_retrigger', 'show_typing', 'run_as', 'enabled') THEN
      RETURN format('unknown key "%s"', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['kind', 'event_name', 'resource_type', 'resource_id', 'schedule',
                                      'timezone', 'prompt', 'run_as']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) NOT IN ('string', 'null') THEN
      RETURN format('"%s" must be a string', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['allow_self_retrigger', 'show_typing', 'enabled']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) <> 'boolean' THEN
      RETURN format('"%s" must be a boolean', k);
    END IF;
  END LOOP;
  kind := t ->> 'kind';
  IF kind IS NULL OR kind NOT IN ('schedule', 'event', 'mention', 'api') THEN
    RETURN format('kind "%s" is not schedule, event, mention or api', coalesce(kind, 'NULL'));
  END IF;
  IF kind = 'schedule' THEN
    IF t ->> 'schedule' IS NULL OR NOT agent.cron_valid(t ->> 'schedule') THEN
      RETURN format('invalid schedule "%s"', coalesce(t ->> 'schedule', 'NULL'));
    END IF;
  END IF;
  IF t ->> 'timezone' IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = t ->> 'timezone') THEN
    RETURN format('unknown time zone "%s"', t ->> 'timezone');
  END IF;
  IF kind = 'event' THEN
    IF coalesce(btrim(t ->> 'event_name'), '') = '' THEN
      RETURN 'an event trigger needs event_name';
    END IF;
    IF (t ->> 'event_name') !~ '^[A-Za-z0-9_.:-]{1,200}$' THEN
      RETURN format('invalid event_name "%s"', t ->> 'event_name');
    END IF;
    IF coalesce(btrim(t ->> 'resource_type'), '') = '' THEN
      RETURN 'an event trigger needs resource_type';
    END IF;
  END IF;
  IF t ->> 'resource_id' IS NOT NULL AND t ->> 'resource_type' IS NULL THEN
    RETURN 'resource_id needs resource_type';
  END IF;
  IF t ->> 'run_as' IS NOT NULL AND t ->> 'run_as' NOT IN ('creator', 'shared') THEN
    RETURN format('run_as "%s" is not creator or shared', t ->> 'run_as');
  END IF;
  IF t ? 'run_as' AND t ->> 'kind' IS DISTINCT FROM 'schedule' THEN
    RETURN 'run_as applies to schedule triggers only';
  END IF;
  IF t ? 'filter' AND jsonb_typeof(t -> 'filter') <> 'null' THEN
    -- a filter view must be readable by the session's outer role (the
    -- application's, not the owner of a SECURITY DEFINER caller such as
    -- create_from_draft): it is read with that role's rights, which become
    -- the trigger's saved_by.  Validation never runs the view.
    BEGIN
      PERFORM agent.validate_filter(t -> 'filter');
    EXCEPTION WHEN invalid_parameter_value OR insufficient_privilege THEN
      RETURN SQLERRM;
    END;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._draft_trigger_problem(jsonb) IS
  'Internal: why a draft trigger is invalid (keys and types, kind, cron via agent.cron_valid, time zone, event name and resource type, run_as (schedule triggers only), filter via agent.validate_filter, whose view the session''s outer role must be allowed to read), or NULL when it is valid.';

-- The JSON object in a model's answer: the whole text, a fenced block, or
-- the outermost {...}; NULL when there is none.
CREATE FUNCTION agent._draft_json(p_text text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c text;
  j jsonb;
BEGIN
  IF p_text IS NULL THEN
    RETURN NULL;
  END IF;
  FOREACH c IN ARRAY ARRAY[p_text,
                           substring(p_text FROM '```(?:json)?\s*(.*?)\s*```'),
                           substring(p_text FROM '(?s)(\{.*\})')] LOOP
    CONTINUE WHEN c IS NULL;
    BEGIN
      j := c::jsonb;
      IF jsonb_typeof(j) = 'object' THEN
        RETURN j;
      END IF;
    EXCEPTION WHEN others THEN
      NULL;
    END;
  END LOOP;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._draft_json(text) IS
  'Internal: the JSON object of a model answer (whole text, fenced block or outermost braces), NULL when none parses.';

CREATE FUNCTION agent.draft(run_id bigint, user_id text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r          agent.runs%ROWTYPE;
  v_run      bigint := run_id;
  v_user     text;
  j          jsonb;
  e          jsonb;
  v_found    jsonb;
  v_access   jsonb := '[]';
  v_triggers jsonb := '[]';
  v_dropped  jsonb := '[]';
  v_down     jsonb := '[]';
  v_seen     text[] := '{}';
  v_rt       text;
  v_rid      text;
  v_acc      text;
  v_problem  text;
  v_name     text;
  i          integer;
  v_ws       text;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the session's workspace (a session bound to none: the run's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = v_run;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_run AND x.origin = 'draft';
  IF r.id IS NULL
     OR (user_id IS NOT NULL AND r.requested_by IS DISTINCT FROM user_id) THEN
    -- another user's draft, or one of another workspace, looks exactly like no draft
    RAISE EXCEPTION 'draft run % does not exist', v_run USING ERRCODE = 'undefined_object';
  END IF;
  v_user := r.requested_by;
  IF r.status <> 'succeeded' THEN
    RETURN jsonb_build_object('run_id', r.id, 'status', r.status, 'ready', false,
                              'error', CASE WHEN agent._run_is_active(r.status) THEN NULL
                                            ELSE coalesce(r.error, 'the draft run ended ' || r.status) END);
  END IF;
  j := CASE WHEN jsonb_typeof(r.output) = 'object' AND r.output ? 'name' THEN r.output
            ELSE agent._draft_json(r.output ->> 'text') END;
  IF j IS NULL THEN
    RETURN jsonb_build_object('run_id', r.id, 'status', r.status, 'ready', false,
                              'error', 'the model''s answer is not a JSON draft',
                              'answer', left(coalesce(r.output ->> 'text', r.output::text), 500));
  END IF;

  -- what the run's searches (as the user) really found, still readable by the user now
  -- (read first, then checked: agent.can_access inside the routed query
  -- would run on the shard's node under Citus)
  SELECT coalesce(jsonb_agg(DISTINCT jsonb_build_object('resource_type', f.rt, 'resource_id', f.rid)), '[]')
    INTO v_found
    FROM (SELECT x ->> 'resource_type' AS rt, x ->> 'resource_id' AS rid
            FROM agent.run_steps s,
                 jsonb_array_elements(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                           THEN s.output -> 'results' ELSE '[]' END) x
           WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id AND s.kind = 'tool'
             AND s.name = 'search_resources' AND coalesce(s.status, 'ok') = 'ok') f
   WHERE f.rt IS NOT NULL AND f.rid IS NOT NULL;
  SELECT coalesce(jsonb_agg(c ORDER BY c), '[]') INTO v_found
    FROM jsonb_array_elements(v_found) c
   WHERE agent.can_access(r.agent_id, c ->> 'resource_type', c ->> 'resource_id', 'read', 'manual', v_user);

  -- proposed access: only what a search found and the user can read
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j -> 'access') = 'array'
                                                   THEN j -> 'access' ELSE '[]' END) x LOOP
    i := i + 1;
    v_rt := CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'resource_type' END;
    v_rid := CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'resource_id' END;
    v_acc := coalesce(CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'access' END, 'read');
    IF v_rt IS NULL OR v_rid IS NULL OR v_acc NOT IN ('read', 'edit') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'proposed', e, 'reason', 'malformed');
    ELSIF v_rt NOT IN ('page', 'collection', 'skill', 'agent') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                                   'reason', 'invalid_resource_type');
    ELSIF NOT v_found @> jsonb_build_array(jsonb_build_object('resource_type', v_rt, 'resource_id', v_rid)) THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                                   'reason', CASE WHEN EXISTS (
                                                                    SELECT 1 FROM agent.run_steps s,
                                                                           jsonb_array_elements(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                                                                                     THEN s.output -> 'results' ELSE '[]' END) x
                                                                     WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id
                                                                       AND s.kind = 'tool' AND s.name = 'search_resources'
                                                                       AND x ->> 'resource_type' = v_rt AND x ->> 'resource_id' = v_rid)
                                                                  THEN 'not_readable' ELSE 'not_found_by_search' END);
    ELSIF (v_rt || ':' || v_rid) = ANY (v_seen) THEN
      CONTINUE;
    ELSE
      IF v_acc = 'edit' AND NOT agent.can_access(r.agent_id, v_rt, v_rid, 'edit', 'manual', v_user) THEN
        v_acc := 'read';
        v_down := v_down || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                               'from', 'edit', 'to', 'read', 'reason', 'no_edit_access');
      END IF;
      v_seen := v_seen || (v_rt || ':' || v_rid);
      v_access := v_access || jsonb_build_object('resource_type', v_rt, 'resource_id', v_rid, 'access', v_acc);
    END IF;
  END LOOP;

  -- proposed triggers: valid ones, disabled; one naming a resource keeps it
  -- only when a search found it and the user can read it
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j -> 'triggers') = 'array'
                                                   THEN j -> 'triggers' ELSE '[]' END) x LOOP
    i := i + 1;
    v_problem := agent._draft_trigger_problem(e);
    IF v_problem IS NULL AND e ->> 'resource_id' IS NOT NULL
       AND NOT v_found @> jsonb_build_array(jsonb_build_object('resource_type', e ->> 'resource_type',
                                                               'resource_id', e ->> 'resource_id')) THEN
      v_problem := format('resource %s %s was not found by a search of this run', e ->> 'resource_type', e ->> 'resource_id');
    END IF;
    IF v_problem IS NOT NULL THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'index', i, 'proposed', e, 'reason', v_problem);
    ELSE
      v_triggers := v_triggers || (e || '{"enabled": false}');
    END IF;
  END LOOP;

  v_name := CASE WHEN jsonb_typeof(j -> 'name') = 'string' AND length(btrim(j ->> 'name')) BETWEEN 1 AND 200
                 THEN btrim(j ->> 'name') ELSE 'New agent' END;
  RETURN jsonb_build_object(
    'run_id', r.id, 'status', r.status, 'ready', true,
    'draft', jsonb_build_object('name', v_name,
                                'instructions', CASE WHEN jsonb_typeof(j -> 'instructions') = 'string'
                                                     THEN j ->> 'instructions' ELSE '' END,
                                'triggers', v_triggers, 'access', v_access,
                                'workspace_id', r.workspace_id),
    'found', v_found, 'dropped', v_dropped, 'downgraded', v_down);
END
$$;
REVOKE ALL ON FUNCTION agent.draft(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.draft(bigint, text) IS
  'The draft of a draft run: {run_id, status, ready, draft {name, instructions, triggers (disabled), access, workspace_id}, found, dropped, downgraded}. Proposed access keeps only resources that a search_resources step of that run found and the requesting user can still read (edit downgraded to read without the user''s edit right); anything else the model proposed is dropped and reported, never guessed. Invalid triggers are dropped with the reason. user_id, when given, must be the requesting user (otherwise 42704, like an unknown draft); a draft run of another workspace than the session''s is unknown too.';

CREATE FUNCTION agent.create_from_draft(draft jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  d         jsonb := draft;
  k         text;
  e         jsonb;
  i         integer;
  v_ws      text;
  v_name    text;
  v_id      bigint;
  v_problem text;
  v_access  jsonb := '[]';
  v_ntrig   integer := 0;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(create_from_draft.by_user, ''), true);
  PERFORM agent._check_user(by_user);
  IF d IS NULL OR jsonb_typeof(d) <> 'object' THEN
    RAISE EXCEPTION 'invalid draft: a draft must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k IN SELECT jsonb_object_keys(d) LOOP
    IF k NOT IN ('name', 'instructions', 'triggers', 'access', 'workspace_id', 'model', 'approval_mode', 'template') THEN
      RAISE EXCEPTION 'invalid draft: unknown key "%"', k USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A draft has name, instructions, triggers, access and optionally workspace_id, model, approval_mode, template.';
    END IF;
  END LOOP;
  v_ws := coalesce(nullif(d ->> 'workspace_id', ''), agent._session_workspace());
  IF v_ws IS NULL THEN
    RAISE EXCEPTION 'invalid draft: no workspace' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Give workspace_id in the draft or set pg_agents.workspace.';
  END IF;
  PERFORM agent._check_workspace_arg(v_ws);
  IF jsonb_typeof(d -> 'name') IS DISTINCT FROM 'string' OR length(btrim(d ->> 'name')) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'invalid draft: name must be a string of 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  v_name := btrim(d ->> 'name');
  IF d ? 'instructions' AND jsonb_typeof(d -> 'instructions') <> 'string' THEN
    RAISE EXCEPTION 'invalid draft: instructions must be a string' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF d ? 'access' AND jsonb_typeof(d -> 'access') <> 'array' THEN
    RAISE EXCEPTION 'invalid draft: access must be an array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF d ? 'triggers' AND jsonb_typeof(d -> 'triggers') <> 'array' THEN
    RAISE EXCEPTION 'invalid draft: triggers must be an array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_settings(jsonb_strip_nulls(jsonb_build_object('model', d -> 'model',
                                                                     'approval_mode', d -> 'approval_mode')));
  -- every grant has the shape of a grant
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'access', '[]')) x LOOP
    i := i + 1;
    IF jsonb_typeof(e) <> 'object' OR EXISTS (SELECT 1 FROM jsonb_object_keys(e) ok
                                               WHERE ok NOT IN ('resource_type', 'resource_id', 'access')) THEN
      RAISE EXCEPTION 'invalid draft: access %: a grant is {"resource_type", "resource_id", "access"}', i
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM agent._check_grant(e ->> 'resource_type', e ->> 'resource_id', coalesce(e ->> 'access', 'read'));
    v_access := v_access || jsonb_build_object('resource_type', e ->> 'resource_type',
                                               'resource_id', e ->> 'resource_id',
                                               'access', coalesce(e ->> 'access', 'read'));
  END LOOP;
  -- every trigger is valid
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'triggers', '[]')) x LOOP
    i := i + 1;
    v_problem := agent._draft_trigger_problem(e);
    IF v_problem IS NOT NULL THEN
      RAISE EXCEPTION 'invalid draft: trigger %: %', i, v_problem USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;

  -- the agent, then the access checks against it (same transaction: a
  -- refusal saves nothing)
  INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, model, approval_mode)
  VALUES (v_ws, by_user, v_name, coalesce(d ->> 'instructions', ''), d ->> 'model',
          coalesce(d ->> 'approval_mode', 'writes'))
  RETURNING id INTO v_id;
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(v_access) x LOOP
    i := i + 1;
    IF NOT agent._user_reads(v_id, by_user, e ->> 'resource_type', e ->> 'resource_id', e ->> 'access') THEN
      RAISE EXCEPTION 'invalid draft: access %: user "%" cannot % % "%"', i, by_user,
            CASE e ->> 'access' WHEN 'edit' THEN 'edit' ELSE 'read' END, e ->> 'resource_type', e ->> 'resource_id'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A draft grants only what its creator may read (or edit) themselves.';
    END IF;
  END LOOP;
  PERFORM agent._apply_settings(v_id, jsonb_build_object('access', v_access), by_user);

  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'triggers', '[]')) x LOOP
    i := i + 1;
    IF e ->> 'resource_type' IN ('page', 'collection', 'skill', 'agent') AND e ->> 'resource_id' IS NOT NULL
       AND NOT agent._user_reads(v_id, by_user, e ->> 'resource_type', e ->> 'resource_id') THEN
      RAISE EXCEPTION 'invalid draft: trigger %: user "%" cannot read % "%"', i, by_user,
            e ->> 'resource_type', e ->> 'resource_id'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A trigger may only watch a resource its creator can read.';
    END IF;
    -- every trigger is created disabled, whatever the draft says
    INSERT INTO agent.triggers (workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                                schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as,
                                created_by)
    VALUES (v_ws, v_id, e ->> 'kind', e ->> 'event_name', e ->> 'resource_type', e ->> 'resource_id',
            coalesce(CASE WHEN jsonb_typeof(e -> 'filter') = 'object' THEN e -> 'filter' END, '{}'),
            e ->> 'schedule', coalesce(e ->> 'timezone', 'UTC'), e ->> 'prompt', false,
            coalesce((e ->> 'allow_self_retrigger')::boolean, false),
            coalesce((e ->> 'show_typing')::boolean, true), coalesce(e ->> 'run_as', 'creator'), by_user);
    v_ntrig := v_ntrig + 1;
  END LOOP;

  PERFORM agent._write_version(v_id, by_user,
                               CASE WHEN d ? 'template' THEN format('created from template %s', d ->> 'template')
                                    ELSE 'created from draft' END);
  PERFORM agent._audit_event('agent.create_from_draft', 'success', 'agent', v_id::text, v_ws, by_user,
                             jsonb_build_object('draft', d, 'by_user', by_user),
                             format('%s created agent %s "%s" from a draft (%s grant(s), %s trigger(s), all disabled)',
                                    by_user, v_id, v_name, jsonb_array_length(v_access), v_ntrig));
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent.create_from_draft(jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.create_from_draft(jsonb, text) IS
  'Saves a draft (from agent.draft, a template or hand-written) as an agent owned by by_user, after validating it again: keys and shapes, every grant re-checked against by_user''s own ACL (42501), every trigger validated (cron via agent.cron_valid, event fields, filter via agent.validate_filter; a watched resource must be readable by by_user). Every trigger is created disabled. The agent is created in the session''s workspace: a draft''s workspace_id must be it (42501 otherwise). Writes version 1 and an audit row; returns the agent id.';

-- ---------------------------------------------------------------------------
-- The gallery
-- ---------------------------------------------------------------------------

CREATE TABLE agent.templates (
    key         text PRIMARY KEY CHECK (key ~ '^[a-z][a-z0-9_]{0,62}$'),
    position    integer NOT NULL,
    name        text NOT NULL,
    description text NOT NULL,
    draft       jsonb NOT NULL CHECK (jsonb_typeof(draft) = 'object' AND (NOT (draft ? 'access') OR draft -> 'access' = '[]'))
);
COMMENT ON TABLE agent.templates IS
  'Gallery of agent templates: each is a draft that goes through agent.create_from_draft (triggers created disabled). A template never carries access: the user chooses it.';
COMMENT ON COLUMN agent.templates.key IS 'Stable template key.';
COMMENT ON COLUMN agent.templates.position IS 'Display order.';
COMMENT ON COLUMN agent.templates.name IS 'Display name.';
COMMENT ON COLUMN agent.templates.description IS 'What the agent does, in one sentence.';
COMMENT ON COLUMN agent.templates.draft IS 'The draft {name, instructions, triggers, access: [], template}.';
GRANT SELECT ON agent.templates TO PUBLIC;

INSERT INTO agent.templates (key, position, name, description, draft) VALUES
('ticket_triage', 1, 'Ticket triage',
 'Sets priority, category and owner of every new row of a ticket collection.',
 '{"template": "ticket_triage", "name": "Ticket triage",
   "instructions": "When a ticket is added, read it, set its priority (low, normal, high, urgent) and category from its content, and suggest an owner. Explain your choice in one sentence in the ticket. Never close or delete a ticket.",
   "triggers": [{"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": null,
                 "prompt": "A new ticket was added: triage it."}],
   "access": []}'),
('meeting_follow_up', 2, 'Meeting follow-up',
 'Turns each meeting summary into action items and a follow-up note.',
 '{"template": "meeting_follow_up", "name": "Meeting follow-up",
   "instructions": "When a meeting is summarized, extract decisions and action items (owner, due date), and write a short follow-up note for the participants.",
   "triggers": [{"kind": "event", "event_name": "meeting.summarized", "resource_type": "meeting", "resource_id": null,
                 "prompt": "A meeting was summarized: write its follow-up."}],
   "access": []}'),
('weekly_digest', 3, 'Weekly digest',
 'Every Monday morning, summarizes what changed last week in the pages it may read.',
 '{"template": "weekly_digest", "name": "Weekly digest",
   "instructions": "Every Monday, summarize what changed during the last seven days in the resources you may read: new items, notable updates, open questions. Keep it under 300 words.",
   "triggers": [{"kind": "schedule", "schedule": "0 9 * * 1", "timezone": "UTC",
                 "prompt": "Write the weekly digest."}],
   "access": []}'),
('stale_draft_cleanup', 4, 'Stale draft cleanup',
 'Every day, lists drafts untouched for 30 days and asks their authors to finish or archive them.',
 '{"template": "stale_draft_cleanup", "name": "Stale draft cleanup",
   "instructions": "Every day, find drafts not updated for 30 days. For each, add a comment asking its author to finish or archive it. Never delete anything; archiving needs the author.",
   "triggers": [{"kind": "schedule", "schedule": "0 6 * * *", "timezone": "UTC",
                 "prompt": "Look for stale drafts."}],
   "access": []}'),
('mention_responder', 5, 'Mention responder',
 'Answers when someone mentions the agent in a page or comment.',
 '{"template": "mention_responder", "name": "Mention responder",
   "instructions": "When you are mentioned, answer the question asked in the mention, using only the resources you may read; say so when you cannot see what is needed.",
   "triggers": [{"kind": "mention", "prompt": "You were mentioned: answer."}],
   "access": []}'),
('data_quality_watcher', 6, 'Data-quality watcher',
 'Checks rows as they are added or changed and flags missing or inconsistent fields.',
 '{"template": "data_quality_watcher", "name": "Data-quality watcher",
   "instructions": "When a row is added or changed, check that required fields are filled and consistent (dates in order, known statuses, well-formed e-mails). Flag problems in a comment; never change the data yourself.",
   "triggers": [{"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": null,
                 "prompt": "A row was added: check its quality."},
                {"kind": "event", "event_name": "collection.property_updated", "resource_type": "collection", "resource_id": null,
                 "prompt": "A row changed: check its quality."}],
   "access": []}');
