#!/usr/bin/env bash
# T-02, the leak test: an agent without a grant on a secret page can neither
# read it, find it by search (ranks, counts, snippets, LIKE, EXPLAIN ANALYZE
# row counts all identical to a world where the secret does not exist), reach
# it by a relation from a granted page (cut, and a denied step), nor read it
# through a run woken by a mention inside it.
. "$PG_AGENTS_ENV"
set -u
MARK='ZEBRAFISH7Q'
A=rls_leak_a_$$; B=rls_leak_b_$$
work=$(mktemp -d)
cleanup() { [ -n "${RLS_KEEP:-}" ] && { echo "# kept $work"; return; }
    psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $A" -c "DROP DATABASE IF EXISTS $B" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/../fixtures/tap.sh"

plan 28
# semantic search (pgvector) where this PostgreSQL has it
has_vector=$(psql -XAtq -d postgres -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")
# trigram search (pg_trgm) where this PostgreSQL has it
has_trgm=$(psql -XAtq -d postgres -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_trgm'")

# ---------------------------------------------------------------- two worlds
setup() {  # db, with_secret (1/0)
    psql -XAtq -d postgres -c "CREATE DATABASE $1" >/dev/null || return 1
    psql -XAtq -d "$1" -v ON_ERROR_STOP=1 -v secret="$2" -v mark="$MARK" >/dev/null <<'SQL'
CREATE EXTENSION pg_agents;
CREATE TABLE public.pages (
  id      bigint PRIMARY KEY,
  title   text NOT NULL,
  body    text NOT NULL,
  related bigint[] NOT NULL DEFAULT '{}',
  tsv     tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || body)) STORED);
CREATE INDEX pages_tsv_idx ON public.pages USING gin (tsv);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.pages TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (1, 'ws1', 'u1', 'leak test agent');
INSERT INTO public.pages (id, title, body)
  SELECT g, format('Page %s about the %s', g, (ARRAY['budget','roadmap','hiring','launch'])[1 + g % 4]),
            format('Notes on the quarterly %s plan, item %s.', (ARRAY['budget','roadmap','hiring','launch'])[1 + (g / 4) % 4], g)
    FROM generate_series(1, 3000) g;
-- ten granted pages: they mention the agent, link to the secret, share its words
UPDATE public.pages
   SET body = body || ' See [[agent:1]] about the acquisition budget plan (confidential draft).',
       related = ARRAY[5000::bigint, id + 1]
 WHERE id % 300 = 0;
\if :secret
INSERT INTO public.pages (id, title, body) VALUES
  (5000, 'Project ' || :'mark' || ' acquisition budget',
   'Confidential: the acquisition budget plan of ' || :'mark' || ' is 40M. Ask [[agent:1]] to prepare the draft.');
\endif
-- the owner may read and edit everything, the secret included; the secret is
-- even shared with the whole workspace: only the agent's grants keep it out
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', g::text, 'user:u1', 'edit' FROM generate_series(1, 3000) g;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws1', 'page', '5000', 'user:u1', 'edit'), ('ws1', 'page', '5000', 'workspace', 'read');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 1, 'page', g::text, 'read' FROM generate_series(300, 3000, 300) g;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 1, 'page', g::text, 'read' FROM generate_series(301, 3000, 300) g;
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status) VALUES (1000, 'ws1', 1, 'autonomous', 'event', 'running');
SELECT agent.register_resource_table('page', 'public.pages', 'id', 'title', 'body');
SELECT agent.enable_allowlist('public.pages', 'page', 'id');
SELECT agent.register_relation('page', 'public.pages', 'related', 'page');
VACUUM ANALYZE public.pages;
SQL
    if [ "$has_trgm" = 1 ]; then
        psql -XAtq -d "$1" -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || return 1
CREATE EXTENSION pg_trgm;
CREATE INDEX pages_body_trgm_idx ON public.pages USING gin (body gin_trgm_ops);
ANALYZE public.pages;
SQL
    fi
    [ "$has_vector" = 1 ] || return 0
    # an embedding per page: the secret is exactly the query's vector, the
    # ungranted pages are near it, the granted ones farther
    psql -XAtq -d "$1" -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION vector;
