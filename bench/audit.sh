#!/usr/bin/env bash
# Audit trigger cost: INSERT and UPDATE throughput on
#   (a) an unaudited table,
#   (b) the same table with agent.audit_table (C trigger),
#   (c) the same table with a typical PL/pgSQL jsonb audit trigger doing the
#       same job (bench/audit_plpgsql.sql: supa_audit-style to_jsonb rows and
#       primary-key lookup, changed columns only, redaction of credential
#       keys and values, insert into an indexed log table).
# Two workloads: bulk statements (INSERT ... SELECT, UPDATE of every row) and
# OLTP transactions (pgbench, one row per transaction).
# Each figure is the best of 3 interleaved rounds (the machine is shared).
# BENCH_SCALE=small shrinks the row counts and durations.
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")" && pwd)
if [ "${BENCH_SCALE:-}" = small ]; then rows=5000; secs=2; else rows=20000; secs=5; fi
rounds=3
psql=(psql -XAtq -v ON_ERROR_STOP=1)

PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" -f "$here/audit_plpgsql.sql" >/dev/null
PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" >/dev/null <<SQL
DROP TABLE IF EXISTS bench_audit_a, bench_audit_b, bench_audit_c;
CREATE TABLE bench_audit_a (id bigint PRIMARY KEY, workspace_id text, owner_id text, title text,
                            status text, priority int, body text, meta jsonb,
                            updated_at timestamptz DEFAULT now());
CREATE TABLE bench_audit_b (LIKE bench_audit_a INCLUDING ALL);
CREATE TABLE bench_audit_c (LIKE bench_audit_a INCLUDING ALL);
SELECT agent.audit_table('bench_audit_b', 'ticket', 'owner_id');
CREATE TRIGGER bench_plpgsql_audit AFTER INSERT OR UPDATE OR DELETE ON bench_audit_c
  FOR EACH ROW EXECUTE FUNCTION bench_audit.plpgsql_audit_trigger('ticket');
SQL

# bulk: seconds for one statement over $rows rows
bulk() {  # table, kind
    local t=$1 kind=$2 sql
    if [ "$kind" = insert ]; then
        sql="INSERT INTO $t (id, workspace_id, owner_id, title, status, priority, body, meta)
             SELECT g, 'ws' || (g % 10), 'u' || (g % 100), 'Ticket ' || g, 'open', g % 5,
                    repeat('lorem ipsum ', 10), jsonb_build_object('tags', jsonb_build_array('a', 'b'), 'n', g)
               FROM generate_series(1, $rows) g"
    else
        sql="UPDATE $t SET status = 'closed', priority = priority + 1"
    fi
    "${psql[@]}" <<SQL
SET pg_agents.actor = 'agent:1'; SET pg_agents.workspace = 'ws1';
DO \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE \$q\$$sql\$q\$;
  RAISE NOTICE '%', extract(epoch FROM clock_timestamp() - t0);
END \$\$;
SQL
}
secs_of() { bulk "$@" 2>&1 | sed -n 's/.*NOTICE: *//p'; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
rate() { awk -v n="$rows" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }

best_secs() {  # min over values
    printf '%s\n' "$@" | sort -g | head -1
}
echo "bulk statements, $rows rows each, best of $rounds (rows/s):"
for kind in insert update; do
    A=(); B=(); C=()
    for r in $(seq $rounds); do
        if [ "$kind" = insert ]; then
            "${psql[@]}" -c "TRUNCATE bench_audit_a, bench_audit_b, bench_audit_c" >/dev/null
        fi
        A+=("$(secs_of bench_audit_a $kind)"); B+=("$(secs_of bench_audit_b $kind)"); C+=("$(secs_of bench_audit_c $kind)")
    done
    ra=$(rate "$(best_secs "${A[@]}")"); rb=$(rate "$(best_secs "${B[@]}")"); rc=$(rate "$(best_secs "${C[@]}")")
    printf '  %-6s (a) plain %8s   (b) C audit %8s   (c) plpgsql audit %8s   b/a %s (target >= 0.75)   b/c %s (target >= 3)\n' \
        "$kind" "$ra" "$rb" "$rc" "$(ratio "$rb" "$ra")" "$(ratio "$rb" "$rc")"
done

# OLTP: one row per transaction through pgbench
"${psql[@]}" -c "TRUNCATE bench_audit_a, bench_audit_b, bench_audit_c" >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tps() {  # table, kind
    local t=$1 kind=$2
    if [ "$kind" = insert ]; then
        cat >"$tmp/s.sql" <<SQL
\set id random(1, 1000000000)
SET pg_agents.actor = 'agent:1';
INSERT INTO $t (id, workspace_id, owner_id, title, status, priority, body, meta)
VALUES (:id, 'ws1', 'u1', 'Ticket', 'open', 1, 'lorem ipsum', '{"n": 1}') ON CONFLICT DO NOTHING;
SQL
    else
        cat >"$tmp/s.sql" <<SQL
\set id random(1, 1000)
SET pg_agents.actor = 'agent:1';
UPDATE $t SET priority = priority + 1, status = 'open' WHERE id = :id;
SQL
    fi
    pgbench -n -c 1 -T "$secs" -f "$tmp/s.sql" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
for t in bench_audit_a bench_audit_b bench_audit_c; do
    "${psql[@]}" -c "INSERT INTO $t (id, workspace_id, owner_id, title, status, priority, body, meta)
                     SELECT g, 'ws1', 'u1', 'Ticket', 'open', 1, 'lorem', '{}' FROM generate_series(1, 1000) g" >/dev/null
done
best_tps() { printf '%s\n' "$@" | sort -gr | head -1; }
echo "OLTP, one row per transaction, pgbench ${secs}s, best of $rounds (transactions/s):"
for kind in insert update; do
    A=(); B=(); C=()
    for r in $(seq $rounds); do
        A+=("$(tps bench_audit_a $kind)"); B+=("$(tps bench_audit_b $kind)"); C+=("$(tps bench_audit_c $kind)")
    done
    ta=$(best_tps "${A[@]}"); tb=$(best_tps "${B[@]}"); tc=$(best_tps "${C[@]}")
    printf '  %-6s (a) plain %8.0f   (b) C audit %8.0f   (c) plpgsql audit %8.0f   b/a %s (target >= 0.75)   b/c %s (target >= 3)\n' \
        "$kind" "$ta" "$tb" "$tc" "$(ratio "$tb" "$ta")" "$(ratio "$tb" "$tc")"
done
PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" >/dev/null <<SQL
SELECT agent.unaudit_table('bench_audit_b');
DROP TABLE bench_audit_a, bench_audit_b, bench_audit_c;
DROP SCHEMA bench_audit CASCADE;
SQL
