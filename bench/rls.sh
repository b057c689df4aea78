#!/usr/bin/env bash
# Allowlist overhead: a ranked full-text query over N pages (1M; 100k with
# BENCH_SCALE=small) run three ways, side by side in one cluster:
#   before   the table without row-level security
#   user     a non-agent session once agent.enable_allowlist is installed
#   agent    a session acting as an agent with 10k grants (1k small), under
#            the non-bypassing role agents_tool, each run after a commit that
#            changes no access data (the readable set is kept)
#   cold     the same, each run after a commit that changes a grant (of
#            another agent): the readable set is computed afresh
# and for four terms (about 10%, 1% and 0.05% of the pages, and none).  Each figure is
# the median of several runs, in ms; the ratios to before are printed.
. "$PG_AGENTS_ENV"
set -euo pipefail
if [ "${BENCH_SCALE:-}" = small ]; then ROWS=100000; GRANTS=1000; else ROWS=1000000; GRANTS=10000; fi
REPS=${BENCH_REPS:-9}
DB=rls_bench_$$
psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null
[ -n "${BENCH_KEEP:-}" ] || trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1' EXIT
q() { psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 "$@"; }

t0=$(date +%s)
q -v rows="$ROWS" -v grants="$GRANTS" >/dev/null <<'SQL'
CREATE EXTENSION pg_agents;
CREATE TABLE pages (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL,
                    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED);
INSERT INTO pages (id, title, body)
  SELECT g, 'page ' || g, format('a%s b%s c%s lorem ipsum dolor %s', g % 10, g % 100, g % 2000, md5(g::text))
    FROM generate_series(1, :rows) g;
CREATE INDEX pages_tsv_idx ON pages USING gin (tsv);
GRANT SELECT ON pages TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (1, 'ws1', 'u1', 'bench agent');
-- grants on :grants random pages; the owner's ACL covers them and 9x more pages
SELECT setseed(0.42);
CREATE TEMP TABLE granted AS
  SELECT DISTINCT (1 + floor(random() * :rows))::bigint AS id FROM generate_series(1, :grants * 2) LIMIT :grants;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 1, 'page', id::text, 'read' FROM granted;
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', id::text, 'user:u1', 'read' FROM granted
  UNION
  SELECT 'page', g::text, 'user:u1', 'read' FROM generate_series(1, :rows, 10) g
  ON CONFLICT DO NOTHING;
