-- issue 17 (wire): cached prompt tokens (agent.runs.tokens_cached) recorded by the
-- worker and shown by agent.run_metrics, agent.insights and agent.insights().

ALTER TABLE agent.runs ADD COLUMN tokens_cached bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN agent.runs.tokens_cached IS 'Prompt tokens of this run read from the provider''s prompt cache (Anthropic cache_read_input_tokens, OpenAI prompt_tokens_details.cached_tokens); a part of tokens_in.';

\ir ../../functions/agent._worker_finish_replies.sql
REVOKE ALL ON FUNCTION agent._worker_finish_replies(jsonb, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._worker_finish_replies(jsonb, integer) IS
  'Internal (worker): records a batch of final answers [{"run_id","model","input","output","tokens","tokens_in","tokens_out","tokens_cached","started_us" (microseconds since 1970),"text"}] in one transaction: llm step, usage, end of the run (succeeded, or budget_exceeded) and its state, for root runs still running without active children; returns each run''s outcome: finished, continue (messages wait: lease renewed, the worker delivers them), gone (no longer running) or single (the worker records it alone).';

CREATE OR REPLACE VIEW agent.insights AS
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
JOIN agent.agents a ON a.id = g.agent_id
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
BEGIN
  IF v_agent IS NULL THEN
    RAISE EXCEPTION 'agent_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  IF since IS NOT NULL AND until IS NOT NULL AND since > until THEN
    RAISE EXCEPTION 'since must not be after until' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- an agent of another workspace is an unknown agent
  v_level := CASE WHEN agent._workspace_ok((SELECT a.workspace_id FROM agent.agents a WHERE a.id = v_agent))
                  THEN agent._user_level(v_user, v_agent) END;
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
     WHERE x.agent_id = v_agent
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
      FROM agent.run_steps s JOIN r ON r.id = s.run_id
     WHERE s.kind IN ('read', 'write') AND coalesce(s.status, 'ok') = 'ok'
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
      FROM (SELECT * FROM agent.access x WHERE x.agent_id = v_agent) g
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
            FROM res) a
   ORDER BY a.ord, a.sortkey NULLS FIRST;
END
$$;
COMMENT ON FUNCTION agent.insights(bigint, text, timestamptz, timestamptz) IS
  'Insights of one agent over [since, until) of created_at (full level only, 42501 otherwise, unknown agents and agents of another workspace than the session''s included): one row per section and key — total, status, day and week (UTC), model, origin: runs, succeeded, failed (failed, budget_exceeded, expired), failure_rate over finished runs, own tokens — and resource: granted (agent.access now) versus actually read (read steps of the period), with runs that read it and a state granted_and_read, granted_not_read or read_not_granted.';

\ir ../../views/agent.run_metrics.sql
COMMENT ON COLUMN agent.run_metrics.run_id IS 'Run.';
COMMENT ON COLUMN agent.run_metrics.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.run_metrics.agent_id IS 'Agent.';
COMMENT ON COLUMN agent.run_metrics.agent_name IS 'Agent name.';
COMMENT ON COLUMN agent.run_metrics.origin IS 'What queued it: chat, api, schedule, event, mention, delegation, rerun or draft.';
COMMENT ON COLUMN agent.run_metrics.trigger_id IS 'Trigger that queued it, if any.';
COMMENT ON COLUMN agent.run_metrics.parent_run_id IS 'Delegating run, for a child run.';
COMMENT ON COLUMN agent.run_metrics.status IS 'Run status.';
COMMENT ON COLUMN agent.run_metrics.provider IS 'LLM wire format: the agent''s scope llm_provider, else pg_agents.llm_provider (current values; per provider object once providers exist).';
COMMENT ON COLUMN agent.run_metrics.endpoint_host IS 'Host of the LLM endpoint: the agent''s scope llm_url, else pg_agents.llm_url (current values, host only).';
COMMENT ON COLUMN agent.run_metrics.model IS 'Model used (NULL before the first model call).';
COMMENT ON COLUMN agent.run_metrics.created_at IS 'When it was queued.';
COMMENT ON COLUMN agent.run_metrics.started_at IS 'When it was first claimed.';
COMMENT ON COLUMN agent.run_metrics.finished_at IS 'When it ended.';
COMMENT ON COLUMN agent.run_metrics.queue_ms IS 'started_at - created_at, in milliseconds.';
COMMENT ON COLUMN agent.run_metrics.duration_ms IS 'finished_at - started_at, in milliseconds.';
COMMENT ON COLUMN agent.run_metrics.tokens_in IS 'Prompt tokens of the run.';
COMMENT ON COLUMN agent.run_metrics.tokens_out IS 'Completion tokens of the run.';
COMMENT ON COLUMN agent.run_metrics.tokens_cached IS 'Prompt tokens of the run read from the provider''s prompt cache (a part of tokens_in).';
COMMENT ON COLUMN agent.run_metrics.tokens_total IS 'Tokens of the run and its descendants.';
COMMENT ON COLUMN agent.run_metrics.attempts IS 'Claims of the run.';
COMMENT ON COLUMN agent.run_metrics.error_code IS 'agent.run_error_code(error): a stable word, never the error text.';
COMMENT ON COLUMN agent.run_metrics.llm_calls IS 'LLM steps of the run.';
COMMENT ON COLUMN agent.run_metrics.llm_ms IS 'Latency of each LLM step (finished_at - started_at, ms), in order.';
COMMENT ON COLUMN agent.run_metrics.retries IS 'LLM calls retried (429, 5xx, time-outs): error steps with status retry.';
