#!/usr/bin/env bash
# docs/analytics.md's queries, run as written by an analytics role bound to
# one workspace, over audit rows of two workspaces in four monthly
# partitions: each answer is the one computed from the table directly (and
# nothing of the other workspace), and each plan reads only the partitions
# of its period and, in them, an index (the storage the doc promises).
. "$(dirname "$0")/../fixtures/worker_lib.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
doc="$here/docs/analytics.md"

psql -XAtq -c "SET client_min_messages = warning; DROP ROLE IF EXISTS r205; CREATE ROLE r205 IN ROLE agents_reader;
               DROP ROLE IF EXISTS r205_nobody; CREATE ROLE r205_nobody" >/dev/null
q "SELECT agent.bind_reader('r205', 'w205a')" >/dev/null
# the three months before this one and this one, 300 rows each per workspace
q "DO \$\$
DECLARE m timestamp := date_trunc('month', now() AT TIME ZONE 'UTC') - interval '3 months';
BEGIN
  WHILE m <= date_trunc('month', now() AT TIME ZONE 'UTC') LOOP
    IF to_regclass(format('agent.audit_log_%s', to_char(m, 'YYYY_MM'))) IS NULL THEN
      PERFORM agent._audit_new_partition('audit_log_' || to_char(m, 'YYYY_MM'), m AT TIME ZONE 'UTC',
                                         (m + interval '1 month') AT TIME ZONE 'UTC');
    END IF;
    INSERT INTO agent.audit_log (at, actor_kind, actor_id, action, status, error_code, target_type, target_id,
                                 workspace_id, changes, summary)
    SELECT least((m + interval '1 hour' + (g::float8 / 300) * interval '27 days') AT TIME ZONE 'UTC', now()),
           CASE WHEN g % 3 = 0 THEN 'human' ELSE 'agent' END,
           CASE WHEN g % 3 = 0 THEN 'user' || (g % 4) ELSE (10 + g % 9)::text END,
           (ARRAY['insert', 'update', 'delete', 'access.denied'])[1 + g % 4],
           CASE WHEN g % 4 = 3 THEN 'denied' ELSE 'success' END,
           CASE WHEN g % 4 = 3 THEN 'not_granted' END,
           (ARRAY['ticket', 'page'])[1 + g % 2], (4240 + g % 5)::text, w,
           jsonb_build_object('status', jsonb_build_object('old', 'open', 'new', 'closed')), 'row ' || g
      FROM generate_series(1, 300) g, unnest(ARRAY['w205a', 'w205b']) w;
    m := m + interval '1 month';
  END LOOP;
END \$\$" >/dev/null
q "ANALYZE agent.audit_log" >/dev/null

# the blocks of the doc, by their marker line
block() { awk -v name="-- analytics: $1" '
    /^```sql/ { inb = 1; buf = ""; next }
    /^```/ { if (inb && hit) { printf "%s", buf; exit } inb = 0; hit = 0; next }
    inb { if ($0 == name) hit = 1; else buf = buf $0 "\n" }' "$doc"; }
as_reader() {  # role workspace sql
    psql -XAtq -v ON_ERROR_STOP=1 -c "SET ROLE $1" -c "SET pg_agents.workspace = '$2'" -c "$3" 2>&1
}
# a query's answer as a superuser, restricted to one workspace: the doc's
# query with the workspace added to its WHERE clause
direct() { q "$(printf '%s' "$1" | sed "0,/ WHERE /s// WHERE workspace_id = '$2' AND /")"; }
# partitions scanned and whether every scan of a partition uses an index
plan_facts() {  # json on stdin -> "partitions=N index=t|f names=..."
    python3 -c '
import json, sys
plan = json.load(sys.stdin)[0]["Plan"]
scans = []
def walk(n):
    if "Relation Name" in n and n["Relation Name"].startswith("audit_log"):
        scans.append((n["Relation Name"], n["Node Type"]))
    for c in n.get("Plans", []): walk(c)
walk(plan)
rels = sorted(set(r for r, _ in scans if r != "audit_log_default"))
idx = all(t in ("Index Scan", "Index Only Scan", "Bitmap Heap Scan") for r, t in scans if r != "audit_log_default")
print(len(rels), "t" if idx and rels else "f", ",".join(rels))'
}
explain() {  # workspace sql [settings]
    psql -XAtq -v ON_ERROR_STOP=1 -c "SET ROLE r205" -c "SET pg_agents.workspace = '$1'" ${3:+-c "$3"} \
         -c "EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) $2" | plan_facts
}
months_since() {  # how many monthly partitions [now() - N days, now()] touches
    q "SELECT count(*) FROM generate_series(date_trunc('month', (now() - interval '$1 days') AT TIME ZONE 'UTC'),
                                            date_trunc('month', now() AT TIME ZONE 'UTC'), interval '1 month') m
        WHERE to_regclass(format('agent.audit_log_%s', to_char(m, 'YYYY_MM'))) IS NOT NULL"
}

for name in actor_month target_history changes_per_day denials_per_agent; do
    sql=$(block "$name")
    ok "$([ -n "$sql" ] && echo t)" "$name: the block is in docs/analytics.md"
    got=$(as_reader r205 w205a "$sql")
    want=$(direct "$sql" w205a)
    ok "$([ -n "$want" ] && echo t)" "$name: the fixture has rows for it"
    is "$got" "$want" "$name: the bound reader's answer is the table's, for its workspace"
    is "$(as_reader r205 w205b "$sql")" "" "$name: nothing of a workspace the reader is not bound to"
    like "$(as_reader r205_nobody w205a "$sql")" "permission denied" "$name: a role with no grants reads nothing"
    read -r n idx rels <<<"$(explain w205a "$sql")"
    case $name in
        actor_month) want_n=1 ;;
        target_history) want_n=$(months_since 90) ;;
        *) want_n=$(months_since 30) ;;
    esac
    is "$n" "$want_n" "$name: only the partitions of its period are read ($rels)"
    read -r n idx rels <<<"$(explain w205a "$sql" "SET enable_seqscan = off")"
    is "$idx" "t" "$name: an index of those partitions serves it"
done
done_testing
