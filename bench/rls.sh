#!/usr/bin/env bash
# Allowlist overhead: a ranked full-text query over N pages (1M; 100k with
# BENCH_SCALE=small) run three ways, side by side in one cluster:
#   before   the table without row-level security
#   user     a non-agent session once agent.enable_allowlist is installed
#   agent    a session acting as an agent with 10k grants (1k small), under
#            the non-bypassing role agents_tool, each run after a commit that
#            changes no access data (the readable set is kept)
#   cold     the same, each run after a commit that changes access data:
#            a grant of another agent (other), one of the agent's own grants
#            (own), the owner's ACL row of one granted page (acl), or the
#            owner's membership of a group that reads 10 granted pages
#            (group), a write of the agent's own row that leaves what access
#            reads of it as it was (agent: its status set to what it was, as
#            agent.set_status does), its suspension and resumption in one
#            commit (status); the kept readable set is kept (other, agent),
#            patched (own, acl, group) or read again (status) from the
#            change; after a change that makes it computed afresh (afresh,
#            for reference: a workspace_shared grant given and taken back,
#            as an owner change does) it is computed
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
-- the granted page whose grant and ACL row the 'own' and 'acl' changes touch
CREATE TABLE bench_one AS SELECT min(id)::text AS rid FROM granted;
-- a group that reads 10 granted pages (the owner joins and leaves it)
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', id::text, 'group:bench', 'read' FROM granted ORDER BY id LIMIT 10;
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
-- the same, committing a write before each run: with access = 'other', a
-- change of another agent's grant; 'own', of one of the agent's own grants;
-- 'acl', of the owner's ACL row of one granted page; 'group', of the owner's
-- membership of a group that reads 10 granted pages; 'agent', of the agent's
-- own row that leaves its owner, workspace, status and deletion as they were
-- (what agent.set_status writes when the status stays); 'status', its
-- suspension and resumption in one transaction; 'afresh', a change that makes
-- the set computed afresh (a workspace_shared grant given and taken back: the
-- agent as a whole changes, as it does when its owner changes); else a write
-- to an unrelated table
CREATE TABLE bench_tick (n int);
GRANT INSERT ON bench_tick TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (2, 'ws1', 'u1', 'other agent');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (2, 'page', '1', 'read');
CREATE FUNCTION bench_touch_grants(what text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
AS $$
BEGIN
  CASE what
  WHEN 'other' THEN UPDATE agent.access SET access = access WHERE agent_id = 2;
  WHEN 'own' THEN UPDATE agent.access SET access = access
                   WHERE agent_id = 1 AND resource_type = 'page'
                     AND resource_id = (SELECT rid FROM public.bench_one);
  WHEN 'acl' THEN UPDATE agent.resource_acl SET access = access
                   WHERE resource_type = 'page' AND principal = 'user:u1'
                     AND resource_id = (SELECT rid FROM public.bench_one);
  WHEN 'group' THEN DELETE FROM agent.group_members WHERE group_id = 'bench';
                    INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws1', 'bench', 'u1');
  WHEN 'agent' THEN UPDATE agent.agents SET status = status, updated_at = now() WHERE id = 1;
  WHEN 'status' THEN UPDATE agent.agents SET status = 'suspended', updated_at = now() WHERE id = 1;
                     UPDATE agent.agents SET status = 'active', updated_at = now() WHERE id = 1;
  WHEN 'afresh' THEN INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
                       VALUES (1, 'workspace_shared', '*', 'read');
                     DELETE FROM agent.access WHERE agent_id = 1 AND resource_type = 'workspace_shared';
  ELSE INSERT INTO public.bench_tick VALUES (0);
  END CASE;
END $$;
CREATE PROCEDURE bench_commit_ms(query text, reps int, access text, INOUT ms numeric DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE t timestamptz; a numeric[] := '{}'; n bigint;
BEGIN
  EXECUTE 'SELECT count(*) FROM (' || query || ') s' INTO n;     -- warm-up
  FOR i IN 1 .. reps LOOP
    PERFORM bench_touch_grants(access);
    COMMIT;
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || query || ') s' INTO n;
    a := a || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
  END LOOP;
  ms := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(a) x);
END $$;
-- two queries run alternately, each as its actor after a commit (with access
-- other/own/acl/group/agent/status/afresh, that change before each run of the second),
-- so that the load of the shared machine weighs on both alike
CREATE PROCEDURE bench_pair_ms(qa text, actor_a text, qb text, actor_b text, reps int, access text,
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
    PERFORM bench_touch_grants(access);
    COMMIT;
    t := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM (' || qb || ') s' INTO n;
    b := b || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
  END LOOP;
  ms_a := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(a) x);
  ms_b := (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(b) x);
END $$;
SQL
echo "rls: $ROWS pages, $GRANTS grants, built in $(( $(date +%s) - t0 )) s; median of $REPS runs, ms"

# the application's ranked query: unrestricted (before, user) with @@ as
# written without the allowlist; under it, the documented shape with the
# leakproof agent.ts_match (and the old shape with @@, for comparison)
QUERY="SELECT id, title, ts_rank(tsv, q) AS r FROM pages, to_tsquery('simple', '%s') q WHERE tsv @@ q ORDER BY r DESC LIMIT 20"
QUERY_TS="SELECT id, title, ts_rank(tsv, q) AS r FROM pages, to_tsquery('simple', '%s') q WHERE agent.ts_match(tsv, q) ORDER BY r DESC LIMIT 20"
# the worker's search_resources (src/tools/tools.c, ToolSearch), as agents_tool;
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
      -c "CALL bench_commit_ms(\$q\$$2\$q\$, $REPS, '$3')" | xargs printf '%.2f'
}
ratio() { echo "scale=2; $1 / $2" | bc | sed 's/^\./0./'; }
pair() {  # query a, actor a, query b, actor b, access change: "ms_a ms_b"
    q -c "SET ROLE agents_tool" \
      -c "CALL bench_pair_ms(\$q\$$1\$q\$, '$2', \$q\$$3\$q\$, '$4', $REPS, '$5')" |
        awk -F'|' '{ printf "%.2f %.2f\n", $1, $2 }'
}
TERMS="a3 b42 c777 zz9"   # about 10%, 1%, 0.05% of the pages, and none
declare -A before
for term in $TERMS; do before[$term]=$(measure "" "$(printf "$QUERY" $term)"); done
q -c "SELECT agent.enable_allowlist('pages', 'page', 'id')" >/dev/null
echo "ranked search over the allowlisted table, as an agent ($GRANTS grants), each beside the unrestricted"
echo "query run alternately with it (a session that does not act as an agent: the policy folds away):"
echo "  agent   = the documented shape, WHERE agent.ts_match(tsv, q), readable set kept (unrestricted: unr)"
echo "  cold    = the same, the first query after an access change committed (the set not kept as it was):"
echo "            other = a grant of another agent, own = one of the agent's own grants, acl = the owner's"
echo "            ACL row of one granted page, group = the owner's membership of a group that reads 10"
echo "            granted pages, agent = the agent's own row written with its status as it was (as"
echo "            agent.set_status writes it), status = the agent suspended and resumed in one commit"
echo "            (target: each <= 1.5x unr); afresh = a change that makes the set computed afresh (the"
echo "            agent's workspace_shared grant given and taken back; an owner change does the same),"
echo "            for reference"
echo "  agent@@ = the same query written WHERE tsv @@ q (not leakproof: the policy goes first)"
echo "  worker  = search_resources' query as the agent (unrestricted: w.unr, without its can_access)"
echo "  before  = the unrestricted query before enable_allowlist (no policy at all), for reference"
printf '%-6s %7s %7s | %7s %7s %7s %7s %7s | %7s %7s %8s\n' term matches before \
    unr agent 'agent@@' w.unr worker agent/u 'agent@@/u' worker/wu