ALTER TABLE public.pages ADD COLUMN emb public.vector(3);
UPDATE public.pages SET emb = CASE
    WHEN id = 5000 THEN '[1,0,0]'
    WHEN id % 300 IN (0, 1) THEN ('[1,' || (1 + id % 7) || ',' || (id % 5) / 10.0 || ']')
    ELSE ('[1,' || (id % 89) / 890.0 || ',' || (id % 11) / 1100.0 || ']') END::public.vector;
CREATE INDEX pages_emb_idx ON public.pages USING hnsw (emb public.vector_cosine_ops);
SELECT agent.register_resource_table('page', 'public.pages', 'id', 'title', 'body', 'emb');
VACUUM ANALYZE public.pages;
SQL
}
setup "$A" 1 && setup "$B" 0
ok $? "two worlds built: with and without the secret page"

# the agent's queries, run under the tool role and the agent identity
cat > "$work/agent.sql" <<'SQL'
SET ROLE agents_tool;
SET pg_agents.actor = 'agent:1';
SET pg_agents.run_id = '1000';
SET pg_agents.surface = 'tool';
\echo -- direct read
SELECT id, title, body FROM public.pages WHERE id = 5000;
SELECT id FROM public.pages WHERE title LIKE '%ZEBRAFISH7Q%' OR body LIKE '%ZEBRAFISH7Q%';
\echo -- ranked full-text search, snippets
SELECT id, title, ts_rank(tsv, q) AS rank, ts_headline('english', body, q) AS snippet
  FROM public.pages, plainto_tsquery('english', 'acquisition budget plan') q
 WHERE tsv @@ q ORDER BY rank DESC, id LIMIT 20;
SELECT id, ts_rank_cd(tsv, q) FROM public.pages, to_tsquery('english', 'zebrafish7q | confidential') q
 WHERE tsv @@ q ORDER BY 2 DESC, id;
\echo -- LIKE search
SELECT id, title FROM public.pages WHERE body ILIKE '%acquisition%' ORDER BY id;
\echo -- counts
SELECT count(*) FROM public.pages;
SELECT count(*) FROM public.pages WHERE tsv @@ to_tsquery('english', 'budget');
SELECT count(*) FROM public.pages WHERE body LIKE '%[[agent:1]]%';
\echo -- leakproof search
SELECT id, title, ts_rank(tsv, q) AS rank, ts_headline('english', body, q) AS snippet
  FROM public.pages, plainto_tsquery('english', 'acquisition budget plan') q
 WHERE agent.ts_match(tsv, q) ORDER BY rank DESC, id LIMIT 20;
SELECT id, ts_rank_cd(tsv, q) FROM public.pages, to_tsquery('english', 'zebrafish7q | confidential') q
 WHERE agent.ts_match(tsv, q) ORDER BY 2 DESC, id;
SELECT count(*) FROM public.pages WHERE agent.ts_match(tsv, to_tsquery('english', 'zebrafish7q'));
SELECT count(*), max(ts_rank(tsv, q)) FROM public.pages, to_tsquery('english', 'zebrafish7q & acquisition') q
 WHERE agent.ts_match(tsv, q);
SELECT count(*) FROM public.pages WHERE agent.ts_match(tsv, to_tsquery('english', 'budget'));
-- the worker's search_resources query (src/tools/tools.c)
SELECT s.id, s.title, s.snippet, s.rank FROM (
  SELECT t.id::text AS id, t.title, left(t.body, 200) AS snippet,
         ts_rank(t.tsv, plainto_tsquery('english', 'zebrafish7q acquisition budget')) AS rank
    FROM public.pages t
   WHERE agent.can_access(1, 'page', t.id::text, 'read', 'autonomous', NULL)
     AND agent.ts_match(t.tsv, plainto_tsquery('english', 'zebrafish7q acquisition budget'))) s
 ORDER BY s.rank DESC, s.id LIMIT 20;
