-- pg_agents: the rollup behind agent.run_stats (issue 32; docs/operations.md,
-- "run_stats at a year of history").
--
-- agent.run_rollup holds, per workspace, agent, model and UTC day of
-- created_at (day rows), and per UTC month (month rows, merged from the day
-- rows once the month is closed), the figures run_stats shows: runs by
-- status, sums of tokens, LLM calls and retries, maxima, and histograms of
-- duration, queue wait and LLM latency (src/run_rollup.c: 32 buckets per
-- doubling of milliseconds).  run_stats reads the whole days from the first
-- UTC midnight after `since` up to the watermark from it (month rows where a
-- whole month fits) and scans agent.runs for the rest, as before: the
-- partial first day and everything from the watermark on.  Its p50/p95 are
-- histogram quantiles for every window, computed the same way from the rows
-- and from the rollup, so that both give exactly the same figures.
--
-- Kept by agent.tick() (agent._run_rollup_fold), without a trigger on
-- agent.runs and without a lock on it: a day is folded once it is closed,
-- every run queued that day is in a terminal status (a terminal run does
-- not change again), and no transaction of the database that began before
-- the day ended is still open (pg_stat_activity: a run's created_at is its
-- transaction's start, so none can still add a run to that day).  The
-- retention purge (agent.purge_runs) folds again the days it removed runs
-- of; deleting an agent row deletes its rollup rows.  Runs written with a
-- created_at before the watermark (a bulk load, a restore of runs alone) or
-- changed by hand are not seen: agent.reset_run_rollup() folds again.

-- What run_stats still reads from agent.runs (the partial first day, and
-- today) is a narrow range of created_at; runs_times_brin reads every page
-- range that holds one such run, and the runs updated since they were
-- queued (claims, leases, ends) sit scattered over the whole table: a btree
-- reads their pages only
CREATE INDEX runs_created_idx ON agent.runs (created_at);

CREATE TABLE agent.run_rollup (
    workspace_id    text NOT NULL,
    agent_id        bigint NOT NULL,
    model           text,
    day             timestamptz NOT NULL,
    month           boolean NOT NULL DEFAULT false,
    runs            bigint NOT NULL,
    succeeded       bigint NOT NULL,
    failed          bigint NOT NULL,
    budget_exceeded bigint NOT NULL,
    cancelled       bigint NOT NULL,
    expired         bigint NOT NULL,
    active          bigint NOT NULL,
    duration_max_ms double precision,
    duration_h      bigint[],
    queue_max_ms    double precision,
    queue_h         bigint[],
    llm_calls       bigint NOT NULL,
    llm_max_ms      double precision,
    llm_h           bigint[],
    tokens_in       numeric,
    tokens_out      numeric,
    tokens_cached   numeric,
    retries         bigint NOT NULL
);
CREATE INDEX run_rollup_day_idx ON agent.run_rollup (month, day);
CREATE INDEX run_rollup_workspace_idx ON agent.run_rollup (workspace_id, day);
ALTER TABLE agent.run_rollup ENABLE ROW LEVEL SECURITY;
COMMENT ON TABLE agent.run_rollup IS
  'Internal (agent.run_stats): per workspace, agent, model and UTC day of created_at (and per UTC month: month true), the figures of the runs of that day or month, folded by agent.tick() up to agent.run_rollup_state.watermark. No role but the owner reads it (row-level security, no grant); agent._run_rollup_visible shows it scoped.';
COMMENT ON COLUMN agent.run_rollup.workspace_id IS 'Workspace of the runs.';
COMMENT ON COLUMN agent.run_rollup.agent_id IS 'Agent of the runs.';
COMMENT ON COLUMN agent.run_rollup.model IS 'Model of the runs (NULL before a first model call).';
COMMENT ON COLUMN agent.run_rollup.day IS 'UTC midnight starting the day (or, for a month row, the month) of the runs'' created_at.';
COMMENT ON COLUMN agent.run_rollup.month IS 'Whether the row is of a whole UTC month (merged from its day rows).';
COMMENT ON COLUMN agent.run_rollup.runs IS 'Runs.';
COMMENT ON COLUMN agent.run_rollup.succeeded IS 'Runs succeeded.';
COMMENT ON COLUMN agent.run_rollup.failed IS 'Runs failed.';
COMMENT ON COLUMN agent.run_rollup.budget_exceeded IS 'Runs budget_exceeded.';
COMMENT ON COLUMN agent.run_rollup.cancelled IS 'Runs cancelled.';
COMMENT ON COLUMN agent.run_rollup.expired IS 'Runs expired.';
COMMENT ON COLUMN agent.run_rollup.active IS 'Runs active (always 0: a day is folded once all its runs ended).';
COMMENT ON COLUMN agent.run_rollup.duration_max_ms IS 'Longest finished_at - started_at (ms).';
COMMENT ON COLUMN agent.run_rollup.duration_h IS 'Histogram of finished_at - started_at (agent._hist).';
COMMENT ON COLUMN agent.run_rollup.queue_max_ms IS 'Longest started_at - created_at (ms).';
COMMENT ON COLUMN agent.run_rollup.queue_h IS 'Histogram of started_at - created_at (agent._hist).';
COMMENT ON COLUMN agent.run_rollup.llm_calls IS 'LLM steps.';
COMMENT ON COLUMN agent.run_rollup.llm_max_ms IS 'Longest LLM step (ms).';
COMMENT ON COLUMN agent.run_rollup.llm_h IS 'Histogram of the LLM steps'' latencies (agent._hist).';
COMMENT ON COLUMN agent.run_rollup.tokens_in IS 'Sum of tokens_in.';
COMMENT ON COLUMN agent.run_rollup.tokens_out IS 'Sum of tokens_out.';
COMMENT ON COLUMN agent.run_rollup.tokens_cached IS 'Sum of tokens_cached.';
COMMENT ON COLUMN agent.run_rollup.retries IS 'LLM calls retried (error steps with status retry).';

CREATE TABLE agent.run_rollup_state (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    watermark  timestamptz,
    blocked_at timestamptz
);
ALTER TABLE agent.run_rollup_state ENABLE ROW LEVEL SECURITY;
COMMENT ON TABLE agent.run_rollup_state IS
  'Internal (agent.run_stats): at most one row; the UTC days before watermark are folded into agent.run_rollup. No role but the owner reads it.';
COMMENT ON COLUMN agent.run_rollup_state.id IS 'Always true: at most one row.';
COMMENT ON COLUMN agent.run_rollup_state.watermark IS 'UTC midnight before which every day is in agent.run_rollup (NULL: none yet).';
COMMENT ON COLUMN agent.run_rollup_state.blocked_at IS 'Last fold that could fold nothing (an active run or an open transaction holds the next day back); the next try is a minute later.';

-- ---------------------------------------------------------------------------
-- Histograms (src/run_rollup.c)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._hist_add(internal, double precision) RETURNS internal
LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'pg_agents_hist_add';
COMMENT ON FUNCTION agent._hist_add(internal, double precision) IS
  'Internal (agent._hist): adds a latency (ms) to the histogram.';
CREATE FUNCTION agent._hist_merge_add(internal, bigint[]) RETURNS internal
LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'pg_agents_hist_merge_add';
COMMENT ON FUNCTION agent._hist_merge_add(internal, bigint[]) IS
  'Internal (agent._hist_merge): adds a histogram to the histogram.';
CREATE FUNCTION agent._hist_final(internal) RETURNS bigint[]
LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'pg_agents_hist_final';
COMMENT ON FUNCTION agent._hist_final(internal) IS
  'Internal (agent._hist, agent._hist_merge): the histogram as (bucket, count) pairs; NULL when empty.';
CREATE AGGREGATE agent._hist(double precision) (
  SFUNC = agent._hist_add, STYPE = internal, FINALFUNC = agent._hist_final, PARALLEL = SAFE);
COMMENT ON AGGREGATE agent._hist(double precision) IS
  'Histogram of latencies in ms, as a bigint array of (bucket, count) pairs: bucket 0 below 1 ms, else 1 + floor(32 * log2(ms)); NULL values skipped, NULL when none (docs/operations.md).';
CREATE AGGREGATE agent._hist_merge(bigint[]) (
  SFUNC = agent._hist_merge_add, STYPE = internal, FINALFUNC = agent._hist_final, PARALLEL = SAFE);
COMMENT ON AGGREGATE agent._hist_merge(bigint[]) IS
  'The sum of histograms made by agent._hist (NULL when none).';
CREATE FUNCTION agent._hist_quantile(h bigint[], q double precision) RETURNS double precision
LANGUAGE C IMMUTABLE STRICT
AS 'MODULE_PATHNAME', 'pg_agents_hist_quantile';
COMMENT ON FUNCTION agent._hist_quantile(bigint[], double precision) IS
  'The q quantile of a histogram of agent._hist: the bucket holding the ceil(q * n)-th value (nearest rank), reported as 0 for bucket 0 (below 1 ms), else 2^((b - 0.5) / 32) ms, within 1.1 % of every value of the bucket.';

CREATE FUNCTION agent._utc_next_month(m timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT
RETURN ((pg_catalog.date_trunc('month', m, 'UTC') AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
COMMENT ON FUNCTION agent._utc_next_month(timestamptz) IS
  'Internal (agent.run_stats): the UTC midnight starting the month after the UTC month of the given time.';

-- ---------------------------------------------------------------------------
-- The day rows of the runs queued in [from, to) (whole UTC days), of one
-- workspace or of all (NULL): the same expressions as agent.run_metrics
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._run_rollup_compute(p_from timestamptz, p_to timestamptz, p_workspace_id text)
RETURNS SETOF agent.run_rollup
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  WITH m AS MATERIALIZED (
    SELECT r.workspace_id, r.agent_id, r.model, pg_catalog.date_trunc('day', r.created_at, 'UTC') AS day, r.status,
           pg_catalog.date_part('epoch', r.finished_at - r.started_at) * 1000 AS duration_ms,
           pg_catalog.date_part('epoch', r.started_at - r.created_at) * 1000 AS queue_ms,
           r.tokens_in, r.tokens_out, r.tokens_cached,
           coalesce(s.llm_calls, 0) AS llm_calls, s.llm_ms, coalesce(s.retries, 0) AS retries
      FROM agent.runs r
      LEFT JOIN LATERAL (
        SELECT count(*) FILTER (WHERE st.kind = 'llm') AS llm_calls,
               pg_catalog.array_agg(pg_catalog.date_part('epoch', st.finished_at - st.started_at) * 1000)
                 FILTER (WHERE st.kind = 'llm' AND st.finished_at IS NOT NULL) AS llm_ms,
               count(*) FILTER (WHERE st.kind = 'error' AND st.status = 'retry') AS retries
          FROM agent.run_steps st
         WHERE st.workspace_id = r.workspace_id AND st.run_id = r.id AND st.kind IN ('llm', 'error')) s ON true
     WHERE r.created_at >= p_from AND r.created_at < p_to
       AND (p_workspace_id IS NULL OR r.workspace_id = p_workspace_id)),
  g AS (
    SELECT m.workspace_id, m.agent_id, m.model, m.day,
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
      FROM m GROUP BY 1, 2, 3, 4),
  l AS (
    SELECT m.workspace_id, m.agent_id, m.model, m.day, max(x.ms) AS llm_max_ms, agent._hist(x.ms) AS llm_h
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS x(ms)
     GROUP BY 1, 2, 3, 4)
  SELECT g.workspace_id, g.agent_id, g.model, g.day, false, g.runs, g.succeeded, g.failed, g.budget_exceeded,
         g.cancelled, g.expired, g.active, g.duration_max_ms, g.duration_h, g.queue_max_ms, g.queue_h,
         g.llm_calls, l.llm_max_ms, l.llm_h, g.tokens_in, g.tokens_out, g.tokens_cached, g.retries
    FROM g
    LEFT JOIN l ON l.workspace_id = g.workspace_id AND l.agent_id = g.agent_id
               AND l.model IS NOT DISTINCT FROM g.model AND l.day = g.day;
END;
REVOKE ALL ON FUNCTION agent._run_rollup_compute(timestamptz, timestamptz, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._run_rollup_compute(timestamptz, timestamptz, text) IS
  'Internal (agent._run_rollup_fold): the day rows of agent.run_rollup for the runs queued in [from, to), of one workspace or of all (NULL).';

-- the month rows of the UTC months given, of one workspace or of all
-- (NULL), merged again from their day rows
CREATE FUNCTION agent._run_rollup_months(p_workspace_id text, p_months timestamptz[]) RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  DELETE FROM agent.run_rollup u
   WHERE u.month AND u.day = ANY (p_months) AND (p_workspace_id IS NULL OR u.workspace_id = p_workspace_id);
  INSERT INTO agent.run_rollup (workspace_id, agent_id, model, day, month, runs, succeeded, failed, budget_exceeded,
                                cancelled, expired, active, duration_max_ms, duration_h, queue_max_ms, queue_h,
                                llm_calls, llm_max_ms, llm_h, tokens_in, tokens_out, tokens_cached, retries)
  SELECT u.workspace_id, u.agent_id, u.model, pg_catalog.date_trunc('month', u.day, 'UTC'), true,
         sum(u.runs)::bigint, sum(u.succeeded)::bigint, sum(u.failed)::bigint, sum(u.budget_exceeded)::bigint,
         sum(u.cancelled)::bigint, sum(u.expired)::bigint, sum(u.active)::bigint,
         max(u.duration_max_ms), agent._hist_merge(u.duration_h), max(u.queue_max_ms), agent._hist_merge(u.queue_h),
         sum(u.llm_calls)::bigint, max(u.llm_max_ms), agent._hist_merge(u.llm_h),
         sum(u.tokens_in), sum(u.tokens_out), sum(u.tokens_cached), sum(u.retries)::bigint
    FROM agent.run_rollup u
   WHERE NOT u.month AND pg_catalog.date_trunc('month', u.day, 'UTC') = ANY (p_months)
     AND (p_workspace_id IS NULL OR u.workspace_id = p_workspace_id)
   GROUP BY u.workspace_id, u.agent_id, u.model, pg_catalog.date_trunc('month', u.day, 'UTC');
END;
REVOKE ALL ON FUNCTION agent._run_rollup_months(text, timestamptz[]) FROM PUBLIC;
COMMENT ON FUNCTION agent._run_rollup_months(text, timestamptz[]) IS
  'Internal (agent._run_rollup_fold, agent._run_rollup_redo): the month rows of agent.run_rollup of the given UTC months (their first midnights), of one workspace or of all (NULL), merged again from their day rows.';

-- ---------------------------------------------------------------------------
-- The fold, called by agent.tick(): the closed days after the watermark, at
-- most max_days a call, 7 by default (a first fold of a year of history is spread over
-- ticks), up to the first of: today (UTC), the day the oldest open
-- transaction of the database began, the day of the oldest active run.
-- One fold at a time (agent._lock); no lock on agent.runs.
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._run_rollup_fold(p_max_days integer DEFAULT 7) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_today timestamptz := pg_catalog.date_trunc('day', pg_catalog.now(), 'UTC');
  v_w     timestamptz;
  v_b     timestamptz;
  v_to    timestamptz;
  v_x     timestamptz;
  v_m     timestamptz;
  v_ms    timestamptz[] := '{}';
BEGIN
  SELECT s.watermark, s.blocked_at INTO v_w, v_b FROM agent.run_rollup_state s WHERE s.id;
  IF v_w >= v_today OR v_b > pg_catalog.now() - interval '1 minute' THEN
    RETURN 0;
  END IF;
  IF NOT agent._lock('tick', 'run_rollup', false) THEN
    RETURN 0;
  END IF;
  BEGIN
    SELECT s.watermark INTO v_w FROM agent.run_rollup_state s WHERE s.id;
    IF v_w IS NULL THEN
      SELECT pg_catalog.date_trunc('day', min(r.created_at), 'UTC') INTO v_w FROM agent.runs r;
      IF v_w IS NULL THEN
        RETURN 0;   -- no run yet
      END IF;
    END IF;
    v_to := least(v_today, v_w + p_max_days * interval '24 hours');
    -- no transaction that began before the end of a folded day is open
    -- (read first: a transaction gone from it has committed, and the scans
    -- below see it); a prepared one (of unknown start) holds every day back
    SELECT least(v_to, pg_catalog.date_trunc('day', min(a.xact_start), 'UTC')) INTO v_x
      FROM pg_catalog.pg_stat_activity a
     WHERE a.datid = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
       AND a.xact_start IS NOT NULL;
    v_to := coalesce(v_x, v_to);
    -- (an owner that may not see other roles' xact_start folds nothing)
    IF EXISTS (SELECT FROM pg_catalog.pg_prepared_xacts p WHERE p.database = pg_catalog.current_database())
       OR NOT pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE') THEN
      v_to := v_w;
    END IF;
    -- every run of a folded day has ended
    SELECT pg_catalog.date_trunc('day', min(r.created_at), 'UTC') INTO v_x
      FROM agent.runs r
     WHERE r.created_at >= v_w AND r.created_at < v_to
       AND r.status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children');
    v_to := least(v_to, coalesce(v_x, v_to));
    IF v_to <= v_w THEN
      INSERT INTO agent.run_rollup_state (id, watermark, blocked_at) VALUES (true, v_w, pg_catalog.now())
        ON CONFLICT (id) DO UPDATE SET watermark = excluded.watermark, blocked_at = excluded.blocked_at;
      RETURN 0;
    END IF;
    DELETE FROM agent.run_rollup u WHERE NOT u.month AND u.day >= v_w AND u.day < v_to;
    INSERT INTO agent.run_rollup (workspace_id, agent_id, model, day, month, runs, succeeded, failed, budget_exceeded,
                                  cancelled, expired, active, duration_max_ms, duration_h, queue_max_ms, queue_h,
                                  llm_calls, llm_max_ms, llm_h, tokens_in, tokens_out, tokens_cached, retries)
    SELECT c.workspace_id, c.agent_id, c.model, c.day, c.month, c.runs, c.succeeded, c.failed, c.budget_exceeded,
           c.cancelled, c.expired, c.active, c.duration_max_ms, c.duration_h, c.queue_max_ms, c.queue_h,
           c.llm_calls, c.llm_max_ms, c.llm_h, c.tokens_in, c.tokens_out, c.tokens_cached, c.retries
      FROM agent._run_rollup_compute(v_w, v_to, NULL) c;
    -- the months this fold closed
    v_m := pg_catalog.date_trunc('month', v_w, 'UTC');
    WHILE agent._utc_next_month(v_m) <= v_to LOOP
      v_ms := v_ms || v_m;
      v_m := agent._utc_next_month(v_m);
    END LOOP;
    IF pg_catalog.cardinality(v_ms) > 0 THEN
      PERFORM agent._run_rollup_months(NULL, v_ms);
    END IF;
    INSERT INTO agent.run_rollup_state (id, watermark, blocked_at) VALUES (true, v_to, NULL)
      ON CONFLICT (id) DO UPDATE SET watermark = excluded.watermark, blocked_at = excluded.blocked_at;
    RETURN (pg_catalog.date_part('epoch', v_to - v_w) / 86400)::integer;
  EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'pg_agents: the rollup of run_stats could not be folded: %', SQLERRM;
    RETURN -1;
  END;
END
$$;
REVOKE ALL ON FUNCTION agent._run_rollup_fold(integer) FROM PUBLIC;
COMMENT ON FUNCTION agent._run_rollup_fold(integer) IS
  'Internal (agent.tick): folds into agent.run_rollup the closed UTC days after the watermark (at most max_days) whose runs all ended and to which no open transaction can add a run, and the months they close; returns the days folded (0: none, -1: an error, logged as a warning). Once blocked, tries again a minute later.';

-- the day rows of one workspace folded again (the purge removed runs of
-- them), and their month rows
CREATE FUNCTION agent._run_rollup_redo(p_workspace_id text, p_days timestamptz[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_w  timestamptz;
  v_d  timestamptz;
  v_ms timestamptz[];
BEGIN
  PERFORM agent._lock('tick', 'run_rollup', true);
  SELECT s.watermark INTO v_w FROM agent.run_rollup_state s WHERE s.id;
  IF v_w IS NULL OR p_days IS NULL THEN
    RETURN;
  END IF;
  FOR v_d IN SELECT DISTINCT pg_catalog.date_trunc('day', x, 'UTC') FROM unnest(p_days) x
              WHERE x < v_w ORDER BY 1 LOOP
    DELETE FROM agent.run_rollup u WHERE u.workspace_id = p_workspace_id AND NOT u.month AND u.day = v_d;
    INSERT INTO agent.run_rollup (workspace_id, agent_id, model, day, month, runs, succeeded, failed, budget_exceeded,
                                  cancelled, expired, active, duration_max_ms, duration_h, queue_max_ms, queue_h,
                                  llm_calls, llm_max_ms, llm_h, tokens_in, tokens_out, tokens_cached, retries)
    SELECT c.workspace_id, c.agent_id, c.model, c.day, c.month, c.runs, c.succeeded, c.failed, c.budget_exceeded,
           c.cancelled, c.expired, c.active, c.duration_max_ms, c.duration_h, c.queue_max_ms, c.queue_h,
           c.llm_calls, c.llm_max_ms, c.llm_h, c.tokens_in, c.tokens_out, c.tokens_cached, c.retries
      FROM agent._run_rollup_compute(v_d, v_d + interval '24 hours', p_workspace_id) c;
  END LOOP;
  v_ms := ARRAY(SELECT DISTINCT pg_catalog.date_trunc('month', x, 'UTC') FROM unnest(p_days) x
                 WHERE agent._utc_next_month(x) <= v_w);
  IF pg_catalog.cardinality(v_ms) > 0 THEN
    PERFORM agent._run_rollup_months(p_workspace_id, v_ms);
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._run_rollup_redo(text, timestamptz[]) FROM PUBLIC;
COMMENT ON FUNCTION agent._run_rollup_redo(text, timestamptz[]) IS
  'Internal (agent.purge_runs): folds again the given UTC days before the watermark of one workspace, and their closed months.';

CREATE FUNCTION agent.reset_run_rollup() RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM agent._lock('tick', 'run_rollup', true);
  DELETE FROM agent.run_rollup;
  DELETE FROM agent.run_rollup_state;
END
$$;
REVOKE ALL ON FUNCTION agent.reset_run_rollup() FROM PUBLIC;
COMMENT ON FUNCTION agent.reset_run_rollup() IS
  'Empties the rollup of agent.run_stats (agent.run_rollup): the ticks fold it again from agent.runs (7 days a tick); run_stats scans agent.runs meanwhile, exactly. Run it after writing runs with a created_at before the watermark (a bulk load, a restore of runs alone) or changing ended runs by hand. Superuser (or the owner) only.';

CREATE FUNCTION agent._run_rollup_watermark() RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
RETURN (SELECT s.watermark FROM agent.run_rollup_state s WHERE s.id);
COMMENT ON FUNCTION agent._run_rollup_watermark() IS
  'Internal (agent.run_stats): the UTC midnight before which agent.run_rollup holds every day (NULL: none yet).';

-- an agent row deleted: its rollup rows go with it
CREATE FUNCTION agent._run_rollup_forget_agents() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  DELETE FROM agent.run_rollup u USING rollup_gone g WHERE u.workspace_id = g.workspace_id AND u.agent_id = g.id;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._run_rollup_forget_agents() IS
  'Internal trigger (statement level) on agent.agents: the rollup rows of the deleted agents are deleted.';
CREATE TRIGGER agents_run_rollup_forget AFTER DELETE ON agent.agents
  REFERENCING OLD TABLE AS rollup_gone FOR EACH STATEMENT EXECUTE FUNCTION agent._run_rollup_forget_agents();
COMMENT ON TRIGGER agents_run_rollup_forget ON agent.agents IS
  'Deletes the rollup rows of run_stats of the deleted agents (agent._run_rollup_forget_agents).';

-- What agent.run_stats reads of the rollup, scoped like agent.run_metrics,
-- with the agent's name, provider and endpoint host as they are now
CREATE VIEW agent._run_rollup_visible WITH (security_barrier) AS
  SELECT u.workspace_id, u.agent_id, a.agent_name, a.provider, a.endpoint_host,
         u.model, u.day, u.month, u.runs, u.succeeded, u.failed, u.budget_exceeded, u.cancelled, u.expired,
         u.active, u.duration_max_ms, u.duration_h, u.queue_max_ms, u.queue_h, u.llm_calls, u.llm_max_ms, u.llm_h,
         u.tokens_in, u.tokens_out, u.tokens_cached, u.retries
    FROM agent.run_rollup u
    -- computed once per agent (OFFSET 0: not once per rollup row)
    JOIN (SELECT a.workspace_id, a.id, a.name AS agent_name,
                 coalesce(a.scope ->> 'llm_provider', nullif(pg_catalog.current_setting('pg_agents.llm_provider', true), ''),
                          'openai') AS provider,
                 pg_catalog.substring(coalesce(a.scope ->> 'llm_url', pg_catalog.current_setting('pg_agents.llm_url', true)),
                                      '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\[[^]/]*\]|[^/:?#]*)') AS endpoint_host
            FROM agent.agents a OFFSET 0) a ON a.workspace_id = u.workspace_id AND a.id = u.agent_id
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (u.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent._run_rollup_visible IS
  'Internal (agent.run_stats): the rows of agent.run_rollup with the agent''s name, provider and endpoint host; scoped like agent.run_metrics (the workspaces the querying role may read; every workspace for pg_monitor and superusers).';
DO $$
DECLARE
  c record;
BEGIN
  -- the view's columns: those of agent.run_rollup, and of agent.run_metrics
  -- for the agent's name, provider and endpoint host
  FOR c IN
    SELECT a.attname, coalesce(pg_catalog.col_description('agent.run_rollup'::pg_catalog.regclass, r.attnum),
                               pg_catalog.col_description('agent.run_metrics'::pg_catalog.regclass, m.attnum)) AS d
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.pg_attribute r ON r.attrelid = 'agent.run_rollup'::pg_catalog.regclass AND r.attname = a.attname
      LEFT JOIN pg_catalog.pg_attribute m ON m.attrelid = 'agent.run_metrics'::pg_catalog.regclass AND m.attname = a.attname
     WHERE a.attrelid = 'agent._run_rollup_visible'::pg_catalog.regclass AND a.attnum > 0
     ORDER BY a.attnum
  LOOP
    EXECUTE pg_catalog.format('COMMENT ON COLUMN agent._run_rollup_visible.%I IS %L', c.attname, c.d);
  END LOOP;
END
$$;
