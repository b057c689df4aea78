-- pg_agents: the daily rollup behind agent.run_stats (issue 32;
-- docs/operations.md, "run_stats at a year of history").
--
-- agent.run_rollup holds, per workspace, agent, model and UTC day of
-- created_at, the figures run_stats shows: runs by status, maxima, sums of
-- tokens, LLM calls and retries, and histograms of duration, queue wait and
-- LLM latency (8 buckets per doubling of milliseconds).  agent.tick() folds
-- every closed day into it (agent._run_rollup_fold) up to the watermark of
-- agent.run_rollup_state; run_stats reads the whole days before the
-- watermark from it and scans agent.runs for the rest (the partial first
-- day, the days after the watermark, and the days marked dirty).
--
-- Exact against agent.runs: a statement that inserts, updates or deletes
-- runs (or steps of runs) of a day before today marks that (workspace, day)
-- dirty in agent.run_rollup_dirty in the same transaction; run_stats scans a
-- dirty day from agent.runs and the next tick folds it again.  The fold
-- takes a SHARE lock on agent.runs first, so that no writer that began before
-- it is still uncommitted; a writer after it marks (clock_timestamp()).
--
-- Not dumped: the three tables are rebuilt from agent.runs by the ticks
-- after a restore (sql/src/975_dump.sql names them); until then run_stats
-- scans agent.runs, exactly as before.

CREATE TABLE agent.run_rollup (
    workspace_id    text NOT NULL,
    agent_id        bigint NOT NULL,
    model           text,
    day             timestamptz NOT NULL,
    runs            bigint NOT NULL,
    succeeded       bigint NOT NULL,
    failed          bigint NOT NULL,
    budget_exceeded bigint NOT NULL,
    cancelled       bigint NOT NULL,
    expired         bigint NOT NULL,
    active          bigint NOT NULL,
    duration_max_ms double precision,
    queue_max_ms    double precision,
    llm_max_ms      double precision,
    llm_calls       bigint NOT NULL,
    tokens_in       numeric,
    tokens_out      numeric,
    tokens_cached   numeric,
    retries         bigint NOT NULL,
    -- histograms: bucket numbers (agent._ms_bucket) and their counts
    duration_b      smallint[] NOT NULL,
    duration_c      bigint[] NOT NULL,
    queue_b         smallint[] NOT NULL,
    queue_c         bigint[] NOT NULL,
    llm_b           smallint[] NOT NULL,
    llm_c           bigint[] NOT NULL,
    -- a row of a whole UTC month (day is its first day), merged from the
    -- day rows once the month is before the watermark
    month           boolean NOT NULL DEFAULT false
);
CREATE INDEX run_rollup_day_idx ON agent.run_rollup (month, day, workspace_id);
ALTER TABLE agent.run_rollup ENABLE ROW LEVEL SECURITY;
COMMENT ON TABLE agent.run_rollup IS
  'Internal (agent.run_stats): per workspace, agent, model and UTC day (and month: month true) of created_at, the figures of the runs of that day, folded by agent.tick() up to agent.run_rollup_state.watermark. Not dumped: rebuilt from agent.runs after a restore. No role but the owner reads it (row-level security, no grant).';

CREATE TABLE agent.run_rollup_state (
    id        boolean PRIMARY KEY DEFAULT true CHECK (id),
    watermark timestamptz,
    folded_at timestamptz
);
ALTER TABLE agent.run_rollup_state ENABLE ROW LEVEL SECURITY;
INSERT INTO agent.run_rollup_state (id) VALUES (true);
COMMENT ON TABLE agent.run_rollup_state IS
  'Internal (agent.run_stats): the days before watermark (a UTC midnight; NULL: none) are in agent.run_rollup, except the dirty ones.';

CREATE TABLE agent.run_rollup_dirty (
    workspace_id text NOT NULL,
    day          timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, day)
);
ALTER TABLE agent.run_rollup_dirty ENABLE ROW LEVEL SECURITY;
COMMENT ON TABLE agent.run_rollup_dirty IS
  'Internal (agent.run_stats): (workspace, UTC day) whose runs changed after the day ended; run_stats scans them from agent.runs until the next fold.';

