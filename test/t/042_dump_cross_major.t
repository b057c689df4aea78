#!/usr/bin/env bash
# The move to a newer major with a logical dump (issue 32): the dump that
# pg_dump of PostgreSQL 15 made of the database of test/fixtures/dump_source.sh
# (kept in test/fixtures/dump_pg15.sql, with the hash of every table of
# schema agent beside it in dump_pg15.hash) is restored on this server the
# way docs/operations.md says, and every table has the same rows: on the
# host's 15, and in the matrix on 17 (Debian 13) and 18 (forky), which is the
# path a DBA takes with Debian's packages.  The fixture also says which
# builder made it: when test/fixtures/dump_source.sh or the schema changes,
# make it again on PostgreSQL 15:
#   PG_AGENTS_REGEN_DUMP=1 TESTS=042 make test
. "$PG_AGENTS_ENV"
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/fixtures/tap.sh"
. "$here/test/fixtures/dump_source.sh"
fixture=$here/test/fixtures/dump_pg15.sql
hashfile=$here/test/fixtures/dump_pg15.hash
src=pg_agents_xmajor_src
dst=pg_agents_xmajor_dst
work=$(mktemp -d)
cleanup() {
    for d in $src $dst; do psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1; done
    rm -rf "$work"
}
trap cleanup EXIT
for d in $src $dst; do psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1; done
major=$(psql -XAtq -d postgres -c "SELECT current_setting('server_version_num')::int / 10000")
builder=$( { dump_build_sql; dump_audit_sql; echo "$dump_left_out"; } | md5sum | cut -c1-32)

if [ -n "${PG_AGENTS_REGEN_DUMP:-}" ]; then
    [ "$major" = 15 ] || skip_all "the fixture is made on PostgreSQL 15 (this server is $major)"
    psql -XAtq -d postgres -c "CREATE DATABASE $src" >/dev/null
    out=$( { dump_build_sql; dump_audit_sql; } | psql -XAtq -v ON_ERROR_STOP=1 -d $src 2>&1)
    rc=$?; ok $rc "the source database is built on PostgreSQL 15"; [ $rc = 0 ] || diag "$out"
    pg_dump --load-via-partition-root --no-owner -d $src -f "$work/dump.sql" 2>"$work/dump.err"
    ok $? "pg_dump of PostgreSQL 15"
    # the line pg_dump writes for psql's \restrict is random: a fixed one
    # keeps the fixture's diffs to what changed
    sed -E 's/^\\(un)?restrict [A-Za-z0-9]+$/\\\1restrict pgagentsdumpfixture/' "$work/dump.sql" >"$fixture"
    { echo "builder $builder"; dump_hashes $src whole; } >"$hashfile"
    ok $? "test/fixtures/dump_pg15.sql and dump_pg15.hash written"
fi

[ -s "$fixture" ] && [ -s "$hashfile" ]; ok $? "the fixture made on PostgreSQL 15 is in the tree"
head -c 400 "$fixture" | grep -q 'Dumped by pg_dump version 15\.'; ok $? "it was dumped by pg_dump 15"
is "$(sed -n 's/^builder //p' "$hashfile")" "$builder" \
   "it was made by this test/fixtures/dump_source.sh (else: PG_AGENTS_REGEN_DUMP=1 TESTS=042 make test on PostgreSQL 15)"

psql -XAtq -d postgres -c "CREATE DATABASE $dst" >/dev/null
out=$(PGOPTIONS='-c session_replication_role=replica' psql -XAtq -v ON_ERROR_STOP=1 -d $dst -f "$fixture" 2>&1)
rc=$?; ok $rc "psql of PostgreSQL $major restores the dump of PostgreSQL 15 with ON_ERROR_STOP"; [ $rc = 0 ] || diag "${out:0:2000}"
dump_hashes $dst whole >"$work/dst.hash"
d=$(diff <(grep -v '^builder ' "$hashfile") "$work/dst.hash")
is "$d" "" "PostgreSQL $major: every table of schema agent has the rows it had on 15 (else the schema changed: make the fixture again)"
is "$(psql -XAtq -d $dst -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_agents'")" \
   "$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$here/pg_agents.control")" "the extension is the version this tree builds"
is "$(psql -XAtq -d $dst -c "SELECT count(*) FROM agent.runs WHERE status = 'queued'")" 3 \
   "the three runs queued on 15 come back queued, and the restore queued none"
maxrun=$(psql -XAtq -d $dst -c "SELECT max(id) FROM agent.runs")
id=$(psql -XAtq -d $dst -c "INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status) VALUES ('wa', 1, 'manual', 'api', 'queued') RETURNING id")
[ -n "$id" ] && [ "$id" -gt "$maxrun" ]; ok $? "the runs' identity goes on past the restored ids (${id:-none} > $maxrun)"
out=$(psql -XAtq -d $dst -c "DELETE FROM agent.audit_log" 2>&1)
contains "$out" "ERROR" "the audit log refuses a DELETE after the restore"
is "$(psql -XAtq -d $dst -c "SELECT count(*) FROM agent.secrets WHERE position(convert_to('sk-dump-test-value', 'UTF8') IN ciphertext) > 0")" 0 \
   "the secret came back encrypted"
done_testing
