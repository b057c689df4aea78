#!/usr/bin/env bash
# Ranked full-text search under the allowlist on two table shapes, across
# selectivities and grant counts (issue 33, "selective search whatever the
# data shape"), each restricted query beside the unrestricted one, run
# alternately in one cluster:
#   pages  bigint id, the 'simple' configuration, short rows (the shape of
#          bench/rls.sh)
#   docs   uuid id, the 'english' configuration, longer rows (two md5s)
# 300k rows each (60k with BENCH_SCALE=small), a GIN index on the tsvector,
# agents holding 1k, 5k and 50k read grants (1k, 5k, 10k small) on random
# rows of one table (agents 1-3 on pages, 4-6 on docs; both of type page).  For each term (many: ~10 % / 5 % of the rows, few:
# ~0.05 %, none) and each agent:
#   unr     the query written WHERE tsv @@ q in a session that does not act
#           as an agent (the policy folds away): the floor
#   @@      the same query as the agent (the application's own shape)
#   ts      the documented shape, WHERE agent.ts_match(tsv, q), as the agent
#   gen     the @@ query with the term as a parameter under a generic plan
#           (a plpgsql function's RETURN QUERY ... WHERE tsv @@ $1 with
#           plan_cache_mode = force_generic_plan: what PREPARE after five
#           executions, a plpgsql function or a tool's SPI with parameters
#           run), as the agent; its ratio is to the same function run by a
#           session that does not act as an agent (gen/u)
# Each figure is the median of BENCH_REPS runs (default 5, at least 3), in
# ms, the readable set kept (a commit that changes no access data before
# each run); the ratios to unr are printed (target <= 1.5).
. "$PG_AGENTS_ENV"
set -euo pipefail
if [ "${BENCH_SCALE:-}" = small ]; then ROWS=60000; G3=10000; else ROWS=300000; G3=50000; fi
REPS=${BENCH_REPS:-5}
[ "$REPS" -ge 3 ] || REPS=3
DB=search_shapes_$$
psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null
[ -n "${BENCH_KEEP:-}" ] || trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1' EXIT
q() { psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 "$@"; }

t0=$(date +%s)
q -v rows="$ROWS" -v g3="$G3" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_agents;
CREATE TABLE pages (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL,
                    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED);
INSERT INTO pages (id, title, body)
  SELECT g, 'page ' || g, format('a%s b%s c%s lorem ipsum dolor %s', g % 10, g % 100, g % 2000, md5(g::text))
    FROM generate_series(1, :rows) g;
CREATE INDEX ON pages USING gin (tsv);
CREATE TABLE docs (id uuid PRIMARY KEY, title text NOT NULL, body text NOT NULL,
                   tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || body)) STORED);
INSERT INTO docs (id, title, body)
  SELECT md5('doc' || g)::uuid, 'Quarterly report ' || g,
         format('The topic%s team reviewed region%s figures and filed ticket code%s. Notes: %s %s',
                g % 20, g % 500, g % 2000, md5(g::text), md5((g + 1)::text))
    FROM generate_series(1, :rows) g;
CREATE INDEX ON docs USING gin (tsv);
GRANT SELECT ON pages, docs TO agents_tool;
SET session_replication_role = replica;   -- bulk load: skip the per-row triggers
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (1, 'ws1', 'u1', 'pages 1k'), (2, 'ws1', 'u1', 'pages 5k'), (3, 'ws1', 'u1', 'pages many'),
  (4, 'ws1', 'u1', 'docs 1k'), (5, 'ws1', 'u1', 'docs 5k'), (6, 'ws1', 'u1', 'docs many');
SELECT setseed(0.33);
CREATE TABLE granted AS
  SELECT a.agent_id, t.rt, t.id
    FROM (VALUES (1, 1000), (2, 5000), (3, :g3)) a(agent_id, n),
         LATERAL (SELECT 'page'::text AS rt, id::text AS id FROM pages ORDER BY random() LIMIT a.n) t
  UNION ALL
  SELECT a.agent_id, t.rt, t.id
    FROM (VALUES (4, 1000), (5, 5000), (6, :g3)) a(agent_id, n),
         LATERAL (SELECT 'page'::text AS rt, id::text AS id FROM docs ORDER BY random() LIMIT a.n) t;
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
  SELECT 'ws1', agent_id, rt, id, 'read' FROM granted;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  SELECT DISTINCT 'ws1', rt, id, 'user:u1', 'read' FROM granted;