-- leakproof LIKE and ILIKE
SELECT id, title FROM public.pages WHERE agent.ilike(body, '%acquisition%') ORDER BY id;
SELECT count(*) FROM public.pages WHERE agent.ilike(body, '%zebrafish7q%');
SELECT count(*) FROM public.pages WHERE agent.ilike(title, '%zebrafish7q%') OR agent.like(body, '%40M%');
\echo -- leakproof plan
EXPLAIN (COSTS OFF) SELECT count(*) FROM public.pages WHERE agent.ts_match(tsv, to_tsquery('english', 'zebrafish7q'));
EXPLAIN (COSTS OFF) SELECT count(*) FROM public.pages WHERE agent.ilike(body, '%zebrafish7q%');
\echo -- leakproof EXPLAIN ANALYZE
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id, ts_rank(tsv, q) FROM public.pages, plainto_tsquery('english', 'acquisition budget plan') q
 WHERE agent.ts_match(tsv, q) ORDER BY 2 DESC LIMIT 20;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM public.pages WHERE agent.ilike(body, '%acquisition%');
\echo -- EXPLAIN ANALYZE
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id, ts_rank(tsv, q) FROM public.pages, plainto_tsquery('english', 'acquisition budget plan') q
 WHERE tsv @@ q ORDER BY 2 DESC LIMIT 20;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM public.pages WHERE body ILIKE '%acquisition%';
\echo -- generic plan search
SET plan_cache_mode = force_generic_plan;
PREPARE gs(tsquery) AS SELECT id, ts_rank(tsv, $1) FROM public.pages WHERE tsv @@ $1 ORDER BY 2 DESC, id LIMIT 20;
EXECUTE gs(plainto_tsquery('english', 'acquisition budget plan'));
EXECUTE gs(to_tsquery('english', 'zebrafish7q | confidential'));
PREPARE gc(text) AS SELECT count(*) FROM public.pages WHERE body ILIKE $1;
EXECUTE gc('%acquisition%');
EXECUTE gc('%40m%');
\echo -- generic EXPLAIN ANALYZE
EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE gs(plainto_tsquery('english', 'acquisition budget plan'));
\echo -- generic leakproof EXPLAIN ANALYZE
PREPARE gt(tsquery) AS SELECT id, ts_rank(tsv, $1) FROM public.pages WHERE agent.ts_match(tsv, $1) ORDER BY 2 DESC, id LIMIT 20;
EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE gt(plainto_tsquery('english', 'acquisition budget plan'));
RESET plan_cache_mode;
\echo -- relation
SELECT * FROM agent.follow_relation('page', '300', 'related');
SELECT * FROM agent.follow_relation('page', '5000', 'related');
SQL
psql -XAq -d "$A" -f "$work/agent.sql" >"$work/a.out" 2>&1
psql -XAq -d "$B" -f "$work/agent.sql" >"$work/b.out" 2>&1

cat > "$work/vector.sql" <<'SQL'
SET ROLE agents_tool;
SET pg_agents.actor = 'agent:1';
SET pg_agents.run_id = '1000';
SET hnsw.iterative_scan = strict_order;
\echo -- vector search
SELECT id, title, round((emb <=> '[1,0,0]')::numeric, 6) AS distance
  FROM public.pages ORDER BY emb <=> '[1,0,0]', id LIMIT 10;
SELECT id FROM public.pages ORDER BY emb <=> '[1,0,0]' LIMIT 5;
SELECT count(*), round(min(emb <=> '[1,0,0]')::numeric, 6) FROM public.pages WHERE emb <=> '[1,0,0]' < 0.5;
\echo -- vector EXPLAIN ANALYZE
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id FROM public.pages ORDER BY emb <=> '[1,0,0]' LIMIT 5;
\echo -- end
SQL
if [ "$has_vector" = 1 ]; then
    psql -XAq -d "$A" -f "$work/vector.sql" >"$work/va.out" 2>&1
    psql -XAq -d "$B" -f "$work/vector.sql" >"$work/vb.out" 2>&1
