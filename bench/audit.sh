#!/usr/bin/env bash
# Audit cost: INSERT and UPDATE throughput on
#   (a) an unaudited table,
#   (b) the same table with agent.audit_table (C trigger: rows buffered per
#       statement, multi-inserted into the monthly partition),
#   (c) the same table with a typical PL/pgSQL jsonb audit trigger doing the
#       same job (bench/audit_plpgsql.sql: supa_audit-style to_jsonb rows and
#       primary-key lookup, changed columns only, redaction of credential
#       keys and values, insert into an indexed log table),
#   (d) the same table with a plain PL/pgSQL trigger storing to_jsonb(NEW)
#       into a log with an identity primary key (no redaction, no diff).
# Two workloads: bulk statements (INSERT ... SELECT, UPDATE of every row),
# each figure the best of 3 interleaved rounds (the machine is shared), and
# OLTP transactions (pgbench, one row per transaction, the four tables side
# by side in one run, median of 3 rounds).  The added cost of a
# trigger is its time per row minus the unaudited time per row.
# Then retention: a year of audit rows (12 monthly partitions), the oldest
# month removed by agent.purge_audit() (partition dropped) and, on a copy of
# the same rows in one unpartitioned table with the 0.3.0 indexes, by DELETE.
# BENCH_SCALE=small shrinks the row counts and durations.
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")" && pwd)
if [ "${BENCH_SCALE:-}" = small ]; then rows=5000; secs=2; month_rows=5000; else rows=30000; secs=5; month_rows=50000; fi
rounds=3
psql=(psql -XAtq -v ON_ERROR_STOP=1)

PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" -f "$here/audit_plpgsql.sql" >/dev/null
PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" >/dev/null <<SQL
DROP TABLE IF EXISTS bench_audit_a, bench_audit_b, bench_audit_c, bench_audit_d;
CREATE TABLE bench_audit_a (id bigint PRIMARY KEY, workspace_id text, owner_id text, title text,
                            status text, priority int, body text, meta jsonb,
                            updated_at timestamptz DEFAULT now());
CREATE TABLE bench_audit_b (LIKE bench_audit_a INCLUDING ALL);
CREATE TABLE bench_audit_c (LIKE bench_audit_a INCLUDING ALL);
CREATE TABLE bench_audit_d (LIKE bench_audit_a INCLUDING ALL);
SELECT agent.audit_table('bench_audit_b', 'ticket', 'owner_id');
CREATE TRIGGER bench_plpgsql_audit AFTER INSERT OR UPDATE OR DELETE ON bench_audit_c
  FOR EACH ROW EXECUTE FUNCTION bench_audit.plpgsql_audit_trigger('ticket');
CREATE TRIGGER bench_plain_audit AFTER INSERT OR UPDATE OR DELETE ON bench_audit_d
  FOR EACH ROW EXECUTE FUNCTION bench_audit.plain_audit_trigger();
SQL
tables=(bench_audit_a bench_audit_b bench_audit_c bench_audit_d)

# bulk: seconds for one statement over $rows rows
bulk() {  # table, kind
    local t=$1 kind=$2 sql
    if [ "$kind" = insert ]; then
        sql="INSERT INTO $t (id, workspace_id, owner_id, title, status, priority, body, meta)
             SELECT g, 'ws' || (g % 10), 'u' || (g % 100), 'Ticket ' || g, 'open', g % 5,
                    repeat('lorem ipsum ', 10), jsonb_build_object('tags', jsonb_build_array('a', 'b'), 'n', g)
               FROM generate_series(1, $rows) g"
    else
        sql="UPDATE $t SET status = CASE status WHEN 'open' THEN 'closed' ELSE 'open' END, priority = priority + 1"
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
# added cost of b relative to d, from rates: (1/b - 1/a) / (1/d - 1/a)
added() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { printf "%.2f", (1/b - 1/a) / (1/d - 1/a) }'; }
us_row() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (1/b - 1/a) * 1e6 }'; }
best_secs() { printf '%s\n' "$@" | sort -g | head -1; }

echo "bulk statements, $rows rows each, best of $rounds (rows/s):"
for kind in insert update; do
    A=(); B=(); C=(); D=()
    for r in $(seq $rounds); do
        if [ "$kind" = insert ]; then
            "${psql[@]}" -c "TRUNCATE bench_audit_a, bench_audit_b, bench_audit_c, bench_audit_d" >/dev/null
        fi
        A+=("$(secs_of bench_audit_a $kind)"); B+=("$(secs_of bench_audit_b $kind)")
        C+=("$(secs_of bench_audit_c $kind)"); D+=("$(secs_of bench_audit_d $kind)")
    done
    ra=$(rate "$(best_secs "${A[@]}")"); rb=$(rate "$(best_secs "${B[@]}")")
    rc=$(rate "$(best_secs "${C[@]}")"); rd=$(rate "$(best_secs "${D[@]}")")
    printf '  %-6s (a) plain %7s   (b) C audit %7s   (c) plpgsql redacting %6s   (d) plpgsql to_jsonb %7s\n' \
        "$kind" "$ra" "$rb" "$rc" "$rd"
    printf '         b/a %s (target >= 0.5)   added cost per row: C %s us, to_jsonb plpgsql %s us, C/plpgsql %s (target <= 0.33)   b/c %s\n' \
        "$(ratio "$rb" "$ra")" "$(us_row "$ra" "$rb")" "$(us_row "$ra" "$rd")" "$(added "$ra" "$rb" "$rd")" "$(ratio "$rb" "$rc")"