RESET session_replication_role;
VACUUM ANALYZE;
SELECT agent.enable_allowlist('pages', 'page', 'id');
SELECT agent.enable_allowlist('docs', 'page', 'id');
-- the generic plan of the @@ query with the term as $1
CREATE FUNCTION search_gen_pages(q tsquery) RETURNS TABLE (id bigint, title text, r real)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY SELECT p.id, p.title, ts_rank(p.tsv, q) AS r FROM pages p WHERE p.tsv @@ q ORDER BY 3 DESC LIMIT 20;
END $$;
CREATE FUNCTION search_gen_docs(q tsquery) RETURNS TABLE (id uuid, title text, r real)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY SELECT d.id, d.title, ts_rank(d.tsv, q) AS r FROM docs d WHERE d.tsv @@ q ORDER BY 3 DESC LIMIT 20;
END $$;
GRANT EXECUTE ON FUNCTION search_gen_pages(tsquery), search_gen_docs(tsquery) TO agents_tool;
CREATE TABLE bench_tick (n int);
GRANT INSERT ON bench_tick TO agents_tool;
-- two queries run alternately, each as its actor after a commit, so that the
-- load of the shared machine weighs on both alike: the medians, in ms
CREATE PROCEDURE bench_pair_ms(qa text, actor_a text, qb text, actor_b text, reps int,
                               INOUT ms_a numeric DEFAULT NULL, INOUT ms_b numeric DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE t timestamptz; a numeric[] := '{}'; b numeric[] := '{}'; n bigint;
BEGIN
  PERFORM set_config('pg_agents.actor', actor_a, false);
  EXECUTE 'SELECT count(*) FROM (' || qa || ') s' INTO n;        -- warm-up
  PERFORM set_config('pg_agents.actor', actor_b, false);
  EXECUTE 'SELECT count(*) FROM (' || qb || ') s' INTO n;
  FOR i IN 1 .. reps LOOP
    PERFORM set_config('pg_agents.actor', actor_a, false);
    INSERT INTO bench_tick VALUES (i);
    COMMIT;
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || qa || ') s' INTO n;
    a := a || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
    PERFORM set_config('pg_agents.actor', actor_b, false);
    INSERT INTO bench_tick VALUES (i);
    COMMIT;
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || qb || ') s' INTO n;
    b := b || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
  END LOOP;
  ms_a := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(a) x);
  ms_b := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(b) x);
END $$;
SQL
echo "search_shapes: $ROWS rows a table, agents with 1000, 5000 and $G3 grants, built in $(( $(date +%s) - t0 )) s; median of $REPS runs, ms"

pair() {  # query a, actor a, query b, actor b: "ms_a ms_b"
    q -c "SET ROLE agents_tool" \
      -c "CALL bench_pair_ms(\$q\$$1\$q\$, '$2', \$q\$$3\$q\$, '$4', $REPS)" |
        awk -F'|' '{ printf "%.3f %.3f\n", $1, $2 }'
}
plan_gen() {  # actor, shape, tsquery: the scan of the generic plan of @@ $1
    q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = '$1'" -c "SET plan_cache_mode = force_generic_plan" \
      -c "PREPARE p(tsquery) AS SELECT id, title, ts_rank(tsv, \$1) AS r FROM $2 WHERE tsv @@ \$1 ORDER BY 3 DESC LIMIT 20" \
      -c "EXPLAIN (COSTS OFF) EXECUTE p($3)" |
        grep -Eo '(Bitmap Index Scan on [a-z_0-9]+|Index Scan using [a-z_0-9]+|Seq Scan)' | head -1 |
        sed -E 's/Bitmap Index Scan on /bitmap /; s/Index Scan using /probe /; s/Seq Scan/seq/'
}
ratio() { echo "scale=2; $1 / $2" | bc | sed 's/^\./0./'; }
plan() {  # actor, query: the scan that reads the table
    q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = '$1'" -c "EXPLAIN (COSTS OFF) $2" |
        grep -Eo '(Bitmap Index Scan on [a-z_0-9]+|Index Scan using [a-z_0-9]+|Seq Scan)' | head -1 |
        sed -E 's/Bitmap Index Scan on /bitmap /; s/Index Scan using /probe /; s/Seq Scan/seq/'
}