fi

section() { sed -n "/^-- $2\$/,/^-- /p" "$1" | sed '$d'; }
for s in "direct read" "ranked full-text search, snippets" "LIKE search" "counts" "leakproof search" "generic plan search"; do
    section "$work/a.out" "$s" >"$work/a.s"; section "$work/b.out" "$s" >"$work/b.s"
    [ -s "$work/a.s" ] && diff "$work/a.s" "$work/b.s" >"$work/diff" 2>&1
    r=$?; ok $r "$s: identical with and without the secret"
    [ $r -ne 0 ] && sed 's/^/# /' "$work/diff" | head -20
done
# The agent's own @@ and ILIKE start from the text and trigram indexes as
# agent.ts_match and agent.ilike do (issue 33): EXPLAIN ANALYZE then shows the
# candidates the policy removed, by design (docs/allowlist.md), and exactly
# what the documented leakproof shape, which any agent may write, shows:
# nothing more.
sed -n '/^-- EXPLAIN ANALYZE$/,/^-- generic plan search$/p' "$work/a.out" | sed '1d;$d' >"$work/a.s"
section "$work/a.out" "leakproof EXPLAIN ANALYZE" | sed '1d' >"$work/b.s"
[ -s "$work/a.s" ] && diff "$work/a.s" "$work/b.s" >"$work/diff" 2>&1
r=$?; ok $r "EXPLAIN ANALYZE of @@ and ILIKE: identical to that of agent.ts_match and agent.ilike"
[ $r -ne 0 ] && sed 's/^/# /' "$work/diff" | head -20
# The same for a generic plan's $1 (issue 33): the plan of @@ $1 shows, once
# its one-time check of $1 (a Result) is set aside, exactly what the
# documented agent.ts_match(tsv, $1) shows.
gen_plan() { section "$1" "$2" | sed '1d' | grep -v -e '->  Result' -e '^([0-9]* rows)$' -e 'One-Time Filter: (agent._search_arg(\$1) IS NOT NULL)' |
    sed -E 's/^ *(->)? *//; s/agent\.ts_match\(tsv, \$1\)/MATCH/; s/\(tsv @@ \$1\)/MATCH/'; }
gen_plan "$work/a.out" "generic EXPLAIN ANALYZE" >"$work/a.s"; gen_plan "$work/a.out" "generic leakproof EXPLAIN ANALYZE" >"$work/b.s"
[ -s "$work/a.s" ] && grep -q "Bitmap Index Scan on pages_tsv_idx" "$work/a.s" && diff "$work/a.s" "$work/b.s" >"$work/diff" 2>&1
r=$?; ok $r "EXPLAIN ANALYZE of a generic plan's @@ \$1: from the text index, identical to that of agent.ts_match(tsv, \$1)"
[ $r -ne 0 ] && { sed 's/^/# /' "$work/diff" | head -20; sed 's/^/# /' "$work/a.s" | head -20; }
# an argument the twin refuses raises in both worlds alike, though in one
# a row outside the readable set reaches the escape character ('40M.'),
# and the index's recheck never sees it
for db in "$A" "$B"; do
    psql -XAtq -d "$db" -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" -c "SET plan_cache_mode = force_generic_plan" \
         -c "PREPARE gb(text) AS SELECT count(*) FROM public.pages WHERE body LIKE \$1" \
         -c "EXECUTE gb('%40M\\')" -c "EXECUTE gb('%40M%')" 2>&1