VACUUM ANALYZE;
CREATE FUNCTION bench_ms(query text, reps int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE t timestamptz; ms numeric[] := '{}'; n bigint;
BEGIN
  EXECUTE 'SELECT count(*) FROM (' || query || ') s' INTO n;     -- warm-up
  FOR i IN 1 .. reps LOOP
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || query || ') s' INTO n;
    ms := ms || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
  END LOOP;
  RETURN (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(ms) x);
END $$;
-- the same, committing a write before each run: with access = true, a change
-- of another agent's grant, after which readable sets are computed afresh;
-- else a write to an unrelated table
CREATE TABLE bench_tick (n int);
GRANT INSERT ON bench_tick TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (2, 'ws1', 'u1', 'other agent');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (2, 'page', '1', 'read');
CREATE FUNCTION bench_touch_grants() RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
AS $$ UPDATE agent.access SET access = access WHERE agent_id = 2 $$;
CREATE PROCEDURE bench_commit_ms(query text, reps int, access boolean, INOUT ms numeric DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE t timestamptz; a numeric[] := '{}'; n bigint;
BEGIN
  EXECUTE 'SELECT count(*) FROM (' || query || ') s' INTO n;     -- warm-up
  FOR i IN 1 .. reps LOOP
    IF access THEN PERFORM bench_touch_grants(); ELSE INSERT INTO bench_tick VALUES (i); END IF;
    COMMIT;
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || query || ') s' INTO n;
    a := a || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
  END LOOP;
  ms := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(a) x);
END $$;
SQL
echo "rls: $ROWS pages, $GRANTS grants, built in $(( $(date +%s) - t0 )) s; median of $REPS runs, ms"

# the application's ranked query: unrestricted (before, user) with @@ as
# written without the allowlist; under it, the documented shape with the
# leakproof agent.ts_match (and the old shape with @@, for comparison)
QUERY="SELECT id, title, ts_rank(tsv, q) AS r FROM pages, to_tsquery('simple', '%s') q WHERE tsv @@ q ORDER BY r DESC LIMIT 20"
QUERY_TS="SELECT id, title, ts_rank(tsv, q) AS r FROM pages, to_tsquery('simple', '%s') q WHERE agent.ts_match(tsv, q) ORDER BY r DESC LIMIT 20"
# the worker's search_resources (src/tools.c, ToolSearch), as agents_tool;
# unrestricted: the same query without its agent.can_access condition, in a
# session that does not act as an agent, before the allowlist
WORKER="SELECT s.rt, s.id, s.title, s.snippet FROM (SELECT 'page'::text AS rt, t.id::text AS id, t.title::text AS title, left(t.body::text, 200) AS snippet, ts_rank(t.tsv, plainto_tsquery('simple'::regconfig, '%s')) AS rank FROM public.pages t WHERE agent.can_access(1, 'page', t.id::text, 'read', 'autonomous', NULL) AND agent.ts_match(t.tsv, plainto_tsquery('simple'::regconfig, '%s'))) s ORDER BY s.rank DESC, s.rt, s.id LIMIT 20"
WORKER_U="SELECT s.rt, s.id, s.title, s.snippet FROM (SELECT 'page'::text AS rt, t.id::text AS id, t.title::text AS title, left(t.body::text, 200) AS snippet, ts_rank(t.tsv, plainto_tsquery('simple'::regconfig, '%s')) AS rank FROM public.pages t WHERE t.tsv @@ plainto_tsquery('simple'::regconfig, '%s')) s ORDER BY s.rank DESC, s.rt, s.id LIMIT 20"
measure() {  # actor, query
    q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = '$1'" \
      -c "SELECT round(bench_ms(\$q\$$2\$q\$, $REPS), 2)"
}
measure_commit() {  # actor, query, access change (true/false)
    q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = '$1'" \
      -c "CALL bench_commit_ms(\$q\$$2\$q\$, $REPS, $3)" | xargs printf '%.2f'
}
ratio() { echo "scale=2; $1 / $2" | bc | sed 's/^\./0./'; }
TERMS="a3 b42 c777 zz9"   # about 10%, 1%, 0.05% of the pages, and none
declare -A before before_w
for term in $TERMS; do
    before[$term]=$(measure "" "$(printf "$QUERY" $term)")
    before_w[$term]=$(measure "" "$(printf "$WORKER_U" $term $term)")
done
q -c "SELECT agent.enable_allowlist('pages', 'page', 'id')" >/dev/null
echo "application query under the allowlist, as an agent (10k grants):"
echo "  agent = WHERE agent.ts_match(tsv, q), readable set kept; cold = the same, set computed afresh;"
echo "  agent@@ = WHERE tsv @@ q (not leakproof: the policy goes first);"
echo "  worker = search_resources' query as the agent, w.before = the same search unrestricted (ratio worker/w.before)"
printf '%-6s %8s %8s %8s %8s %8s %8s %8s %8s | %8s %8s %8s %8s %8s\n' term matches before user agent cold 'agent@@' w.before worker \
    user/b agent/b cold/b 'agent@@/b' worker/wb
for term in $TERMS; do
    m=$(q -c "SELECT count(*) FROM pages WHERE tsv @@ to_tsquery('simple', '$term')")
    u=$(measure "user:u1" "$(printf "$QUERY" $term)")
    a=$(measure_commit "agent:1" "$(printf "$QUERY_TS" $term)" false)
    c=$(measure_commit "agent:1" "$(printf "$QUERY_TS" $term)" true)
    o=$(measure_commit "agent:1" "$(printf "$QUERY" $term)" false)
    w=$(measure_commit "agent:1" "$(printf "$WORKER" $term $term)" false)
    b=${before[$term]}; bw=${before_w[$term]}
    printf '%-6s %8s %8s %8s %8s %8s %8s %8s %8s | %8s %8s %8s %8s %8s\n' "$term" "$m" "$b" "$u" "$a" "$c" "$o" "$bw" "$w" \
        "$(ratio "$u" "$b")" "$(ratio "$a" "$b")" "$(ratio "$c" "$b")" "$(ratio "$o" "$b")" "$(ratio "$w" "$bw")"
done
echo "readable set alone, computed afresh: $(q -c "SET pg_agents.actor = 'agent:1'" -c "CALL bench_commit_ms('SELECT * FROM agent.readable_resources(1, ''page'')', $REPS, true)" | xargs printf '%.2f') ms"
echo "the same ids probed with no policy (a constant array): $(q -c "SELECT round(bench_ms(format('SELECT id FROM pages WHERE id = ANY (%L::bigint[])', (SELECT array_agg(resource_id::bigint) FROM agent.access WHERE agent_id = 1)), $REPS), 2)") ms"
for term in a3 c777; do
    echo "agent plan ($term):"
    q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" \
      -c "EXPLAIN (COSTS OFF) $(printf "$QUERY_TS" $term)" | sed 's/^/    /' | cut -c1-110
done