-- the bucket of a latency: 0 below 1 ms, else 1 + floor(8 * log2(ms)),
-- capped at 255 (about 3.9 days and more)
CREATE FUNCTION agent._ms_bucket(ms double precision) RETURNS smallint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN ms < 1 THEN 0
            ELSE least(255, 1 + pg_catalog.floor(8 * pg_catalog.ln(ms) / pg_catalog.ln(2::double precision)))::smallint END;
COMMENT ON FUNCTION agent._ms_bucket(double precision) IS
  'Internal (agent.run_stats): histogram bucket of a latency in ms: 0 below 1 ms, else 1 + floor(8 * log2(ms)), at most 255.';

-- the middle (geometric) of a bucket, the value run_stats reports for it
CREATE FUNCTION agent._ms_bucket_value(b smallint) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN b = 0 THEN 0.5 ELSE pg_catalog.power(2::double precision, (b - 0.5) / 8.0) END;
COMMENT ON FUNCTION agent._ms_bucket_value(smallint) IS
  'Internal (agent.run_stats): the value reported for a bucket: 0.5 ms for bucket 0, else 2^((b - 0.5) / 8), within 4.4 % of every value of the bucket.';

-- the rows of agent.run_rollup for the runs of [p_from, p_to) (whole UTC
-- days), of one workspace or all (NULL)
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
  lm AS MATERIALIZED (
    SELECT m.workspace_id, m.agent_id, m.model, m.day, u.ms
      FROM m CROSS JOIN LATERAL unnest(m.llm_ms) AS u(ms)),
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
           max(m.duration_ms) AS duration_max_ms, max(m.queue_ms) AS queue_max_ms,
           sum(m.llm_calls)::bigint AS llm_calls,
           sum(m.tokens_in) AS tokens_in, sum(m.tokens_out) AS tokens_out, sum(m.tokens_cached) AS tokens_cached,
           sum(m.retries)::bigint AS retries
      FROM m GROUP BY 1, 2, 3, 4),
  h AS (
    SELECT x.workspace_id, x.agent_id, x.model, x.day, x.k, x.b, count(*) AS c
      FROM (SELECT m.workspace_id, m.agent_id, m.model, m.day, 1 AS k, agent._ms_bucket(m.duration_ms) AS b
              FROM m WHERE m.duration_ms IS NOT NULL
            UNION ALL
            SELECT m.workspace_id, m.agent_id, m.model, m.day, 2, agent._ms_bucket(m.queue_ms)
              FROM m WHERE m.queue_ms IS NOT NULL
            UNION ALL
            SELECT lm.workspace_id, lm.agent_id, lm.model, lm.day, 3, agent._ms_bucket(lm.ms)
              FROM lm) x
     GROUP BY 1, 2, 3, 4, 5, 6),
  ha AS (
    SELECT h.workspace_id, h.agent_id, h.model, h.day,
           coalesce(array_agg(h.b ORDER BY h.b) FILTER (WHERE h.k = 1), '{}') AS duration_b,
           coalesce(array_agg(h.c ORDER BY h.b) FILTER (WHERE h.k = 1), '{}') AS duration_c,
           coalesce(array_agg(h.b ORDER BY h.b) FILTER (WHERE h.k = 2), '{}') AS queue_b,
           coalesce(array_agg(h.c ORDER BY h.b) FILTER (WHERE h.k = 2), '{}') AS queue_c,
           coalesce(array_agg(h.b ORDER BY h.b) FILTER (WHERE h.k = 3), '{}') AS llm_b,
           coalesce(array_agg(h.c ORDER BY h.b) FILTER (WHERE h.k = 3), '{}') AS llm_c
      FROM h GROUP BY 1, 2, 3, 4),
  lx AS (
    SELECT lm.workspace_id, lm.agent_id, lm.model, lm.day, max(lm.ms) AS llm_max_ms
      FROM lm GROUP BY 1, 2, 3, 4)
  SELECT g.workspace_id, g.agent_id, g.model, g.day, g.runs, g.succeeded, g.failed, g.budget_exceeded,
         g.cancelled, g.expired, g.active, g.duration_max_ms, g.queue_max_ms,
         lx.llm_max_ms,
         g.llm_calls, g.tokens_in, g.tokens_out, g.tokens_cached, g.retries,
         coalesce(ha.duration_b, '{}'), coalesce(ha.duration_c, '{}'), coalesce(ha.queue_b, '{}'),
         coalesce(ha.queue_c, '{}'), coalesce(ha.llm_b, '{}'), coalesce(ha.llm_c, '{}'), false
    FROM g
    LEFT JOIN ha ON ha.workspace_id = g.workspace_id AND ha.agent_id = g.agent_id
                AND ha.model IS NOT DISTINCT FROM g.model AND ha.day = g.day
    LEFT JOIN lx ON lx.workspace_id = g.workspace_id AND lx.agent_id = g.agent_id
                AND lx.model IS NOT DISTINCT FROM g.model AND lx.day = g.day;
