#!/usr/bin/env bash
# agent.can_access (C, index scans) against the same rules in PL/pgSQL
# (bench/access_plpgsql.sql), on one core (no parallel workers).
#
# Full scale: 10k agents, 1M grants, 100k ACL rows, 1M calls (C) and 200k
# calls (PL/pgSQL).  BENCH_SCALE=small: 1k agents, 100k grants, 10k ACL rows,
# 100k / 20k calls.
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")" && pwd)
if [ "${BENCH_SCALE:-}" = small ]; then
    agents=1000; grants_per=100; acl=10000; calls=100000; pl_calls=20000
else
    agents=10000; grants_per=100; acl=100000; calls=1000000; pl_calls=200000
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

# seconds for one pass over the first $1 calls with function $2
measure() {
    q <<SQL | tail -1
SET max_parallel_workers_per_gather = 0;
SET jit = off;
SELECT count(*) FROM bench.calls WHERE n <= $1 AND $2(agent_id, 'page', resource_id, mode);
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
SELECT count(*) FROM bench.calls WHERE n <= $1 AND $2(agent_id, 'page', resource_id, mode);
SELECT extract(epoch FROM clock_timestamp() - t) FROM t0;
SQL
}
base=$(q <<SQL | tail -1
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
SELECT count(*) FROM bench.calls WHERE n <= $calls AND length(resource_id) > 0;
SELECT extract(epoch FROM clock_timestamp() - t) FROM t0;
SQL
)
c_s=$(measure "$calls" agent.can_access)
pl_s=$(measure "$pl_calls" bench.can_access_plpgsql)
# the two implementations must agree
diff=$(q -c "SELECT count(*) FROM bench.calls WHERE n <= $pl_calls
             AND agent.can_access(agent_id, 'page', resource_id, mode)
                 IS DISTINCT FROM bench.can_access_plpgsql(agent_id, 'page', resource_id, mode)")
allowed=$(q -c "SELECT round(100.0 * count(*) FILTER (WHERE agent.can_access(agent_id, 'page', resource_id, mode)) / count(*), 1) FROM bench.calls")
python3 - "$calls" "$c_s" "$pl_calls" "$pl_s" "$base" "$diff" "$allowed" <<'PY'
import sys
calls, c_s, pl_calls, pl_s, base, diff, allowed = sys.argv[1:]
c_rate = int(calls) / float(c_s)
pl_rate = int(pl_calls) / float(pl_s)
print(f"can_access C        : {int(calls):>8} calls in {float(c_s):7.3f} s = {c_rate:>10,.0f} checks/s (one core; scan alone {float(base):.3f} s)")
print(f"can_access PL/pgSQL : {int(pl_calls):>8} calls in {float(pl_s):7.3f} s = {pl_rate:>10,.0f} checks/s")
print(f"ratio C / PL/pgSQL  : {c_rate / pl_rate:.1f}x   ({allowed}% allowed; disagreements: {diff})")
print(f"targets: >= 200,000 checks/s {'met' if c_rate >= 200000 else 'NOT met'}; >= 10x {'met' if c_rate / pl_rate >= 10 else 'NOT met'}")
if int(diff) != 0:
    sys.exit("C and PL/pgSQL disagree")
PY