done >"$work/gb.out"
[ "$(sed -n 1,2p "$work/gb.out")" = "$(sed -n 3,4p "$work/gb.out")" ] && grep -q "must not end with escape character" "$work/gb.out"
ok $? "a generic plan's LIKE \$1 that the twin refuses: the same error with and without the secret (got: $(tr '\n' ' ' <"$work/gb.out"))"
if [ "$has_vector" = 1 ]; then
    for s in "vector search" "vector EXPLAIN ANALYZE"; do
        section "$work/va.out" "$s" >"$work/a.s"; section "$work/vb.out" "$s" >"$work/b.s"
        [ -s "$work/a.s" ] && ! grep -q ERROR "$work/a.s" && diff "$work/a.s" "$work/b.s" >"$work/diff" 2>&1
        r=$?; ok $r "$s (pgvector): identical with and without the secret, which is the query's nearest neighbour"
        [ $r -ne 0 ] && { sed 's/^/# /' "$work/diff" | head -20; grep ERROR "$work/a.s" | sed 's/^/# /'; }
    done
    [ "$(section "$work/va.out" "vector search" | sed -n 2p | cut -d'|' -f1)" != 5000 ] && [ -n "$(section "$work/va.out" "vector search" | sed -n 2p)" ]
    ok $? "the agent's nearest rows are its granted ones (got $(section "$work/va.out" "vector search" | sed -n 2p))"
    v=$(psql -XAtq -d "$A" -c "SET ROLE agents_tool" -c "SELECT id FROM public.pages ORDER BY emb <=> '[1,0,0]' LIMIT 1")
    [ "$v" = 5000 ]; ok $? "not vacuous: a non-agent session of the same role finds the secret nearest ($v)"
else
    for s in "vector search" "vector EXPLAIN ANALYZE" "nearest rows" "not vacuous"; do
        skip "pgvector is not installed: no vector search to compare ($s)"
    done
fi
cat "$work/a.out" "$work/va.out" 2>/dev/null | grep -q "$MARK"; [ $? -ne 0 ]; ok $? "the marker appears nowhere in the agent's outputs"
grep -q "ERROR" "$work/a.out"; [ $? -ne 0 ]; ok $? "no query of the agent failed"
[ "$(section "$work/a.out" 'direct read' | grep -c '^(0 rows)$')" = 2 ]; ok $? "direct read of the secret returns no row (by id, by marker)"
sed -n '/^-- EXPLAIN ANALYZE$/,/^-- relation$/p' "$work/a.out" | grep -q "Filter: (agent._allowlist_has(id, 'page'::text, 'read'::text) AND agent.ts_match(tsv, "
ok $? "the agent's @@ search is filtered before ranking: the readable set first, then the leakproof match (got: $(sed -n '/^-- EXPLAIN ANALYZE$/,/^-- relation$/p' "$work/a.out" | grep -m1 Filter))"
# the leakproof match: the search starts from the text index, whose
# candidates include the secret, and the policy filters them before any
# count, rank or snippet (EXPLAIN ANALYZE row counts may differ, by design)
section "$work/a.out" "leakproof plan" | grep -q "Bitmap Index Scan on pages_tsv_idx"
ok $? "with agent.ts_match the agent's search starts from the text index (got: $(section "$work/a.out" "leakproof plan" | tr '\n' ' '))"
if [ "$has_trgm" = 1 ]; then
    section "$work/a.out" "leakproof plan" | grep -q "Bitmap Index Scan on pages_body_trgm_idx"
    ok $? "with agent.ilike the agent's pattern search starts from the trigram index"
else
    skip "pg_trgm is not installed: no trigram index to start from"
