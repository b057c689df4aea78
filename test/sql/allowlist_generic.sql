-- The allowlist's rewrite of @@, LIKE and ILIKE into their leakproof twins
-- (src/access/allowlist_ops.c) when the right side is not a constant: a
-- generic plan's $1 (PREPARE, plan_cache_mode = force_generic_plan), a
-- plpgsql parameter.  The agent's search then starts from the text index
-- (a bitmap scan of the GIN index, the readable set as a filter) instead of
-- probing the id index with every grant; results are those of the custom
-- plan, and a query the twin would refuse raises before any row is read.
\set SHOW_CONTEXT never
BEGIN;
SET LOCAL client_min_messages = warning;
CREATE TABLE public.gen_pages (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED);
INSERT INTO public.gen_pages (id, title, body)
  SELECT g, 'page ' || g, format('a%s b%s c%s lorem', g % 10, g % 100, g % 2000) FROM generate_series(1, 20000) g;
CREATE INDEX gen_pages_tsv_idx ON public.gen_pages USING gin (tsv);
CREATE INDEX gen_pages_title_idx ON public.gen_pages (title text_pattern_ops);
GRANT SELECT ON public.gen_pages TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7510001, 'ws-gen', 'u-gen', 'generic');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  SELECT 'ws-gen', 'page', g::text, 'user:u-gen', 'read' FROM generate_series(1, 20000, 4) g;
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
  SELECT 'ws-gen', 7510001, 'page', g::text, 'read' FROM generate_series(1, 20000, 4) g;
-- a second agent with few grants (50)
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7510002, 'ws-gen', 'u-gen', 'generic, few grants');
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
  SELECT 'ws-gen', 7510002, 'page', g::text, 'read' FROM generate_series(1, 20000, 400) g;
SELECT agent.enable_allowlist('public.gen_pages', 'page', 'id') IS NOT NULL AS enabled;
ANALYZE public.gen_pages;
SET LOCAL ROLE agents_tool;
SET LOCAL pg_agents.actor = 'agent:7510001';
-- the custom plan (a constant): the text index, the readable set as a filter
EXPLAIN (COSTS OFF) SELECT count(*) FROM public.gen_pages WHERE tsv @@ to_tsquery('simple', 'c777');
SELECT count(*) FROM public.gen_pages WHERE tsv @@ to_tsquery('simple', 'c777');
-- a generic plan: $1
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE gen_ts(tsquery) AS SELECT count(*) FROM public.gen_pages WHERE tsv @@ $1;
EXPLAIN (COSTS OFF) EXECUTE gen_ts(to_tsquery('simple', 'c777'));
EXECUTE gen_ts(to_tsquery('simple', 'c777'));
EXECUTE gen_ts(to_tsquery('simple', 'a3'));
EXECUTE gen_ts(to_tsquery('simple', 'zz9'));
EXECUTE gen_ts(NULL);
-- an expression of the parameters only (no column, nothing volatile)
PREPARE gen_ts_text(text) AS SELECT count(*) FROM public.gen_pages WHERE tsv @@ to_tsquery('simple', $1);
EXPLAIN (COSTS OFF) EXECUTE gen_ts_text('c777');
EXECUTE gen_ts_text('c777');
-- LIKE and ILIKE with $1
PREPARE gen_like(text) AS SELECT count(*) FROM public.gen_pages WHERE title LIKE $1;
EXPLAIN (COSTS OFF) EXECUTE gen_like('page 1777%');
EXECUTE gen_like('page 1777%');
PREPARE gen_ilike(text) AS SELECT count(*) FROM public.gen_pages WHERE body ILIKE $1;
EXECUTE gen_ilike('%C777 %');
-- a plpgsql function's parameter (its statements run as generic plans here)
CREATE FUNCTION pg_temp.gen_search(q tsquery) RETURNS bigint LANGUAGE plpgsql AS
$$ BEGIN RETURN (SELECT count(*) FROM public.gen_pages WHERE tsv @@ q); END $$;
SELECT pg_temp.gen_search(to_tsquery('simple', 'c777')), pg_temp.gen_search(to_tsquery('simple', 'b7'));
-- few grants: the custom plan of a common term probes the 50 grants (by
-- cost); the generic plan, made for every term, starts from the text index
SET LOCAL pg_agents.actor = 'agent:7510002';
EXPLAIN (COSTS OFF) SELECT count(*) FROM public.gen_pages WHERE tsv @@ to_tsquery('simple', 'a1');
EXPLAIN (COSTS OFF) EXECUTE gen_ts(to_tsquery('simple', 'a1'));
EXECUTE gen_ts(to_tsquery('simple', 'a1'));
SELECT count(*) FROM public.gen_pages WHERE tsv @@ to_tsquery('simple', 'a1');
SET LOCAL pg_agents.actor = 'agent:7510001';
-- what the twin refuses raises, whatever the rows: a pattern ending with the
-- escape character, a query nested deeper than 256 levels
SAVEPOINT s;
EXECUTE gen_like('page 1\');
ROLLBACK TO s;
SAVEPOINT s;
SELECT string_agg('c' || g, ' & ') AS deep FROM generate_series(1, 300) g \gset
EXECUTE gen_ts(:'deep');
ROLLBACK TO s;
-- not an agent: the policy folds away, @@ stays as written
RESET pg_agents.actor;
EXPLAIN (COSTS OFF) EXECUTE gen_ts(to_tsquery('simple', 'c777'));
EXECUTE gen_ts(to_tsquery('simple', 'c777'));
ROLLBACK;
