-- agent.run_stats reads the daily rollup of sql/src/955_rollup.sql (992_rollup.include; issue 32)
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
  v_w timestamptz := agent._run_rollup_watermark();
  -- the first UTC midnight at or after since: whole days from there to the
  -- watermark come from the rollup (sql/src/955_rollup.sql)
  v_d1 timestamptz := pg_catalog.date_trunc('day', run_stats.since, 'UTC');
  v_m1 timestamptz;   -- the first UTC month start at or after v_d1
  v_mw timestamptz;   -- the month of the watermark: whole months are [v_m1, v_mw)
BEGIN
  IF v_d1 < run_stats.since THEN
    v_d1 := v_d1 + interval '24 hours';
  END IF;
  v_m1 := pg_catalog.date_trunc('month', v_d1, 'UTC');
  IF v_m1 < v_d1 THEN
    v_m1 := agent._utc_next_month(v_m1);
  END IF;
  v_mw := pg_catalog.date_trunc('month', v_w, 'UTC');
  IF v_m1 >= v_mw THEN
    v_m1 := v_w;   -- no whole month: days only
    v_mw := v_w;
  END IF;
  IF v_w IS NULL OR v_d1 IS NULL OR v_d1 >= v_w THEN
    -- no whole day of the rollup in the window: every run scanned, exact
    -- percentiles
    RETURN QUERY
  WITH m AS MATERIALIZED (
    SELECT * FROM agent.run_metrics m WHERE m.created_at >= run_stats.since),
  g AS (
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model,
           count(*) AS runs,
           count(*) FILTER (WHERE m.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE m.status = 'failed') AS failed,
           count(*) FILTER (WHERE m.status = 'budget_exceeded') AS budget_exceeded,
           count(*) FILTER (WHERE m.status = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE m.status = 'expired') AS expired,
           count(*) FILTER (WHERE m.status IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children')) AS active,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY m.duration_ms) AS duration_p50_ms,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY m.duration_ms) AS duration_p95_ms,
           max(m.duration_ms) AS duration_max_ms,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY m.queue_ms) AS queue_p50_ms,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY m.queue_ms) AS queue_p95_ms,
           max(m.queue_ms) AS queue_max_ms,
           sum(m.llm_calls)::bigint AS llm_calls,
           sum(m.tokens_in) AS tokens_in, sum(m.tokens_out) AS tokens_out, sum(m.tokens_cached) AS tokens_cached,
           sum(m.retries)::bigint AS retries
      FROM m
     GROUP BY m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model),
  l AS (
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY x.ms) AS llm_p50_ms,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY x.ms) AS llm_p95_ms,
           max(x.ms) AS llm_max_ms
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS x(ms)
     GROUP BY m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model)
  SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model,
         g.runs, g.succeeded, g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active,
         round((g.failed + g.budget_exceeded + g.expired)::numeric
               / nullif(g.succeeded + g.failed + g.budget_exceeded + g.cancelled + g.expired, 0), 4),
         g.duration_p50_ms, g.duration_p95_ms, g.duration_max_ms,
         g.queue_p50_ms, g.queue_p95_ms, g.queue_max_ms,
         g.llm_calls, l.llm_p50_ms, l.llm_p95_ms, l.llm_max_ms,
         g.tokens_in, g.tokens_out, g.tokens_cached, g.retries
    FROM g
    LEFT JOIN l ON l.workspace_id = g.workspace_id AND l.agent_id = g.agent_id
               AND l.provider IS NOT DISTINCT FROM g.provider
               AND l.endpoint_host IS NOT DISTINCT FROM g.endpoint_host
               AND l.model IS NOT DISTINCT FROM g.model
   ORDER BY g.workspace_id, g.agent_id, g.provider, g.endpoint_host, g.model;
    RETURN;
  END IF;
  -- the rollup's whole days, the runs of the partial first day, of the days
  -- after the watermark and of the dirty days; percentiles from histograms
  -- (within 4.4 %: docs/operations.md)
  RETURN QUERY
  WITH m AS MATERIALIZED (
    SELECT * FROM agent.run_metrics m WHERE m.created_at >= run_stats.since AND m.created_at < v_d1
    UNION ALL
    SELECT * FROM agent.run_metrics m WHERE m.created_at >= v_w
    UNION ALL
    -- each dirty day on its own (OFFSET 0: a scan of that day's range, not
    -- of every run joined to the few dirty days)
    SELECT m.* FROM agent._run_rollup_dirty_visible x
     CROSS JOIN LATERAL (SELECT * FROM agent.run_metrics m
                          WHERE m.workspace_id = x.workspace_id
                            AND m.created_at >= x.day AND m.created_at < x.day + interval '24 hours' OFFSET 0) m
     WHERE x.day >= v_d1 AND x.day < v_w),
  -- whole months, the days before and after them, and the days of a month
  -- with a dirty day (its month row left out by the view)
  u AS MATERIALIZED (
    SELECT * FROM agent._run_rollup_visible u WHERE u.month AND u.day >= v_m1 AND u.day < v_mw
    UNION ALL
    SELECT * FROM agent._run_rollup_visible u
     WHERE NOT u.month AND u.day >= v_d1 AND (u.day < v_m1 OR u.day >= v_mw)
    UNION ALL
    SELECT u.* FROM (SELECT DISTINCT x.workspace_id, pg_catalog.date_trunc('month', x.day, 'UTC') AS m
                       FROM agent._run_rollup_dirty_visible x WHERE x.day >= v_m1 AND x.day < v_mw) x
     CROSS JOIN LATERAL (SELECT * FROM agent._run_rollup_visible u
                          WHERE NOT u.month AND u.workspace_id = x.workspace_id
                            AND u.day >= x.m AND u.day < agent._utc_next_month(x.m) OFFSET 0) u),
  g0 AS (
    SELECT m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model,
           count(*) AS runs,
           count(*) FILTER (WHERE m.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE m.status = 'failed') AS failed,
           count(*) FILTER (WHERE m.status = 'budget_exceeded') AS budget_exceeded,
           count(*) FILTER (WHERE m.status = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE m.status = 'expired') AS expired,
           count(*) FILTER (WHERE m.status IN ('queued', 'running', 'waiting_approval', 'waiting_input',
                                               'waiting_children')) AS active,
           max(m.duration_ms) AS duration_max_ms, max(m.queue_ms) AS queue_max_ms,
           max((SELECT max(x.ms) FROM unnest(m.llm_ms) AS x(ms))) AS llm_max_ms,
           sum(m.llm_calls)::bigint AS llm_calls,
           sum(m.tokens_in) AS tokens_in, sum(m.tokens_out) AS tokens_out, sum(m.tokens_cached) AS tokens_cached,
           sum(m.retries)::bigint AS retries
      FROM m
     GROUP BY m.workspace_id, m.agent_id, m.agent_name, m.provider, m.endpoint_host, m.model
    UNION ALL
    SELECT u.workspace_id, u.agent_id, u.agent_name, u.provider, u.endpoint_host, u.model,
           u.runs, u.succeeded, u.failed, u.budget_exceeded, u.cancelled, u.expired, u.active,
           u.duration_max_ms, u.queue_max_ms, u.llm_max_ms, u.llm_calls,
           u.tokens_in, u.tokens_out, u.tokens_cached, u.retries
      FROM u),
  g AS (
    SELECT g0.workspace_id, g0.agent_id, g0.agent_name, g0.provider, g0.endpoint_host, g0.model,
           sum(g0.runs)::bigint AS runs, sum(g0.succeeded)::bigint AS succeeded, sum(g0.failed)::bigint AS failed,
           sum(g0.budget_exceeded)::bigint AS budget_exceeded, sum(g0.cancelled)::bigint AS cancelled,
           sum(g0.expired)::bigint AS expired, sum(g0.active)::bigint AS active,
           max(g0.duration_max_ms) AS duration_max_ms, max(g0.queue_max_ms) AS queue_max_ms,
           max(g0.llm_max_ms) AS llm_max_ms, sum(g0.llm_calls)::bigint AS llm_calls,
           sum(g0.tokens_in) AS tokens_in, sum(g0.tokens_out) AS tokens_out, sum(g0.tokens_cached) AS tokens_cached,
           sum(g0.retries)::bigint AS retries
      FROM g0
     GROUP BY g0.workspace_id, g0.agent_id, g0.agent_name, g0.provider, g0.endpoint_host, g0.model),
  hb AS (
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model, 1 AS k,
           agent._ms_bucket(m.duration_ms) AS b, 1::bigint AS c
      FROM m WHERE m.duration_ms IS NOT NULL
    UNION ALL
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model, 2, agent._ms_bucket(m.queue_ms), 1
      FROM m WHERE m.queue_ms IS NOT NULL
    UNION ALL
    SELECT m.workspace_id, m.agent_id, m.provider, m.endpoint_host, m.model, 3, agent._ms_bucket(x.ms), 1
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS x(ms)
    UNION ALL
    SELECT u.workspace_id, u.agent_id, u.provider, u.endpoint_host, u.model, 1, x.b, x.c
      FROM u CROSS JOIN LATERAL unnest(u.duration_b, u.duration_c) AS x(b, c)
    UNION ALL
    SELECT u.workspace_id, u.agent_id, u.provider, u.endpoint_host, u.model, 2, x.b, x.c
      FROM u CROSS JOIN LATERAL unnest(u.queue_b, u.queue_c) AS x(b, c)
    UNION ALL
    SELECT u.workspace_id, u.agent_id, u.provider, u.endpoint_host, u.model, 3, x.b, x.c
      FROM u CROSS JOIN LATERAL unnest(u.llm_b, u.llm_c) AS x(b, c)),
  hs AS (
    SELECT hb.workspace_id, hb.agent_id, hb.provider, hb.endpoint_host, hb.model, hb.k, hb.b, sum(hb.c) AS c
      FROM hb GROUP BY 1, 2, 3, 4, 5, 6, 7),
  hc AS (
    SELECT hs.*,
           sum(hs.c) OVER (PARTITION BY hs.workspace_id, hs.agent_id, hs.provider, hs.endpoint_host, hs.model, hs.k
                           ORDER BY hs.b) AS cum,
           sum(hs.c) OVER (PARTITION BY hs.workspace_id, hs.agent_id, hs.provider, hs.endpoint_host, hs.model, hs.k) AS n
      FROM hs),
  -- percentile_cont over the bucket values: rank r = p (n - 1) from 0, the
  -- buckets of the values at floor(r) and ceil(r), interpolated
  pr AS (
    SELECT hc.workspace_id, hc.agent_id, hc.provider, hc.endpoint_host, hc.model, hc.k, q.p,
           min(hc.b) FILTER (WHERE hc.cum > pg_catalog.floor(q.p * (hc.n - 1))) AS b_lo,
           min(hc.b) FILTER (WHERE hc.cum > pg_catalog.ceil(q.p * (hc.n - 1))) AS b_hi,
           max(q.p * (hc.n - 1) - pg_catalog.floor(q.p * (hc.n - 1))) AS frac
      FROM hc CROSS JOIN (VALUES (0.5::numeric), (0.95::numeric)) AS q(p)
     GROUP BY 1, 2, 3, 4, 5, 6, 7),
  pv AS (
    SELECT pr.workspace_id, pr.agent_id, pr.provider, pr.endpoint_host, pr.model,
           max(v.v) FILTER (WHERE pr.k = 1 AND pr.p = 0.5) AS duration_p50_ms,
           max(v.v) FILTER (WHERE pr.k = 1 AND pr.p = 0.95) AS duration_p95_ms,
           max(v.v) FILTER (WHERE pr.k = 2 AND pr.p = 0.5) AS queue_p50_ms,
           max(v.v) FILTER (WHERE pr.k = 2 AND pr.p = 0.95) AS queue_p95_ms,
           max(v.v) FILTER (WHERE pr.k = 3 AND pr.p = 0.5) AS llm_p50_ms,
           max(v.v) FILTER (WHERE pr.k = 3 AND pr.p = 0.95) AS llm_p95_ms
      FROM pr
     CROSS JOIN LATERAL (SELECT agent._ms_bucket_value(pr.b_lo)
                                + pr.frac::double precision
                                  * (agent._ms_bucket_value(pr.b_hi) - agent._ms_bucket_value(pr.b_lo)) AS v) v
     GROUP BY 1, 2, 3, 4, 5)
  SELECT g.workspace_id, g.agent_id, g.agent_name, g.provider, g.endpoint_host, g.model,
         g.runs, g.succeeded, g.failed, g.budget_exceeded, g.cancelled, g.expired, g.active,
         round((g.failed + g.budget_exceeded + g.expired)::numeric
               / nullif(g.succeeded + g.failed + g.budget_exceeded + g.cancelled + g.expired, 0), 4),
         pv.duration_p50_ms, pv.duration_p95_ms, g.duration_max_ms,
         pv.queue_p50_ms, pv.queue_p95_ms, g.queue_max_ms,
         g.llm_calls, pv.llm_p50_ms, pv.llm_p95_ms, g.llm_max_ms,
         g.tokens_in, g.tokens_out, g.tokens_cached, g.retries
    FROM g
    LEFT JOIN pv ON pv.workspace_id = g.workspace_id AND pv.agent_id = g.agent_id
                AND pv.provider IS NOT DISTINCT FROM g.provider
                AND pv.endpoint_host IS NOT DISTINCT FROM g.endpoint_host
                AND pv.model IS NOT DISTINCT FROM g.model
   ORDER BY g.workspace_id, g.agent_id, g.provider, g.endpoint_host, g.model;
END
$$;
COMMENT ON FUNCTION agent.run_stats(timestamptz) IS
  'Per workspace, agent, provider (kind and endpoint host) and model, over the runs queued since the given time (default: the last day): runs by status, failure rate (failed, budget_exceeded and expired over ended runs), p50/p95/max of duration, queue wait and LLM latency (ms), tokens in/out/cached, LLM calls and retries. Computed from agent.run_metrics and the daily rollup (agent.run_rollup, folded by agent.tick), so scoped like it: the workspaces the caller may read; every workspace for pg_monitor and superusers. Counts, sums and maxima are exact; percentiles are exact when the window holds no whole folded day, else computed from histograms (8 buckets per doubling: within 4.4 %, values under 1 ms reported as 0.5 ms).';

