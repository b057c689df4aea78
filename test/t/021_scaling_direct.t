#!/usr/bin/env bash
# Issue 24: what the C code decides from tables Citus manages is never kept
# across statements.  With Citus the row triggers that announce a change of
# access data (agent._access_changed) fire on the node holding the shard, so
# the access generation of the coordinator never hears of a revoke there: a
# readable set kept by the coordinator's backend would stay stale.  Citus is
# simulated (it cannot run in CI): a database of its own gets a
# pg_catalog.pg_dist_partition naming the access tables, as Citus's has.
# One agent session stays open (ONE backend); other sessions grant and
# revoke between its statements.  Without the catalog the set is kept (the
# counter of reused sets moves); with it the set is computed at every
# statement, reads through SPI, and a revoke shows at once.  Two
# workspaces; the application role, a role with no grants, the agent role.
. "$PG_AGENTS_ENV"
set -u
DB=scaling_direct_$$
work=$(mktemp -d)
trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1; psql -XAtq -d postgres -c "DROP ROLE IF EXISTS sd_app_$$, sd_nobody_$$" >/dev/null 2>&1; rm -rf "$work"' EXIT
. "$(dirname "$0")/../fixtures/tap.sh"

psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null || { echo "Bail out! cannot create database"; exit 1; }
psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<SQL || { echo "Bail out! setup failed"; exit 1; }
CREATE EXTENSION pg_agents;
CREATE ROLE sd_app_$$ NOLOGIN IN ROLE agents_app;
CREATE ROLE sd_nobody_$$ NOLOGIN;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7, 'ws1', 'u1', 'a'), (8, 'ws2', 'u2', 'b');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  SELECT NULL, 'page', g::text, 'user:u1', 'read' FROM generate_series(1, 5) g;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  VALUES (NULL, 'page', '1', 'user:u2', 'read');
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
  SELECT 'ws1', 7, 'page', g::text, 'read' FROM generate_series(1, 5) g;
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access) VALUES ('ws2', 8, 'page', '1', 'read');
SQL

other="psql -XAtq -d $DB -v ON_ERROR_STOP=1 -c"
# the application's session (one backend): the readable set of agent 7
# twice, a revoke elsewhere, again; the counters of computed and reused sets
session() {
    local revoke=$1 restore=$2
    cat > "$work/s.sql" <<SQL
SET ROLE sd_app_$$;
SET pg_agents.workspace = 'ws1';
SELECT computed AS c0, reused AS r0 FROM agent.readable_set_stats() \gset
SELECT array_to_string(array_agg(r ORDER BY r), ',') FROM agent.readable_resources(7, 'page') r;
SELECT array_to_string(array_agg(r ORDER BY r), ',') FROM agent.readable_resources(7, 'page') r;
\! $other "$revoke"
SELECT array_to_string(array_agg(r ORDER BY r), ',') FROM agent.readable_resources(7, 'page') r;
SELECT agent.can_access(7, 'page', '3');
SELECT (computed - :c0) || ' computed, ' || (reused - :r0) || ' reused' FROM agent.readable_set_stats();
SET pg_agents.workspace = 'ws2';
SELECT array_to_string(array_agg(r ORDER BY r), ',') FROM agent.readable_resources(8, 'page') r;
SELECT array_to_string(array_agg(r ORDER BY r), ',') FROM agent.readable_resources(7, 'page') r;
\! $other "$restore"
SQL
    psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 -f "$work/s.sql" 2>&1
}

plan 16

# ------------------------------------------------------------- single node
mapfile -t out < <(session "DELETE FROM agent.access WHERE agent_id = 7 AND resource_id = '3'" \
                           "INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id) VALUES ('ws1', 7, 'page', '3')")
is "${out[0]}" "1,2,3,4,5" "single node: the readable set"
is "${out[1]}" "1,2,3,4,5" "the same at the next statement"
is "${out[2]}" "1,2,4,5" "a revoke committed elsewhere shows at the next statement"
is "${out[3]}" "f" "and can_access says no"
like "${out[4]}" "^[12] computed, [0-9]+ reused$" "fewer sets computed than statements: the set was kept between statements (the access generation is trusted)"
is "${out[5]}" "1" "the other workspace's agent"
is "${out[6]}" "" "an agent of another workspace than the session's has no readable resources"

# --------------------------------------------- Citus manages the access tables
psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || { echo "Bail out! simulated catalog failed"; exit 1; }
SET allow_system_table_mods = on;
CREATE TABLE pg_catalog.pg_dist_partition (logicalrelid regclass NOT NULL, partmethod "char");
INSERT INTO pg_catalog.pg_dist_partition VALUES
  ('agent.agents', 'h'), ('agent.access', 'h'), ('agent.resource_acl', 'n'), ('agent.group_members', 'n'),
  ('agent.access_config', 'n');
SQL
mapfile -t out < <(session "DELETE FROM agent.access WHERE agent_id = 7 AND resource_id = '3'" \
                           "INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id) VALUES ('ws1', 7, 'page', '3')")
is "${out[0]}" "1,2,3,4,5" "managed by Citus: the readable set, read through SPI"
is "${out[1]}" "1,2,3,4,5" "the same at the next statement"
is "${out[2]}" "1,2,4,5" "the revoke elsewhere shows at the next statement"
is "${out[3]}" "f" "and can_access says no"
like "${out[4]}" "^3 computed, [0-9]+ reused$" "each of the three statements computed its set: none was kept across statements (a shard's trigger would not have told this node)"
is "${out[5]}" "1" "the other workspace's agent, through SPI"
is "${out[6]}" "" "an agent of another workspace than the session's still has none"

# the role with no grants and the agent role
out=$(psql -XAtq -d "$DB" -c "SET ROLE sd_nobody_$$; SELECT agent.readable_resources(7, 'page')" 2>&1)
like "$out" "permission denied" "a role with no grants may not list a readable set"
out=$(psql -XAtq -d "$DB" -c "SET ROLE agents_tool; SET pg_agents.actor = 'agent:7'; SET pg_agents.workspace = 'ws1'; SELECT agent.can_access(7, 'page', '2'), agent.can_access(8, 'page', '1')" 2>&1)
is "$out" "t|f" "an agent session's decisions, through SPI (the other workspace's agent is not found, as a missing id)"

psql -XAtq -d "$DB" -c "SET allow_system_table_mods = on; DROP TABLE pg_catalog.pg_dist_partition" >/dev/null
done_testing
