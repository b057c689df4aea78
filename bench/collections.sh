#!/usr/bin/env bash
# Collection grants against row grants (issue 31): the same rows reached two
# ways, side by side in one cluster.
#   coll  table tickets_c, registered as the rows of collections
#         (parent_type 'collection', parent_column collection_id): agent 1
#         holds read grants on G collections, its owner u1 the collections'
#         ACL rows; no row has a grant or an ACL row of its own
#   row   table tickets_r, the same rows (ids + 10M) registered without a
#         parent (both tables hold resources of type page): agent 2
#         holds one read grant per row of those same collections, its owner
#         u2 one ACL row per row
# Figures (median of several runs, ms; ratios printed):
#   can_access  agent.can_access over every row of the table, as a WHERE
#               clause (count of readable rows), coll beside row
#   search      the ranked full-text query of docs/allowlist.md as the agent,
#               under agent.enable_allowlist, beside the same query in a
#               session that does not act as an agent (the policy folds away),
#               for a term of about 10 %, 1 %, 0.05 % of the rows and none
# Full scale: 300k rows in 3,000 collections, G = 150 (15k rows readable);
# BENCH_SCALE=small: 60k rows, 600 collections, G = 30.
. "$PG_AGENTS_ENV"
set -euo pipefail
if [ "${BENCH_SCALE:-}" = small ]; then ROWS=60000; COLLS=600; G=30; else ROWS=300000; COLLS=3000; G=150; fi
REPS=${BENCH_REPS:-7}
DB=coll_bench_$$
psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null
[ -n "${BENCH_KEEP:-}" ] || trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1' EXIT
q() { psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 "$@"; }

t0=$(date +%s)
q -v rows="$ROWS" -v colls="$COLLS" -v g="$G" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_agents;
CREATE TABLE tickets_c (id bigint PRIMARY KEY, collection_id text NOT NULL, title text NOT NULL, body text NOT NULL,
                        tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED);
INSERT INTO tickets_c (id, collection_id, title, body)
  SELECT i, 'c' || (i % :colls), 'ticket ' || i,
         format('a%s b%s c%s lorem ipsum dolor %s', i % 10, i % 100, i % 2000, md5(i::text))
    FROM generate_series(1, :rows) i;
CREATE INDEX ON tickets_c USING gin (tsv);
CREATE INDEX ON tickets_c (collection_id);
CREATE TABLE tickets_r (LIKE tickets_c INCLUDING ALL);
INSERT INTO tickets_r (id, collection_id, title, body) SELECT id + 10000000, collection_id, title, body FROM tickets_c;
GRANT SELECT ON tickets_c, tickets_r TO agents_tool;
SELECT agent.register_resource_table('page', 'tickets_c', 'id', 'title', 'body',
                                     parent_type => 'collection', parent_column => 'collection_id');
SELECT agent.register_resource_table('page', 'tickets_r', 'id', 'title', 'body');
SET session_replication_role = replica;   -- bulk load: skip the per-row fill and history triggers
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (1, 'ws1', 'u1', 'collection grants'), (2, 'ws1', 'u2', 'row grants'), (3, 'ws2', 'u3', 'second workspace');
-- the granted collections: c0, c(colls/g), ... (spread over the id range)
CREATE TABLE granted AS SELECT 'c' || (k * (:colls / :g)) AS cid FROM generate_series(0, :g - 1) k;
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
  SELECT 'ws1', 1, 'collection', cid, 'read' FROM granted;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  SELECT 'ws1', 'collection', cid, 'user:u1', 'read' FROM granted;
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
  SELECT 'ws1', 2, 'page', t.id::text, 'read' FROM tickets_r t JOIN granted ON t.collection_id = granted.cid;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  SELECT 'ws1', 'page', t.id::text, 'user:u2', 'read' FROM tickets_r t JOIN granted ON t.collection_id = granted.cid;
-- the second workspace holds the same collections' grants for its own agent
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
  SELECT 'ws2', 3, 'collection', cid, 'read' FROM granted;