for term in $TERMS; do
    m=$(q -c "SELECT count(*) FROM pages WHERE tsv @@ to_tsquery('simple', '$term')")
    read -r u a <<<"$(pair "$(printf "$QUERY" $term)" user:u1 "$(printf "$QUERY_TS" $term)" agent:1 none)"
    o=$(measure_commit "agent:1" "$(printf "$QUERY" $term)" none)
    read -r wu w <<<"$(pair "$(printf "$WORKER_U" $term $term)" user:u1 "$(printf "$WORKER" $term $term)" agent:1 none)"
    printf '%-6s %7s %7s | %7s %7s %7s %7s %7s | %7s %7s %8s\n' "$term" "$m" "${before[$term]}" \
        "$u" "$a" "$o" "$wu" "$w" "$(ratio "$a" "$u")" "$(ratio "$o" "$u")" "$(ratio "$w" "$wu")"
done
echo "the first query after an access change, each beside the unrestricted query run alternately with it"
echo "(app = the application's ranked query with agent.ts_match; worker = search_resources' query), ratio (target <= 1.5):"
printf '%-6s %-7s | %7s %7s %6s | %7s %7s %6s\n' term change unr app app/u w.unr worker w/wu
for term in $TERMS; do
    for change in other own acl group agent status afresh; do
        read -r u c <<<"$(pair "$(printf "$QUERY" $term)" user:u1 "$(printf "$QUERY_TS" $term)" agent:1 $change)"
        read -r wu w <<<"$(pair "$(printf "$WORKER_U" $term $term)" user:u1 "$(printf "$WORKER" $term $term)" agent:1 $change)"
        t=""; [ $change = afresh ] && t=" (computed afresh; reference)"
        printf '%-6s %-7s | %7s %7s %6s | %7s %7s %6s%s\n' "$term" "$change" "$u" "$c" "$(ratio "$c" "$u")" \
            "$wu" "$w" "$(ratio "$w" "$wu")" "$t"
    done
done
echo "readable set alone, computed afresh: $(q -c "SET pg_agents.actor = 'agent:1'" -c "CALL bench_commit_ms('SELECT * FROM agent.readable_resources(1, ''page'')', $REPS, 'afresh')" | xargs printf '%.2f') ms"
echo "the same ids probed with no policy (a constant array): $(q -c "SELECT round(bench_ms(format('SELECT id FROM pages WHERE id = ANY (%L::bigint[])', (SELECT array_agg(resource_id::bigint) FROM agent.access WHERE agent_id = 1)), $REPS), 2)") ms"
for term in a3 c777; do
    echo "agent plan ($term):"
    q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" \
      -c "EXPLAIN (COSTS OFF) $(printf "$QUERY_TS" $term)" | sed 's/^/    /' | cut -c1-110
done
