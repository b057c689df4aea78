#!/usr/bin/env bash
# access: can_access caches what it reads for as long as the snapshot lasts;
# another session's commit must be seen by the next statement (READ
# COMMITTED, even inside one transaction, even when nothing else changed in
# between), never inside the same statement's or a REPEATABLE READ snapshot.
. "$PG_AGENTS_ENV"
export PGOPTIONS='-c client_min_messages=warning'
. "$(dirname "$0")/../fixtures/tap.sh"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
plan 9

q <<'SQL'
DELETE FROM agent.agents WHERE id = 7600001;
DELETE FROM agent.resource_acl WHERE workspace_id = 'ws-snap';
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7600001, 'ws-snap', 'sue', 'snapshots');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'ws-snap', 'page', 'sp' || i, 'user:sue', 'edit' FROM generate_series(1, 20) i;
SQL

dir=$(mktemp -d)
trap 'exec 3>&- 4>&- 5>&-; kill $pa $pb $pc 2>/dev/null; rm -rf "$dir"' EXIT
mkfifo "$dir/a" "$dir/b" "$dir/c"
psql -XAtq -v ON_ERROR_STOP=1 <"$dir/a" >"$dir/a.out" 2>&1 & pa=$!
psql -XAtq -v ON_ERROR_STOP=1 <"$dir/b" >"$dir/b.out" 2>&1 & pb=$!
psql -XAtq -v ON_ERROR_STOP=1 <"$dir/c" >"$dir/c.out" 2>&1 & pc=$!
exec 3>"$dir/a" 4>"$dir/b" 5>"$dir/c"
# send SQL to a session and wait for its N-th output line
mark=0
A() { echo "$1" >&3; }
B() { echo "$1" >&4; }
wait_line() {  # file, line number
    local i
    for i in $(seq 1 200); do
        [ "$(wc -l <"$1")" -ge "$2" ] && return 0
        sleep 0.05
    done
    return 1
}
last() { sed -n "${2}p" "$1"; }

# READ COMMITTED, one transaction in session A
A "BEGIN;"
A "SELECT agent.can_access(7600001, 'page', 'sp1');"; wait_line "$dir/a.out" 1
[ "$(last "$dir/a.out" 1)" = f ]; ok $? "no grant yet: refused"
q -c "SELECT agent.grant(7600001, 'page', 'sp1', 'edit')" >/dev/null
A "SELECT agent.can_access(7600001, 'page', 'sp1');"; wait_line "$dir/a.out" 2
[ "$(last "$dir/a.out" 2)" = t ]; ok $? "a grant committed by another session: seen by the next statement of the same transaction"
A "SELECT count(*) FROM generate_series(1, 40) i WHERE agent.can_access(7600001, 'page', 'sp' || (1 + i % 2));"; wait_line "$dir/a.out" 3
[ "$(last "$dir/a.out" 3)" = 20 ]; ok $? "many checks in one statement (grant set loaded): 20 of 40"

# session C holds the oldest transaction id open throughout (so the snapshots'
# xmin never moves); session B grants in a transaction it keeps open, then commits
echo "BEGIN; SELECT txid_current() > 0;" >&5; wait_line "$dir/c.out" 1
B "BEGIN;"
B "SELECT agent.grant(7600001, 'page', 'sp2', 'read');"; wait_line "$dir/b.out" 1
# a later transaction commits first: B's id stays below A's next snapshot's
# xmax, so only the set of in-progress transactions tells the snapshots apart
q -c "SELECT txid_current()" >/dev/null
A "SELECT count(*) FROM generate_series(1, 40) i WHERE agent.can_access(7600001, 'page', 'sp' || (1 + i % 2));"; wait_line "$dir/a.out" 4
[ "$(last "$dir/a.out" 4)" = 20 ]; ok $? "a grant not yet committed is not seen"
B "COMMIT;"; B "SELECT 'committed';"; wait_line "$dir/b.out" 2
A "SELECT count(*) FROM generate_series(1, 40) i WHERE agent.can_access(7600001, 'page', 'sp' || (1 + i % 2));"; wait_line "$dir/a.out" 5
[ "$(last "$dir/a.out" 5)" = 40 ]; ok $? "once committed it is seen by the next statement (nothing else changed in between)"
q -c "SELECT agent.revoke(7600001, 'page', 'sp1')" >/dev/null
A "SELECT agent.can_access(7600001, 'page', 'sp1');"; wait_line "$dir/a.out" 6
[ "$(last "$dir/a.out" 6)" = f ]; ok $? "a revoke committed by another session: refused at once"
A "COMMIT;"
echo "COMMIT;" >&5

# REPEATABLE READ: the transaction keeps its snapshot
A "BEGIN ISOLATION LEVEL REPEATABLE READ;"
A "SELECT agent.can_access(7600001, 'page', 'sp3');"; wait_line "$dir/a.out" 7
[ "$(last "$dir/a.out" 7)" = f ]; ok $? "repeatable read: no grant on sp3"
q -c "SELECT agent.grant(7600001, 'page', 'sp3', 'read')" >/dev/null
A "SELECT agent.can_access(7600001, 'page', 'sp3');"; wait_line "$dir/a.out" 8
[ "$(last "$dir/a.out" 8)" = f ]; ok $? "repeatable read: a later commit stays invisible, like to any query"
A "COMMIT;"
A "SELECT agent.can_access(7600001, 'page', 'sp3');"; wait_line "$dir/a.out" 9
[ "$(last "$dir/a.out" 9)" = t ]; ok $? "after the transaction: seen"

grep -q ERROR "$dir/a.out" "$dir/b.out" "$dir/c.out" && { echo "# errors:"; sed 's/^/# /' "$dir/a.out" "$dir/b.out" "$dir/c.out"; }
q -c "DELETE FROM agent.agents WHERE id = 7600001; DELETE FROM agent.resource_acl WHERE workspace_id = 'ws-snap'" >/dev/null
done_testing
