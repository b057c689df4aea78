CREATE OR REPLACE FUNCTION agent.run_stats(since timestamptz DEFAULT now() - interval '1 day')
RETURNS TABLE(workspace_id text, agent_id bigint, agent_name text, provider text, endpoint_host text,
              model text, runs bigint, succeeded bigint, failed bigint, budget_exceeded bigint,
              cancelled bigint, expired bigint, active bigint, failure_rate numeric,
              duration_p50_ms double precision, duration_p95_ms double precision,
              duration_max_ms double precision, queue_p50_ms double precision,
              queue_p95_ms double precision, queue_max_ms double precision, llm_calls bigint,
              llm_p50_ms double precision, llm_p95_ms double precision, llm_max_ms double precision,
              tokens_in numeric, tokens_out numeric, tokens_cached numeric, retries bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the whole UTC days [d0, w) come from the rollup (sql/src/955_rollup.sql):
  -- month rows for the whole months [m1, m2), day rows for the rest; the
  -- runs before d0 and from w on are read from agent.run_metrics
  v_w    timestamptz := agent._run_rollup_watermark();
  v_d0   timestamptz := pg_catalog.date_trunc('day', run_stats.since, 'UTC');
  v_m1   timestamptz;
  v_m2   timestamptz;
  v_end1 timestamptz := 'infinity';
  v_beg2 timestamptz := 'infinity';
BEGIN
  IF v_d0 < run_stats.since THEN
    v_d0 := v_d0 + interval '24 hours';
  END IF;
  IF v_w IS NOT NULL AND v_d0 < v_w THEN
    v_end1 := v_d0;
    v_beg2 := v_w;
    v_m1 := pg_catalog.date_trunc('month', v_d0, 'UTC');
    IF v_m1 < v_d0 THEN
      v_m1 := agent._utc_next_month(v_m1);
    END IF;
    v_m2 := pg_catalog.date_trunc('month', v_w, 'UTC');
    IF v_m1 >= v_m2 THEN
      v_m1 := v_w;
      v_m2 := v_w;
    END IF;
  ELSE
    v_d0 := NULL;   -- nothing from the rollup
  END IF;
  -- planned for these bounds at every call (EXECUTE): a generic plan
  -- would not know how few rows the ranges hold
  RETURN QUERY EXECUTE $q$
  WITH m AS MATERIALIZED (
    -- only the columns used: the view computes no other
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model, m.status,
           m.duration_ms, m.queue_ms, m.llm_calls, m.llm_ms, m.retries, m.tokens_in, m.tokens_out, m.tokens_cached
      FROM agent.run_metrics m WHERE m.created_at >= $1 AND m.created_at < $2
    UNION ALL
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model, m.status,
           m.duration_ms, m.queue_ms, m.llm_calls, m.llm_ms, m.retries, m.tokens_in, m.tokens_out, m.tokens_cached
      FROM agent.run_metrics m WHERE m.created_at >= $3),
  rg AS (
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model,
           count(*) AS runs,
           count(*) FILTER (WHERE m.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE m.status = 'failed') AS failed,
           count(*) FILTER (WHERE m.status = 'budget_exceeded') AS budget_exceeded,
           count(*) FILTER (WHERE m.status = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE m.status = 'expired') AS expired,
           count(*) FILTER (WHERE m.status IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children')) AS active,
           max(m.duration_ms) AS duration_max_ms, agent._hist(m.duration_ms) AS duration_h,
           max(m.queue_ms) AS queue_max_ms, agent._hist(m.queue_ms) AS queue_h,
           sum(m.llm_calls)::bigint AS llm_calls,
           sum(m.tokens_in) AS tokens_in, sum(m.tokens_out) AS tokens_out, sum(m.tokens_cached) AS tokens_cached,
           sum(m.retries)::bigint AS retries
      FROM m
     GROUP BY m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model),
  rl AS (
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model,
           max(x.ms) AS llm_max_ms, agent._hist(x.ms) AS llm_h
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS x(ms)
     GROUP BY m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model),
  p AS (
    SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model, g.runs, g.succeeded,
           g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active, g.duration_max_ms, g.duration_h,
           g.queue_max_ms, g.queue_h, g.llm_calls, l.llm_max_ms, l.llm_h, g.tokens_in, g.tokens_out,
           g.tokens_cached, g.retries
      FROM rg g
      LEFT JOIN rl l ON l.workspace_id = g.workspace_id AND l.agent_id = g.agent_id
                    AND l.provider IS NOT DISTINCT FROM g.provider
                    AND l.endpoint_host IS NOT DISTINCT FROM g.endpoint_host
                    AND l.model IS NOT DISTINCT FROM g.model
    UNION ALL
    SELECT u.workspace_id, u.agent_id, u.agent_name, u.provider, u.endpoint_host, u.model, u.runs, u.succeeded,
           u.failed, u.budget_exceeded, u.cancelled, u.expired, u.active, u.duration_max_ms, u.duration_h,
           u.queue_max_ms, u.queue_h, u.llm_calls, u.llm_max_ms, u.llm_h, u.tokens_in, u.tokens_out,
           u.tokens_cached, u.retries
      FROM agent._run_rollup_visible u
     WHERE (u.month AND u.day >= $4 AND u.day < $5)
        OR (NOT u.month AND u.day >= $6 AND u.day < $4)
        OR (NOT u.month AND u.day >= $5 AND u.day < $7)),
  g AS (
    SELECT p.workspace_id, p.agent_id, p.agent_name, p.provider, p.endpoint_host, p.model,
           sum(p.runs)::bigint AS runs, sum(p.succeeded)::bigint AS succeeded, sum(p.failed)::bigint AS failed,
           sum(p.budget_exceeded)::bigint AS budget_exceeded, sum(p.cancelled)::bigint AS cancelled,
           sum(p.expired)::bigint AS expired, sum(p.active)::bigint AS active,
           max(p.duration_max_ms) AS duration_max_ms, agent._hist_merge(p.duration_h) AS duration_h,
           max(p.queue_max_ms) AS queue_max_ms, agent._hist_merge(p.queue_h) AS queue_h,
           sum(p.llm_calls)::bigint AS llm_calls, max(p.llm_max_ms) AS llm_max_ms,
           agent._hist_merge(p.llm_h) AS llm_h,
           sum(p.tokens_in) AS tokens_in, sum(p.tokens_out) AS tokens_out, sum(p.tokens_cached) AS tokens_cached,
           sum(p.retries)::bigint AS retries
      FROM p
     GROUP BY p.workspace_id, p.agent_id, p.agent_name, p.provider, p.endpoint_host, p.model)
  SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model,
         g.runs, g.succeeded, g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active,
         round((g.failed + g.budget_exceeded + g.expired)::numeric
               / nullif(g.succeeded + g.failed + g.budget_exceeded + g.cancelled + g.expired, 0), 4),
         agent._hist_quantile(g.duration_h, 0.5), agent._hist_quantile(g.duration_h, 0.95), g.duration_max_ms,
         agent._hist_quantile(g.queue_h, 0.5), agent._hist_quantile(g.queue_h, 0.95), g.queue_max_ms,
         g.llm_calls, agent._hist_quantile(g.llm_h, 0.5), agent._hist_quantile(g.llm_h, 0.95), g.llm_max_ms,
         g.tokens_in, g.tokens_out, g.tokens_cached, g.retries
    FROM g
   ORDER BY g.workspace_id, g.agent_id, g.provider, g.endpoint_host, g.model
  $q$ USING run_stats.since, v_end1, v_beg2, v_m1, v_m2, v_d0, v_w;
END
$$;
COMMENT ON FUNCTION agent.run_stats(timestamptz) IS
  'Per workspace, agent, provider (kind and endpoint host) and model, over the runs queued since the given time (default: the last day): runs by status, failure rate (failed, budget_exceeded and expired over ended runs), p50/p95 (histogram quantiles: 32 buckets per doubling of ms, agent._hist_quantile) and max of duration, queue wait and LLM latency (ms), tokens in/out/cached, LLM calls and retries. The whole UTC days up to the rollup''s watermark come from agent.run_rollup (folded by agent.tick), the rest from agent.run_metrics, with the same figures; scoped like agent.run_metrics: the workspaces the caller may read; every workspace for pg_monitor and superusers.';
