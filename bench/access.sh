#!/usr/bin/env bash
# agent.can_access (C, index scans) against the same rules in PL/pgSQL
# (bench/access_plpgsql.sql), on one core (no parallel workers).
#
# Full scale: 10k agents, 1M grants, 100k ACL rows, 1M calls (C) and 100k
# calls (PL/pgSQL), in two orders.  BENCH_SCALE=small: 1k agents, 100k grants,
# 10k ACL rows, 100k / 10k calls.
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")" && pwd)
if [ "${BENCH_SCALE:-}" = small ]; then
    agents=1000; grants_per=100; acl=10000; calls=100000; pl_calls=10000
else
    agents=10000; grants_per=100; acl=100000; calls=1000000; pl_calls=100000
fi
pages=$((agents * 20))
owners=$((agents / 10))
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }

q -c 'SET client_min_messages = warning' -f "$here/access_plpgsql.sql"
q <<SQL
SET session_replication_role = replica;  -- bulk load: skip the per-row fill triggers and FK checks
DELETE FROM agent.access WHERE workspace_id = 'bench';
DELETE FROM agent.agents WHERE workspace_id = 'bench';
DELETE FROM agent.resource_acl WHERE workspace_id = 'bench';
DELETE FROM agent.group_members WHERE workspace_id = 'bench';
-- agents 9e9 + 1..N, owners o0..o(N/10 - 1); one in 50 suspended
INSERT INTO agent.agents (id, workspace_id, owner_id, name, status)
SELECT 9000000000 + i, 'bench', 'o' || (i % $owners), 'bench ' || i,
       CASE WHEN i % 50 = 0 THEN 'suspended' ELSE 'active' END
FROM generate_series(1, $agents) i;
-- each owner u works on $grants_per pages f(u, k) = p((u * 7919 + k * 104729) % $pages);
-- the agents of an owner hold grants on those pages (one in three at edit);
-- one agent in ten also holds workspace_shared
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
SELECT 'bench', 9000000000 + i, 'page', 'p' || (((i % $owners) * 7919 + k * 104729) % $pages),
       CASE WHEN k % 3 = 0 THEN 'edit' ELSE 'read' END
FROM generate_series(1, $agents) i, generate_series(0, $grants_per - 1) k
ON CONFLICT DO NOTHING;
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
SELECT 'bench', 9000000000 + i, 'workspace_shared', '*', 'read' FROM generate_series(10, $agents, 10) i;
-- the ACL of those pages: the owner (80%), the owner's group (15%) or the
-- whole workspace (5%), half at edit
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'bench', 'page', 'p' || ((u * 7919 + k * 104729) % $pages),
       CASE WHEN k % 20 = 0 THEN 'workspace'
            WHEN k % 20 < 4 THEN 'group:g' || (u % 97)
            ELSE 'user:o' || u END,
       CASE WHEN k % 2 = 0 THEN 'edit' ELSE 'read' END
FROM generate_series(0, $owners - 1) u, generate_series(0, $acl / $owners - 1) k
ON CONFLICT DO NOTHING;
INSERT INTO agent.group_members (workspace_id, group_id, user_id)
SELECT 'bench', 'g' || (u % 97), 'o' || u FROM generate_series(0, $owners - 1) u
ON CONFLICT DO NOTHING;
SET session_replication_role = DEFAULT;
-- the calls: half on a resource the agent holds, half on any page; modes mixed
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench.calls;
CREATE TABLE bench.calls AS
SELECT n, 9000000000 + 1 + (n * 7907) % $agents AS agent_id,
       CASE WHEN n % 2 = 0
            THEN 'p' || ((((1 + (n * 7907) % $agents) % $owners) * 7919 + (n % $grants_per) * 104729) % $pages)
            ELSE 'p' || ((n * 15485863) % $pages) END AS resource_id,
       CASE WHEN n % 4 = 1 THEN 'edit' ELSE 'read' END AS mode
FROM generate_series(1::bigint, $calls) n;
ANALYZE agent.agents, agent.access, agent.resource_acl, agent.group_members, bench.calls;
SQL

echo "data: $(q -c "SELECT count(*) FROM agent.agents WHERE workspace_id = 'bench'") agents, $(q -c "SELECT count(*) FROM agent.access WHERE workspace_id = 'bench'") grants, $(q -c "SELECT count(*) FROM agent.resource_acl WHERE workspace_id = 'bench'") ACL rows"