fi
v=$(psql -XAtq -d "$A" -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" \
    -c "SELECT count(*) || ':' || coalesce(max(ts_rank(tsv, q))::text, 'none') FROM public.pages, to_tsquery('english', 'zebrafish7q') q WHERE agent.ts_match(tsv, q)" \
    -c "SET pg_agents.actor = ''" \
    -c "SELECT count(*) FROM public.pages, to_tsquery('english', 'zebrafish7q') q WHERE agent.ts_match(tsv, q)")
[ "$v" = "0:none
1" ]; ok $? "a term only in the secret: count 0 and no rank for the agent, 1 for a non-agent session (got $(echo $v))"

# the test is not vacuous: outside the agent identity the secret is there
v=$(psql -XAtq -d "$A" -c "SET ROLE agents_tool" -c "SELECT count(*) FROM public.pages, plainto_tsquery('english', 'acquisition budget plan') q WHERE tsv @@ q AND title LIKE '%$MARK%'")
[ "$v" = 1 ]; ok $? "a non-agent session of the same role finds the secret by the same search ($v)"

# relations: cut and reported
rel=$(sed -n '/^-- relation$/,$p' "$work/a.out" | grep -v -e '^-- relation$' -e '^follow_relation$' -e '^(. rows\?)$')
[ "$rel" = "301" ]; ok $? "following the relation from a granted page yields only the granted target (got: $(echo $rel))"
steps=$(psql -XAtq -d "$A" -c "SELECT kind || '|' || name || '|' || (output->>'resource_type') || '|' || (output->>'reason') FROM agent.run_steps WHERE run_id = 1000 ORDER BY seq")
[ "$steps" = "denied|follow_relation|page|not_granted
denied|follow_relation|page|not_granted" ]; ok $? "each cut target (and the unreadable source) is a denied step with type and reason"
v=$(psql -XAtq -d "$A" -c "SELECT count(*) FROM agent.run_steps WHERE run_id = 1000 AND ((input::text || output::text) ~* '$MARK|acquisition|confidential' OR output::text ~ '5000' OR (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(output) k) <> '{reason,resource_type}')" -c "SELECT count(*) FROM agent.audit_log WHERE coalesce(inputs::text, '') || coalesce(summary, '') ~* '$MARK|acquisition|confidential'")
[ "$v" = "0
0" ]; ok $? "the denied steps (type and reason only) and audit rows carry no title or body of the secret"

# mentions grant nothing: a run woken by a mention inside the secret page
if [ -n "$(psql -XAtq -d "$A" -c "SELECT to_regprocedure('agent.watch_table(regclass,text,name,text[],name)')")" ]; then
    psql -XAtq -d "$A" -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET pg_agents.workspace = 'ws1';  -- the page's workspace (every event belongs to one)
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type) VALUES (1, 'mention', 'agent.mentioned', 'page');
SELECT agent.watch_table('public.pages', 'page', 'id', ARRAY['body']);
INSERT INTO public.pages (id, title, body) VALUES
  (5001, 'ZEBRAFISH7Q follow-up', 'Second secret page: [[agent:1]] please summarise the ZEBRAFISH7Q acquisition.');
SQL
    run=$(psql -XAtq -d "$A" -c "SELECT max(id) FROM agent.runs WHERE agent_id = 1 AND origin = 'mention'")
    [ -n "$run" ]; ok $? "a mention inside the secret page queues a run (run $run)"
    # The agent.mentioned payload names the row, but a stored run is a log:
    # a row the agent cannot read is withheld at enqueue (a reference and the
    # reason), and the worker withholds again from the prompt (511).
    v=$(psql -XAtq -d "$A" -c "SELECT agent.can_access(1, 'page', input#>>'{payload,row_id}') || ':' || (input#>>'{payload,row,withheld}') || ':' || (input::text ~* '$MARK|acquisition') FROM agent.runs WHERE id = $run")
    is "$v" "false:not_granted:false" "the mention run's payload names a row the agent cannot read, withheld (not_granted), no title or body"
else
    run=$(psql -XAtq -d "$A" -c "SELECT agent._enqueue_run(1, 'autonomous', 'mention', '{\"resource_type\": \"page\", \"row_id\": \"5000\"}')")
    [ -n "$run" ]; ok $? "a mention run is queued (events module not installed yet: through agent._enqueue_run, run $run)"
    skip "events module not installed: no payload to inspect"
fi
rid=$(psql -XAtq -d "$A" -c "SELECT coalesce(input->>'row_id', input#>>'{payload,row_id}', input#>>'{event,payload,row_id}', '5000') FROM agent.runs WHERE id = $run")
v=$(psql -XAtq -d "$A" -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" -c "SET pg_agents.run_id = '$run'" \
      -c "SELECT count(*) FROM public.pages WHERE id IN ($rid, 5000, 5001) OR body LIKE '%$MARK%'" 2>&1)
[ "$v" = 0 ]; ok $? "that run, under its identity, still cannot read the page ($v)"

done_testing