SET session_replication_role = DEFAULT;
SELECT agent.enable_allowlist('tickets_c', 'page', 'id');
SELECT agent.enable_allowlist('tickets_r', 'page', 'id');
VACUUM ANALYZE;
CREATE TABLE bench_tick (n int);
GRANT INSERT ON bench_tick TO agents_tool;
-- two queries run alternately, each as its actor after a commit, so that the
-- load of the shared machine weighs on both alike: medians in ms
CREATE PROCEDURE bench_pair_ms(qa text, actor_a text, qb text, actor_b text, reps int,
                               INOUT ms_a numeric DEFAULT NULL, INOUT ms_b numeric DEFAULT NULL,
                               INOUT n_a bigint DEFAULT NULL, INOUT n_b bigint DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE t timestamptz; a numeric[] := '{}'; b numeric[] := '{}';
BEGIN
  PERFORM set_config('pg_agents.actor', actor_a, false);
  EXECUTE 'SELECT count(*) FROM (' || qa || ') s' INTO n_a;        -- warm-up
  PERFORM set_config('pg_agents.actor', actor_b, false);
  EXECUTE 'SELECT count(*) FROM (' || qb || ') s' INTO n_b;
  FOR i IN 1 .. reps LOOP
    PERFORM set_config('pg_agents.actor', actor_a, false);
    INSERT INTO bench_tick VALUES (i);
    COMMIT;
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || qa || ') s' INTO n_a;
    a := a || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
    PERFORM set_config('pg_agents.actor', actor_b, false);
    INSERT INTO bench_tick VALUES (i);
    COMMIT;
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || qb || ') s' INTO n_b;
    b := b || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
  END LOOP;
  ms_a := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(a) x);
  ms_b := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(b) x);
END $$;
SQL
echo "collections: $ROWS rows in $COLLS collections, $G collections granted ($(( ROWS / COLLS * G )) rows readable), built in $(( $(date +%s) - t0 )) s; median of $REPS runs, ms"

ratio() { echo "scale=2; $1 / $2" | bc | sed 's/^\./0./'; }
pair() {  # query a, actor a, query b, actor b: "ms_a ms_b n_a n_b"
    q -c "SET ROLE agents_tool" -c "SET pg_agents.workspace = 'ws1'" \
      -c "CALL bench_pair_ms(\$q\$$1\$q\$, '$2', \$q\$$3\$q\$, '$4', $REPS)" |
        awk -F'|' '{ printf "%.2f %.2f %s %s\n", $1, $2, $3, $4 }'
}
# can_access as a WHERE clause over every row, in a session that does not act
# as an agent (the allowlist folds away; the decision is can_access alone)
CA="SELECT id FROM %s t WHERE agent.can_access(%s, '%s', t.id::text, 'read', 'autonomous', NULL)"
read -r c r nc nr <<<"$(pair "$(printf "$CA" tickets_c 1 page)" user:u1 "$(printf "$CA" tickets_r 2 page)" user:u2)"
echo "can_access over $ROWS rows (readable: coll $nc, row $nr): coll $c ms, row $r ms, coll/row $(ratio "$c" "$r")"
[ "$nc" = "$nr" ] || { echo "collections: coll and row readable counts differ ($nc, $nr)" >&2; exit 1; }

QUERY="SELECT id, title, ts_rank(tsv, q) AS r FROM %s, to_tsquery('simple', '%s') q WHERE tsv @@ q ORDER BY r DESC LIMIT 20"
QUERY_TS="SELECT id, title, ts_rank(tsv, q) AS r FROM %s, to_tsquery('simple', '%s') q WHERE agent.ts_match(tsv, q) ORDER BY r DESC LIMIT 20"
echo "ranked search under the allowlist as the agent, beside the unrestricted query (target <= 1.5x):"
printf '%-6s %7s | %7s %7s %6s | %7s %7s %6s | %9s\n' term matches unr coll coll/u unr row row/u coll/row
for term in a3 b42 c777 zz9; do
    m=$(q -c "SELECT count(*) FROM tickets_c WHERE tsv @@ to_tsquery('simple', '$term')")
    read -r u1 a1 _ _ <<<"$(pair "$(printf "$QUERY" tickets_c $term)" user:u1 "$(printf "$QUERY_TS" tickets_c $term)" agent:1)"
    read -r u2 a2 _ _ <<<"$(pair "$(printf "$QUERY" tickets_r $term)" user:u2 "$(printf "$QUERY_TS" tickets_r $term)" agent:2)"
    printf '%-6s %7s | %7s %7s %6s | %7s %7s %6s | %9s\n' "$term" "$m" "$u1" "$a1" "$(ratio "$a1" "$u1")" \
        "$u2" "$a2" "$(ratio "$a2" "$u2")" "$(ratio "$a1" "$a2")"
done