# "wall cpu" seconds of one pass over the calls of table $1 with seq <= $2,
# checked by function $3 (the second of two passes; cpu = the backend's own
# user+system time from /proc, i.e. one core, whatever else the machine runs)
measure() {
    q <<SQL | tail -1
SET max_parallel_workers_per_gather = 0;
SET jit = off;
SELECT count(*) FROM $1 WHERE seq <= $2 AND $3(agent_id, 'page', resource_id, mode);
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t, bench.cpu() AS c;
SELECT count(*) FROM $1 WHERE seq <= $2 AND $3(agent_id, 'page', resource_id, mode);
SELECT extract(epoch FROM clock_timestamp() - t) || ' ' || (bench.cpu() - c) FROM t0;
SQL
}
q <<SQL
CREATE OR REPLACE FUNCTION bench.cpu() RETURNS numeric LANGUAGE sql AS
\$\$ SELECT (split_part(s, ' ', 14)::numeric + split_part(s, ' ', 15)::numeric) / 100
     FROM pg_read_file('/proc/self/stat') s \$\$;
SET client_min_messages = warning;
-- two orders of the same calls: grouped by agent (a run, or a WHERE clause,
-- checks many resources for one agent) and shuffled
DROP TABLE IF EXISTS bench.calls_grouped, bench.calls_random;
CREATE TABLE bench.calls_grouped AS
SELECT row_number() OVER (ORDER BY agent_id, n) AS seq, agent_id, resource_id, mode FROM bench.calls;
CREATE TABLE bench.calls_random AS
SELECT n AS seq, agent_id, resource_id, mode FROM bench.calls;
SQL
declare -A wall cpu
for order in grouped random; do
    read -r wall[c_$order] cpu[c_$order] <<<"$(measure bench.calls_$order "$calls" agent.can_access)"
    read -r wall[pl_$order] cpu[pl_$order] <<<"$(measure bench.calls_$order "$pl_calls" bench.can_access_plpgsql)"
done
# the two implementations must agree
diff=$(q -c "SELECT count(*) FROM bench.calls WHERE n <= $pl_calls
             AND agent.can_access(agent_id, 'page', resource_id, mode)
                 IS DISTINCT FROM bench.can_access_plpgsql(agent_id, 'page', resource_id, mode)")
allowed=$(q -c "SELECT round(100.0 * count(*) FILTER (WHERE agent.can_access(agent_id, 'page', resource_id, mode)) / count(*), 1) FROM bench.calls")
python3 - "$calls" "$pl_calls" "$diff" "$allowed" \
    "${wall[c_grouped]}" "${cpu[c_grouped]}" "${wall[pl_grouped]}" "${cpu[pl_grouped]}" \
    "${wall[c_random]}" "${cpu[c_random]}" "${wall[pl_random]}" "${cpu[pl_random]}" <<'PY'
import sys
a = sys.argv[1:]
calls, pl_calls, diff, allowed = int(a[0]), int(a[1]), int(a[2]), a[3]
t = [float(x) for x in a[4:]]
ok = True
for name, (cw, cc, pw, pc) in (("grouped by agent", t[0:4]), ("random order", t[4:8])):
    c_rate, pl_rate = calls / cc, pl_calls / pc
    print(f"{name}:")
    print(f"  C          {calls:>8} calls: {cc:7.2f} s cpu = {c_rate:>9,.0f} checks/s on one core  (wall {cw:.2f} s = {calls / cw:,.0f}/s)")
    print(f"  PL/pgSQL   {pl_calls:>8} calls: {pc:7.2f} s cpu = {pl_rate:>9,.0f} checks/s on one core  (wall {pw:.2f} s = {pl_calls / pw:,.0f}/s)")
    print(f"  ratio C / PL/pgSQL: {c_rate / pl_rate:.1f}x; targets >= 200,000 checks/s: {'met' if c_rate >= 200000 else 'NOT met'}, >= 10x: {'met' if c_rate / pl_rate >= 10 else 'NOT met'}")
print(f"{allowed}% of the calls allowed; C and PL/pgSQL disagree on {diff} of {pl_calls} calls")
if diff != 0:
    sys.exit("C and PL/pgSQL disagree")
PY
