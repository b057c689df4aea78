#!/usr/bin/env bash
# Analytics at a year of history (docs/analytics.md): the audit queries an
# analytics team runs (rows of one actor in a month, the history of one
# target, changes per table per day, denials per agent), as written in the
# doc, over N audit rows spread over the 12 months before this one (12
# monthly partitions, 20 workspaces, 500 agents, 50,000 targets), each beside
# the same rows in one unpartitioned table with the same indexes, as a
# superuser naming the workspace (what row-level security adds for a bound
# reader).  Each figure is the median of 5 runs in one session after a
# warm-up (JIT off); the partitions each plan reads are printed.
#   N = 10,000,000 (BENCH_SCALE=small: 240,000).
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/.." && pwd)
doc="$here/docs/analytics.md"
n=10000000
[ "${BENCH_SCALE:-}" = small ] && n=240000
per=$((n / 12))
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }

t0=$(date +%s)
PGOPTIONS="-c client_min_messages=warning" q >/dev/null <<SQL
DO \$\$
DECLARE m timestamp := date_trunc('month', now() AT TIME ZONE 'UTC') - interval '12 months';
BEGIN
  WHILE m < date_trunc('month', now() AT TIME ZONE 'UTC') LOOP
    IF to_regclass(format('agent.audit_log_%s', to_char(m, 'YYYY_MM'))) IS NULL THEN
      PERFORM agent._audit_new_partition('audit_log_' || to_char(m, 'YYYY_MM'), m AT TIME ZONE 'UTC',
                                         (m + interval '1 month') AT TIME ZONE 'UTC');
    END IF;
    INSERT INTO agent.audit_log (at, actor_kind, actor_id, action, status, error_code, target_type, target_id,
                                 workspace_id, run_id, changes, summary)
    SELECT (m + (g::float8 / $per) * interval '27 days') AT TIME ZONE 'UTC',
           CASE WHEN g % 4 = 0 THEN 'human' ELSE 'agent' END,
           CASE WHEN g % 4 = 0 THEN 'user' || (g % 1000) ELSE (g % 500)::text END,
           (ARRAY['insert', 'update', 'update', 'delete', 'access.denied', 'run.finish'])[1 + g % 6],
           CASE WHEN g % 6 = 4 THEN 'denied' ELSE 'success' END,
           CASE WHEN g % 6 = 4 THEN 'not_granted' END,
           (ARRAY['ticket', 'page', 'collection'])[1 + g % 3], (g % 50000)::text,
           'ws-bench-an-' || (g % 20), CASE WHEN g % 4 <> 0 THEN g END,
           jsonb_build_object('status', jsonb_build_object('old', 'open', 'new', 'closed')),
           'update public.tickets ' || (g % 50000) || ': status'
      FROM generate_series(1, $per) g;
    m := m + interval '1 month';
  END LOOP;
END \$\$;
CREATE SCHEMA IF NOT EXISTS bench_an;
DROP TABLE IF EXISTS bench_an.flat;
CREATE TABLE bench_an.flat (LIKE agent.audit_log INCLUDING DEFAULTS);
INSERT INTO bench_an.flat SELECT * FROM agent.audit_log WHERE workspace_id LIKE 'ws-bench-an-%';
CREATE INDEX ON bench_an.flat USING brin (at);
CREATE INDEX ON bench_an.flat (workspace_id, at);
CREATE INDEX ON bench_an.flat (target_type, target_id);
CREATE INDEX ON bench_an.flat (run_id) WHERE run_id IS NOT NULL;
VACUUM ANALYZE bench_an.flat;
VACUUM ANALYZE agent.audit_log;
SQL
t1=$(date +%s)

block() { awk -v name="-- analytics: $1" '
    /^```sql/ { inb = 1; buf = ""; next }
    /^```/ { if (inb && hit) { printf "%s", buf; exit } inb = 0; hit = 0; next }
    inb { if ($0 == name) hit = 1; else buf = buf $0 "\n" }' "$doc"; }
median() {  # sql -> ms
    local t
    t=$(q -c "SET jit = off" -c "$1" -c '\timing on' -c "$1" -c "$1" -c "$1" -c "$1" -c "$1" \
          | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sort -n | sed -n 3p)
    echo "$t"
}
parts() {  # sql -> partitions read
    q -c "SET jit = off" -c "EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) $1" | python3 -c '
import json, sys
rels = set()
def walk(n):
    if n.get("Relation Name", "").startswith("audit_log_") and n.get("Actual Loops", 0) > 0: rels.add(n["Relation Name"])
    for c in n.get("Plans", []): walk(c)
walk(json.load(sys.stdin)[0]["Plan"])
print(len(rels))'
}
rows=$(q -c "SELECT count(*) FROM bench_an.flat")
echo "analytics bench: $rows audit rows over 12 monthly partitions, 20 workspaces (loaded in $((t1 - t0)) s);"
echo "  the queries of docs/analytics.md for workspace ws-bench-an-7, partitioned log beside one unpartitioned table (same indexes)"
printf '  %-20s %12s %12s %8s %10s\n' query "partitioned" "one table" ratio partitions
for name in actor_month target_history changes_per_day denials_per_agent; do
    sql=$(block "$name" | sed "0,/ WHERE /s// WHERE workspace_id = 'ws-bench-an-7' AND /")
    # the actor, target of the workspace that exist in the data
    sql=${sql//"actor_id = '17'"/"actor_id = '147'"}
    sql=${sql//"target_id = '4242'"/"target_id = '4247'"}
    flat=${sql//agent.audit_log/bench_an.flat}
    a=$(median "$sql"); b=$(median "$flat")
    printf '  %-20s %9.2f ms %9.2f ms %8.2f %10s\n' "$name" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$(parts "$sql")"
done
q -c "DROP TABLE bench_an.flat" -c "DROP SCHEMA bench_an" >/dev/null
