#!/usr/bin/env bash
# The runbooks a DBA pastes from run as written (issue 32): every ```sql
# block of docs/operations.md, in the order of the page, against a database
# with the extension, with psql -v ON_ERROR_STOP=1 as its text says; a block
# that fails (a view or column renamed, a COPY of the partitioned log, a
# function's arguments changed) fails here.  Two things differ from a real
# server, and only those: the removal runbook's CSV goes to a folder of this
# test instead of /var/backups, the agent the examples name (42, of
# workspace w1) is made first, and its step 4 (the pg_cron jobs) runs in
# cron.database_name, where its comment says it runs.  The settings the
# blocks change with ALTER SYSTEM are put back afterwards.
. "$PG_AGENTS_ENV"
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/fixtures/tap.sh"
db=pg_agents_runbooks
work=$(mktemp -d)
chmod 0777 "$work"
autoconf="$PGDATA/postgresql.auto.conf"
cp -p "$autoconf" "$work/auto.conf.keep"
cleanup() {
    cp -p "$work/auto.conf.keep" "$autoconf"
    psql -XAtq -d postgres -c "SELECT pg_reload_conf()" >/dev/null 2>&1
    psql -XAtq -d "$PGDATABASE" -c "SELECT agent.resume_worker()" >/dev/null 2>&1
    psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
    psql -XAtq -d postgres -c "DROP ROLE IF EXISTS exporter" -c "DROP ROLE IF EXISTS analytics" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
psql -XAtq -d postgres -c "DROP ROLE IF EXISTS exporter" -c "DROP ROLE IF EXISTS analytics" >/dev/null 2>&1
psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
psql -XAtq -d $db -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_agents" >/dev/null
ok $? "a database with the extension"
# what the page's examples name: workspace w1, its agent 42 (alice's)
psql -XAtq -d $db -v ON_ERROR_STOP=1 -c "INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (42, 'w1', 'alice', 'Digest')" >/dev/null
ok $? "agent 42 of workspace w1, which the examples name"
cron_db=$(psql -XAtq -d postgres -c "SHOW cron.database_name")

# the blocks, one file each, named by the line the block starts on
awk -v out="$work" '
    /^```/ { if (inblk) { inblk = 0; close(f); next }
             if ($0 == "```sql") { inblk = 1; f = sprintf("%s/block_%04d.sql", out, NR + 1) }
             next }
    inblk { print > f }' "$here/docs/operations.md"
n=$(ls "$work"/block_*.sql 2>/dev/null | wc -l)
[ "$n" -ge 15 ]; ok $? "docs/operations.md has its sql blocks ($n)"

worker_pid() { psql -XAtq -d "$PGDATABASE" -c "SELECT pid FROM agent.worker_status WHERE pid IS NOT NULL" 2>/dev/null; }
for f in "$work"/block_*.sql; do
    line=$((10#$(basename "$f" .sql | sed 's/block_//')))
    first=$(grep -m1 -v '^--' "$f" | cut -c1-60)
    sed -i "s|'/var/backups/|'$work/|g" "$f"
    if grep -q '^-- 4\. pg_cron jobs' "$f"; then
        # the removal runbook: steps 1-3 and 5 here, step 4 in cron.database_name
        awk '/^-- 4\./ { s = 1 } /^-- 5\./ { s = 0 } !s' "$f" >"$work/here.sql"
        awk '/^-- 4\./ { s = 1 } /^-- 5\./ { s = 0 } s' "$f" >"$work/cron.sql"
        out=$(psql -X -q -v ON_ERROR_STOP=1 -d "$cron_db" -f "$work/cron.sql" 2>&1)
        rc=$?; ok $rc "line $line, step 4 in $cron_db: $(head -c 60 "$work/cron.sql" | tail -n1)"; [ $rc = 0 ] || diag "$out"
        out=$(psql -X -q -v ON_ERROR_STOP=1 -d $db -f "$work/here.sql" 2>&1)
        rc=$?; ok $rc "line $line (the removal runbook): $first"; [ $rc = 0 ] || diag "$out"
        is "$(psql -XAtq -d $db -c "SELECT count(*) FROM pg_extension WHERE extname = 'pg_agents'")" 0 \
           "the removal runbook removed the extension"
        [ -s "$work/pg_agents_audit.csv" ] && head -1 "$work/pg_agents_audit.csv" | grep -q '^id,'
        ok $? "and kept the audit log in a CSV file with its header first"
        continue
    fi
    out=$(psql -X -q -v ON_ERROR_STOP=1 -d $db -f "$f" 2>&1)
    rc=$?; ok $rc "line $line: $first"; [ $rc = 0 ] || diag "$out"
    if grep -q 'pg_terminate_backend' "$f"; then
        # the block restarted the worker: the next tests want it back
        for _ in $(seq 1 120); do [ -n "$(worker_pid)" ] && break; sleep 0.5; done
        [ -n "$(worker_pid)" ]; ok $? "the worker is back after line $line's restart"
    fi
done
done_testing