END;
COMMENT ON FUNCTION agent._run_rollup_compute(timestamptz, timestamptz, text) IS
  'Internal (agent.run_stats): the agent.run_rollup rows of the runs queued in [from, to), of one workspace or of all (NULL).';

CREATE FUNCTION agent._utc_next_month(m timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ((pg_catalog.date_trunc('month', m, 'UTC') AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
COMMENT ON FUNCTION agent._utc_next_month(timestamptz) IS
  'Internal (agent.run_stats): the first UTC midnight of the month after the UTC month of the given time.';

-- the month rows of agent.run_rollup for the UTC month m, merged from its
-- day rows
CREATE FUNCTION agent._run_rollup_month(p_m timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_end timestamptz := agent._utc_next_month(p_m);
BEGIN
  DELETE FROM agent.run_rollup u WHERE u.month AND u.day = p_m;
  INSERT INTO agent.run_rollup
  WITH d AS MATERIALIZED (
    SELECT * FROM agent.run_rollup u WHERE NOT u.month AND u.day >= p_m AND u.day < v_end),
  g AS (
    SELECT d.workspace_id, d.agent_id, d.model,
           sum(d.runs)::bigint AS runs, sum(d.succeeded)::bigint AS succeeded, sum(d.failed)::bigint AS failed,
           sum(d.budget_exceeded)::bigint AS budget_exceeded, sum(d.cancelled)::bigint AS cancelled,
           sum(d.expired)::bigint AS expired, sum(d.active)::bigint AS active,
           max(d.duration_max_ms) AS duration_max_ms, max(d.queue_max_ms) AS queue_max_ms,
           max(d.llm_max_ms) AS llm_max_ms, sum(d.llm_calls)::bigint AS llm_calls,
           sum(d.tokens_in) AS tokens_in, sum(d.tokens_out) AS tokens_out, sum(d.tokens_cached) AS tokens_cached,
           sum(d.retries)::bigint AS retries
      FROM d GROUP BY 1, 2, 3),
  h AS (
    SELECT x.workspace_id, x.agent_id, x.model, x.k, x.b, sum(x.c)::bigint AS c
      FROM (SELECT d.workspace_id, d.agent_id, d.model, 1 AS k, y.b, y.c
              FROM d CROSS JOIN LATERAL unnest(d.duration_b, d.duration_c) AS y(b, c)
            UNION ALL
            SELECT d.workspace_id, d.agent_id, d.model, 2, y.b, y.c
              FROM d CROSS JOIN LATERAL unnest(d.queue_b, d.queue_c) AS y(b, c)
            UNION ALL
            SELECT d.workspace_id, d.agent_id, d.model, 3, y.b, y.c
              FROM d CROSS JOIN LATERAL unnest(d.llm_b, d.llm_c) AS y(b, c)) x
     GROUP BY 1, 2, 3, 4, 5),
  ha AS (
    SELECT h.workspace_id, h.agent_id, h.model,
           array_agg(h.b ORDER BY h.b) FILTER (WHERE h.k = 1) AS duration_b,
           array_agg(h.c ORDER BY h.b) FILTER (WHERE h.k = 1) AS duration_c,
           array_agg(h.b ORDER BY h.b) FILTER (WHERE h.k = 2) AS queue_b,
           array_agg(h.c ORDER BY h.b) FILTER (WHERE h.k = 2) AS queue_c,
           array_agg(h.b ORDER BY h.b) FILTER (WHERE h.k = 3) AS llm_b,
           array_agg(h.c ORDER BY h.b) FILTER (WHERE h.k = 3) AS llm_c
      FROM h GROUP BY 1, 2, 3)
  SELECT g.workspace_id, g.agent_id, g.model, p_m, g.runs, g.succeeded, g.failed, g.budget_exceeded,
         g.cancelled, g.expired, g.active, g.duration_max_ms, g.queue_max_ms, g.llm_max_ms,
         g.llm_calls, g.tokens_in, g.tokens_out, g.tokens_cached, g.retries,
         coalesce(ha.duration_b, '{}'), coalesce(ha.duration_c, '{}'), coalesce(ha.queue_b, '{}'),
         coalesce(ha.queue_c, '{}'), coalesce(ha.llm_b, '{}'), coalesce(ha.llm_c, '{}'), true
    FROM g
    LEFT JOIN ha ON ha.workspace_id = g.workspace_id AND ha.agent_id = g.agent_id
                AND ha.model IS NOT DISTINCT FROM g.model;
END
$$;
COMMENT ON FUNCTION agent._run_rollup_month(timestamptz) IS
  'Internal (agent._run_rollup_fold): the month rows of agent.run_rollup for one UTC month, merged from its day rows.';

-- Called by agent.tick(): refold the dirty days, then fold the closed days
-- after the watermark (at most p_max_days a call, so that the first fold of
-- a year of history, after an install or a restore, is spread over ticks).
-- Skips (returns -1) when agent.runs is busy longer than lock_timeout.
CREATE FUNCTION agent._run_rollup_fold(p_now timestamptz DEFAULT now(), p_max_days integer DEFAULT 1)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
DECLARE
  v_today timestamptz := pg_catalog.date_trunc('day', p_now, 'UTC');
  v_w timestamptz;
  v_to timestamptz;
  v_n integer := 0;
  d record;
  v_at timestamptz;
  v_months timestamptz[] := '{}';
  v_m timestamptz;
BEGIN
  -- nothing to do: no closed day after the watermark, and no dirty day or a
  -- fold less than a minute ago (run_stats scans dirty days meanwhile); the
  -- lock below is taken only when there is work
  SELECT s.watermark, s.folded_at INTO v_w, v_at FROM agent.run_rollup_state s WHERE s.id;
  IF (v_w >= v_today OR (v_w IS NULL AND NOT EXISTS (SELECT FROM agent.runs)))
     AND (v_at > p_now - interval '1 minute' OR NOT EXISTS (SELECT FROM agent.run_rollup_dirty)) THEN
    RETURN 0;
  END IF;
  BEGIN
    -- every writer that began before is committed; every later one marks
    LOCK TABLE agent.runs IN SHARE MODE;
  EXCEPTION WHEN lock_not_available THEN
    RETURN -1;
  END;
  SELECT s.watermark INTO v_w FROM agent.run_rollup_state s WHERE s.id FOR UPDATE;
  IF v_w IS NULL THEN
    SELECT pg_catalog.date_trunc('day', min(r.created_at), 'UTC') INTO v_w FROM agent.runs r;
    IF v_w IS NULL THEN
      RETURN 0;   -- no run yet: the watermark stays unset (a restore loads them later)
    END IF;
  END IF;
  -- the dirty days before the watermark, again
  FOR d IN DELETE FROM agent.run_rollup_dirty x WHERE x.day < v_w RETURNING x.workspace_id, x.day LOOP
    DELETE FROM agent.run_rollup u WHERE NOT u.month AND u.workspace_id = d.workspace_id AND u.day = d.day;
    v_months := v_months || pg_catalog.date_trunc('month', d.day, 'UTC');
    INSERT INTO agent.run_rollup SELECT * FROM agent._run_rollup_compute(d.day, d.day + interval '24 hours', d.workspace_id);
    v_n := v_n + 1;
  END LOOP;
  -- the closed days after it
  v_to := least(v_today, v_w + p_max_days * interval '24 hours');
  IF v_to > v_w THEN
    DELETE FROM agent.run_rollup u WHERE NOT u.month AND u.day >= v_w AND u.day < v_to;
    v_months := v_months || ARRAY(SELECT pg_catalog.generate_series(pg_catalog.date_trunc('month', v_w, 'UTC'),
                                                                    v_to - interval '24 hours', interval '24 hours'));
    INSERT INTO agent.run_rollup SELECT * FROM agent._run_rollup_compute(v_w, v_to, NULL);
    DELETE FROM agent.run_rollup_dirty x WHERE x.day >= v_w AND x.day < v_to;
    v_n := v_n + (SELECT count(*) FROM pg_catalog.generate_series(v_w, v_to - interval '24 hours', interval '24 hours'))::integer;
    v_w := v_to;
  END IF;
  -- the whole months before the watermark whose days were folded now
  FOR v_m IN SELECT DISTINCT pg_catalog.date_trunc('month', x, 'UTC') FROM unnest(v_months) x LOOP
    IF agent._utc_next_month(v_m) <= v_w THEN
      PERFORM agent._run_rollup_month(v_m);
    END IF;
  END LOOP;
  UPDATE agent.run_rollup_state s SET watermark = v_w, folded_at = p_now WHERE s.id;
  RETURN v_n;
END
$$;
COMMENT ON FUNCTION agent._run_rollup_fold(timestamptz, integer) IS
  'Internal (agent.tick): folds the dirty days again and the closed UTC days after the watermark (at most max_days) into agent.run_rollup; returns the days folded, or -1 when agent.runs stayed locked (lock_timeout 200 ms).';

-- Marks (workspace, day) dirty for the runs of a day before today that a
-- statement inserted, changed or deleted (transition tables; clock time: a
-- statement that waited for a fold marks what the fold could not see)
CREATE FUNCTION agent._run_rollup_mark() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_today timestamptz := pg_catalog.date_trunc('day', pg_catalog.clock_timestamp(), 'UTC');
BEGIN
  IF TG_TABLE_NAME = 'runs' THEN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      INSERT INTO agent.run_rollup_dirty (workspace_id, day)
      SELECT DISTINCT o.workspace_id, pg_catalog.date_trunc('day', o.created_at, 'UTC')
        FROM rollup_old o WHERE o.created_at < v_today
      ON CONFLICT DO NOTHING;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
      INSERT INTO agent.run_rollup_dirty (workspace_id, day)
      SELECT DISTINCT n.workspace_id, pg_catalog.date_trunc('day', n.created_at, 'UTC')
        FROM rollup_new n WHERE n.created_at < v_today
      ON CONFLICT DO NOTHING;
    END IF;
  ELSE
    -- steps: the day of their run
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      INSERT INTO agent.run_rollup_dirty (workspace_id, day)
      SELECT DISTINCT r.workspace_id, pg_catalog.date_trunc('day', r.created_at, 'UTC')
        FROM rollup_old o JOIN agent.runs r ON r.workspace_id = o.workspace_id AND r.id = o.run_id
       WHERE r.created_at < v_today
      ON CONFLICT DO NOTHING;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
      INSERT INTO agent.run_rollup_dirty (workspace_id, day)
      SELECT DISTINCT r.workspace_id, pg_catalog.date_trunc('day', r.created_at, 'UTC')
        FROM rollup_new n JOIN agent.runs r ON r.workspace_id = n.workspace_id AND r.id = n.run_id
       WHERE r.created_at < v_today
      ON CONFLICT DO NOTHING;
    END IF;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._run_rollup_mark() IS
  'Internal trigger (statement level) on agent.runs and agent.run_steps: marks dirty in agent.run_rollup_dirty the (workspace, UTC day) of each run of a day before today that the statement inserted, changed or deleted (or whose steps it did).';

CREATE TRIGGER runs_rollup_insert AFTER INSERT ON agent.runs
  REFERENCING NEW TABLE AS rollup_new FOR EACH STATEMENT EXECUTE FUNCTION agent._run_rollup_mark();
CREATE TRIGGER runs_rollup_update AFTER UPDATE ON agent.runs
  REFERENCING OLD TABLE AS rollup_old NEW TABLE AS rollup_new FOR EACH STATEMENT EXECUTE FUNCTION agent._run_rollup_mark();
CREATE TRIGGER runs_rollup_delete AFTER DELETE ON agent.runs
  REFERENCING OLD TABLE AS rollup_old FOR EACH STATEMENT EXECUTE FUNCTION agent._run_rollup_mark();
CREATE TRIGGER run_steps_rollup_insert AFTER INSERT ON agent.run_steps
  REFERENCING NEW TABLE AS rollup_new FOR EACH STATEMENT EXECUTE FUNCTION agent._run_rollup_mark();
CREATE TRIGGER run_steps_rollup_update AFTER UPDATE ON agent.run_steps
  REFERENCING OLD TABLE AS rollup_old NEW TABLE AS rollup_new FOR EACH STATEMENT EXECUTE FUNCTION agent._run_rollup_mark();
CREATE TRIGGER run_steps_rollup_delete AFTER DELETE ON agent.run_steps
  REFERENCING OLD TABLE AS rollup_old FOR EACH STATEMENT EXECUTE FUNCTION agent._run_rollup_mark();

-- What agent.run_stats reads of the rollup, scoped like agent.run_metrics:
-- the workspaces the querying role may read, every one for pg_monitor and
-- superusers; the agent's name, provider and endpoint host as they are now
CREATE VIEW agent._run_rollup_visible WITH (security_barrier) AS
  SELECT u.workspace_id, u.agent_id, a.name AS agent_name,
         coalesce(a.scope ->> 'llm_provider', nullif(pg_catalog.current_setting('pg_agents.llm_provider', true), ''),
                  'openai') AS provider,
         pg_catalog.substring(coalesce(a.scope ->> 'llm_url', pg_catalog.current_setting('pg_agents.llm_url', true)),
                              '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\[[^]/]*\]|[^/:?#]*)') AS endpoint_host,
         u.model, u.day, u.runs, u.succeeded, u.failed, u.budget_exceeded, u.cancelled, u.expired, u.active,
         u.duration_max_ms, u.queue_max_ms, u.llm_max_ms, u.llm_calls, u.tokens_in, u.tokens_out,
         u.tokens_cached, u.retries, u.duration_b, u.duration_c, u.queue_b, u.queue_c, u.llm_b, u.llm_c, u.month
    FROM agent.run_rollup u
    JOIN agent.agents a ON a.workspace_id = u.workspace_id AND a.id = u.agent_id
   WHERE u.day < (SELECT s.watermark FROM agent.run_rollup_state s WHERE s.id)
     -- a dirty day, or a month with a dirty day, is scanned instead
     AND NOT EXISTS (SELECT FROM agent.run_rollup_dirty x
                      WHERE x.workspace_id = u.workspace_id
                        AND x.day >= u.day AND x.day < CASE WHEN u.month THEN agent._utc_next_month(u.day)
                                                             ELSE u.day + interval '24 hours' END)
     AND ((SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
          OR (u.workspace_id = agent.current_workspace()
              AND (SELECT agent._may_read_workspace(agent.current_workspace()))));
COMMENT ON VIEW agent._run_rollup_visible IS
  'Internal (agent.run_stats): the rows of agent.run_rollup (days and months) before the watermark and without a dirty day, with the agent''s name, provider and endpoint host; scoped like agent.run_metrics.';

CREATE VIEW agent._run_rollup_dirty_visible WITH (security_barrier) AS
  SELECT x.workspace_id, x.day
    FROM agent.run_rollup_dirty x
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (x.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent._run_rollup_dirty_visible IS
  'Internal (agent.run_stats): the dirty (workspace, UTC day) of agent.run_rollup_dirty, scoped like agent.run_metrics.';

CREATE FUNCTION agent._run_rollup_watermark() RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
RETURN (SELECT s.watermark FROM agent.run_rollup_state s WHERE s.id);
COMMENT ON FUNCTION agent._run_rollup_watermark() IS
  'Internal (agent.run_stats): the UTC midnight before which agent.run_rollup holds every day (NULL: none yet).';

-- After rows of agent.runs or agent.run_steps were written with the triggers
-- off (session_replication_role = replica: a pg_restore, a bulk load), no
-- day was marked: forget the rollup, the ticks fold it again
CREATE FUNCTION agent.reset_run_rollup() RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  DELETE FROM agent.run_rollup;
  DELETE FROM agent.run_rollup_dirty;
  UPDATE agent.run_rollup_state SET watermark = NULL, folded_at = NULL WHERE id;
END;
COMMENT ON FUNCTION agent.reset_run_rollup() IS
  'Empties the daily rollup of agent.run_stats (agent.run_rollup): the ticks fold it again from agent.runs (one day a tick), run_stats scans agent.runs meanwhile. Run it after writing runs or steps with the triggers off (session_replication_role = replica: a restore, a bulk load). Superuser (or the owner) only.';