done

# OLTP: one row per transaction through pgbench.  The four tables' scripts run
# side by side in one pgbench run (each transaction picks one at random), so
# that each sees the same moments of the shared machine; each table's figure
# comes from the latencies pgbench logs for its own transactions (one client:
# tps = 1 / mean latency).  The ratio of the 10th-percentile latencies is
# printed too: on a loaded machine the mean (and even the median) adds the
# time other processes held the cores, the same for all four, which pulls
# their ratios towards 1; the fastest tenth of each table's transactions ran
# mostly undisturbed, and their ratio is what the audit itself costs.
# Median of $rounds rounds.
"${psql[@]}" -c "TRUNCATE bench_audit_a, bench_audit_b, bench_audit_c, bench_audit_d" >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
script() {  # table, kind
    local t=$1 kind=$2
    if [ "$kind" = insert ]; then
        cat >"$tmp/$kind-$t.sql" <<SQL
\set id random(1, 1000000000)
SET pg_agents.actor = 'agent:1';
INSERT INTO $t (id, workspace_id, owner_id, title, status, priority, body, meta)
VALUES (:id, 'ws1', 'u1', 'Ticket', 'open', 1, 'lorem ipsum', '{"n": 1}') ON CONFLICT DO NOTHING;
SQL
    else
        cat >"$tmp/$kind-$t.sql" <<SQL
\set id random(1, 1000)
SET pg_agents.actor = 'agent:1';
UPDATE $t SET priority = priority + 1, status = 'open' WHERE id = :id;
SQL
    fi
}
# one round: "mean_a .. mean_d p10_a .. p10_d" in microseconds
oltp_round() {  # kind
    local kind=$1 f=() t
    for t in "${tables[@]}"; do script "$t" "$kind"; f+=(-f "$tmp/$kind-$t.sql"); done
    rm -f "$tmp"/pgbench_log.*
    (cd "$tmp" && pgbench -n -c 1 -T $((secs * ${#tables[@]})) -l "${f[@]}" >/dev/null 2>&1)
    # log lines: client transaction latency_us script epoch us
    for t in 0 1 2 3; do awk -v s=$t '$4 == s { print $3 }' "$tmp"/pgbench_log.* | sort -n >"$tmp/lat$t"; done
    for t in 0 1 2 3; do awk '{ n++; x += $1 } END { printf "%.2f ", x / n }' "$tmp/lat$t"; done
    for t in 0 1 2 3; do awk '{ v[NR] = $1 } END { i = int(NR / 10); printf "%d ", v[i < 1 ? 1 : i] }' "$tmp/lat$t"; done
    echo
}
for t in "${tables[@]}"; do
    "${psql[@]}" -c "INSERT INTO $t (id, workspace_id, owner_id, title, status, priority, body, meta)
                     SELECT g, 'ws1', 'u1', 'Ticket', 'open', 1, 'lorem', '{}' FROM generate_series(1, 1000) g" >/dev/null
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "OLTP, one row per transaction, the four tables side by side in one pgbench run of $((secs * ${#tables[@]}))s, median of $rounds (transactions/s = 1 / mean latency):"
for kind in insert update; do
    MA=(); MB=(); MC=(); MD=(); RB=(); RC=(); RD=(); PB=()
    for r in $(seq $rounds); do
        read -r ma mb mc md pa pb pc pd <<<"$(oltp_round $kind)"
        MA+=("$ma"); MB+=("$mb"); MC+=("$mc"); MD+=("$md")
        RB+=("$(ratio "$ma" "$mb")"); RC+=("$(ratio "$mc" "$mb")"); RD+=("$(ratio "$md" "$mb")")
        PB+=("$(ratio "$pa" "$pb")")
    done
    tp() { awk -v l="$(median "$@")" 'BEGIN { printf "%.0f", 1e6 / l }'; }
    printf '  %-6s (a) plain %7s   (b) C audit %7s   (c) plpgsql redacting %6s   (d) plpgsql to_jsonb %7s   b/a %s (target >= 0.8; 10th-percentile latency: %s)   b/c %s   b/d %s\n' \
        "$kind" "$(tp "${MA[@]}")" "$(tp "${MB[@]}")" "$(tp "${MC[@]}")" "$(tp "${MD[@]}")" \
        "$(median "${RB[@]}")" "$(median "${PB[@]}")" "$(median "${RC[@]}")" "$(median "${RD[@]}")"
done

# ---------------------------------------------------------------- retention
# A year of rows: the 12 months before this one, $month_rows rows each (from
# the 2nd of the month on, so that the cut-off below falls between months).
PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" >/dev/null <<SQL
DO \$\$
DECLARE m timestamp := date_trunc('month', now() AT TIME ZONE 'UTC') - interval '12 months';
BEGIN
  WHILE m < date_trunc('month', now() AT TIME ZONE 'UTC') LOOP
    IF to_regclass(format('agent.audit_log_%s', to_char(m, 'YYYY_MM'))) IS NULL THEN
      PERFORM agent._audit_new_partition('audit_log_' || to_char(m, 'YYYY_MM'), m AT TIME ZONE 'UTC',
                                         (m + interval '1 month') AT TIME ZONE 'UTC');
    END IF;
    INSERT INTO agent.audit_log (at, actor_kind, actor_id, action, target_type, target_id, workspace_id, changes, summary)
    SELECT (m + interval '2 days' + (g::float8 / $month_rows) * interval '25 days') AT TIME ZONE 'UTC',
           'agent', '1', 'update', 'ticket', (g % 5000)::text, 'ws' || (g % 10),
           jsonb_build_object('status', jsonb_build_object('old', 'open', 'new', 'closed')),
           'update public.tickets ' || (g % 5000) || ': status'
      FROM generate_series(1, $month_rows) g;
    m := m + interval '1 month';
  END LOOP;
END \$\$;
-- the same rows in one table with the indexes of 0.3.0
DROP TABLE IF EXISTS bench_audit.flat;
CREATE TABLE bench_audit.flat (LIKE agent.audit_log INCLUDING DEFAULTS);
INSERT INTO bench_audit.flat SELECT * FROM agent.audit_log
 WHERE at < date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
ALTER TABLE bench_audit.flat ADD PRIMARY KEY (id);
CREATE INDEX ON bench_audit.flat (workspace_id, at);
CREATE INDEX ON bench_audit.flat (target_type, target_id);
CREATE INDEX ON bench_audit.flat (run_id) WHERE run_id IS NOT NULL;
VACUUM ANALYZE bench_audit.flat;
VACUUM ANALYZE agent.audit_log;
SQL
# the retention that puts the cut-off just after the oldest month
days=$("${psql[@]}" -c "SELECT floor(extract(epoch FROM now() - ((date_trunc('month', now() AT TIME ZONE 'UTC') - interval '11 months') AT TIME ZONE 'UTC')) / 86400)::int")
total=$("${psql[@]}" -c "SELECT count(*) FROM bench_audit.flat")
oldest=$("${psql[@]}" -c "SELECT 'audit_log_' || to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '12 months', 'YYYY_MM')")
others_read() {  # rows read so far from the partitions that stay
    "${psql[@]}" -c "SELECT pg_stat_clear_snapshot()" -c "SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)
                       FROM pg_stat_user_tables s JOIN pg_inherits i ON i.inhrelid = s.relid
                      WHERE i.inhparent = 'agent.audit_log'::regclass AND s.relname <> '$oldest'" | tail -1
}
sleep 1; before=$(others_read)
purge_line=$("${psql[@]}" 2>&1 <<SQL | sed -n 's/.*NOTICE: *//p'
SET pg_agents.audit_retention_days = $days;
SELECT agent.set_identity('system');
DO \$\$
DECLARE t0 timestamptz := clock_timestamp(); n bigint;
BEGIN
  n := agent.purge_audit();
  RAISE NOTICE '% %', n, extract(epoch FROM clock_timestamp() - t0);
END \$\$;
SQL
)
read -r purged purge_s <<< "$purge_line"
sleep 1; after=$(others_read)
delete_line=$("${psql[@]}" 2>&1 <<SQL | sed -n 's/.*NOTICE: *//p'
DO \$\$
DECLARE t0 timestamptz := clock_timestamp(); n bigint;
BEGIN
  DELETE FROM bench_audit.flat WHERE at < now() - make_interval(days => $days);
  GET DIAGNOSTICS n = ROW_COUNT;
  RAISE NOTICE '% %', n, extract(epoch FROM clock_timestamp() - t0);
END \$\$;
SQL
)
read -r deleted delete_s <<< "$delete_line"
echo "retention: the oldest month of a year of audit rows ($total rows, 12 monthly partitions):"
printf '  purge_audit (drops the partition)  %8s rows  %7.3f s   DELETE on one table (0.3.0 indexes)  %8s rows  %7.3f s   DELETE/purge %s (rows read from the other 11 months by the purge: %s)\n' \
    "$purged" "$purge_s" "$deleted" "$delete_s" "$(ratio "$delete_s" "$purge_s")" "$((after - before))"

PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" >/dev/null <<SQL
SELECT agent.unaudit_table('bench_audit_b');
DROP TABLE bench_audit_a, bench_audit_b, bench_audit_c, bench_audit_d;
DROP SCHEMA bench_audit CASCADE;
-- the year of rows goes the same way (whole partitions)
SET pg_agents.audit_retention_days = 1;
SELECT agent.set_identity('system');
SELECT agent.purge_audit();
SQL