printf '%-6s %-5s %7s %7s | %8s %8s %8s | %8s %8s | %6s %6s %6s | %-16s %s\n' shape term matches grants unr '@@' ts unr-gen gen '@@/u' ts/u gen/u 'plan of @@' 'plan of gen'
for shape in pages docs; do
    if [ $shape = pages ]; then cfg=simple; terms="many:a3 few:c777 none:zz9"; else cfg=english; terms="many:topic3 few:code777 none:nothingmatches"; fi
    QAT="SELECT id, title, ts_rank(tsv, q) AS r FROM $shape, to_tsquery('$cfg', '%s') q WHERE tsv @@ q ORDER BY r DESC LIMIT 20"
    QTS="SELECT id, title, ts_rank(tsv, q) AS r FROM $shape, to_tsquery('$cfg', '%s') q WHERE agent.ts_match(tsv, q) ORDER BY r DESC LIMIT 20"
    for tt in $terms; do
        label=${tt%%:*}; term=${tt#*:}
        m=$(q -c "SELECT count(*) FROM $shape WHERE tsv @@ to_tsquery('$cfg', '$term')")
        if [ $shape = pages ]; then agents="1 2 3"; else agents="4 5 6"; fi
        for agent in $agents; do
            grants=$(q -c "SELECT count(*) FROM agent.access WHERE agent_id = $agent")
            read -r u a <<<"$(pair "$(printf "$QAT" $term)" user:u1 "$(printf "$QAT" $term)" agent:$agent)"
            read -r u2 t <<<"$(pair "$(printf "$QAT" $term)" user:u1 "$(printf "$QTS" $term)" agent:$agent)"
            QG="SELECT * FROM search_gen_$shape(to_tsquery('$cfg', '$term'))"
            read -r ug g <<<"$(pair "$QG" user:u1 "$QG" agent:$agent)"
            printf '%-6s %-5s %7s %7s | %8s %8s %8s | %8s %8s | %6s %6s %6s | %-16s %s\n' $shape $label "$m" "$grants" "$u" "$a" "$t" \
                "$ug" "$g" "$(ratio "$a" "$u")" "$(ratio "$t" "$u2")" "$(ratio "$g" "$ug")" \
                "$(plan agent:$agent "$(printf "$QAT" $term)")" "$(plan_gen agent:$agent $shape "to_tsquery('$cfg', '$term')")"
        done
    done
done

# Nearest-neighbour search (pgvector) under the allowlist, where this
# PostgreSQL has pgvector: an embedding of 16 dimensions on pages (random,
# seeded), an HNSW index (cosine), the worker's settings (hnsw.iterative_scan
# = strict_order, hnsw.ef_search = 200); for agents 1-3, the 10 nearest rows
# to a fixed vector as the agent beside the same query unrestricted.
if ! q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null 2>&1; then
    echo "vector: skipped: pgvector not installed"
    exit 0
fi
t0=$(date +%s)
q >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT setseed(0.42);
ALTER TABLE pages ADD COLUMN emb vector(16);
UPDATE pages SET emb = (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, 16) d WHERE id > 0)::vector(16);
CREATE INDEX pages_emb_idx ON pages USING hnsw (emb vector_cosine_ops);
VACUUM ANALYZE pages;
SQL
q -c "ALTER DATABASE $DB SET hnsw.iterative_scan = strict_order" -c "ALTER DATABASE $DB SET hnsw.ef_search = 200" >/dev/null
vec=$(q -c "SELECT array_agg(round((sin(d) / 2)::numeric, 3))::text FROM generate_series(1, 16) d" | tr '{}' '[]')
echo "vector: pgvector $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'"), 16 dimensions, HNSW built in $(( $(date +%s) - t0 )) s; median of $REPS runs, ms"
QV="SELECT id FROM pages ORDER BY emb <=> '$vec' LIMIT 10"
printf '%-6s %7s | %8s %8s | %6s | %s\n' shape grants unr agent a/u 'plan as the agent'
for agent in 1 2 3; do
    grants=$(q -c "SELECT count(*) FROM agent.access WHERE agent_id = $agent")
    read -r u a <<<"$(pair "$QV" user:u1 "$QV" agent:$agent)"
    printf '%-6s %7s | %8s %8s | %6s | %s\n' pages "$grants" "$u" "$a" "$(ratio "$a" "$u")" \
        "$(q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:$agent'" -c "EXPLAIN (COSTS OFF) $QV" |
           grep -Eo '(Index Scan using [a-z_0-9]+|Bitmap Index Scan on [a-z_0-9]+|Seq Scan)' | head -1 |
           sed -E 's/Bitmap Index Scan on /bitmap /; s/Index Scan using /index /; s/Seq Scan/seq/')"
done
