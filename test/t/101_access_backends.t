#!/usr/bin/env bash
# access: the two row sources of the access facts agree (issue 34).  The
# facts read a local table by checked index scan and a table Citus manages
# through SPI (src/access/access_rows.h); the developer setting
# pg_agents.access_backend = spi makes a single node read every table the
# SPI way, and the access and allowlist matrices, run again under it, must
# give the same answers.  The setting is a superuser's, and it does switch
# the source: under spi no index of the access tables is looked at.
. "$PG_AGENTS_ENV"
set -u
export PGOPTIONS='-c client_min_messages=warning'
. "$(dirname "$0")/../fixtures/tap.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
plan 9

is "$(q -c "SELECT context || ' ' || boot_val || ' ' || array_to_string(enumvals, ',') FROM pg_settings WHERE name = 'pg_agents.access_backend'")" \
   "superuser auto auto,spi" "pg_agents.access_backend: superuser only, auto by default, auto or spi"

q <<'SQL'
DROP ROLE IF EXISTS backend_nobody;
CREATE ROLE backend_nobody LOGIN;
DELETE FROM agent.agents WHERE id = 7610001;
DELETE FROM agent.access WHERE agent_id = 7610001;
DELETE FROM agent.resource_acl WHERE workspace_id IN ('ws-backend-a', 'ws-backend-b');
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7610001, 'ws-backend-a', 'bea', 'backends');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7610001, 'page', 'bp1', 'read');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
VALUES ('ws-backend-a', 'page', 'bp1', 'user:bea', 'edit'),
       ('ws-backend-b', 'page', 'bp1', 'user:bob', 'edit');
SQL
out=$(PGOPTIONS='-c client_min_messages=warning' psql -XAtq -U backend_nobody -c "SET pg_agents.access_backend = spi" 2>&1)
like "$out" 'permission denied to set parameter "pg_agents.access_backend"' "a role with no grants may not set it"

# the same check under both, with the agents' index renamed for the transaction:
# the index source refuses an index that is not the one it checked, the SPI
# source reads none
check() {  # backend
    q 2>&1 <<SQL
SET pg_agents.access_backend = $1;
BEGIN;
ALTER INDEX agent.agents_pkey RENAME TO agents_pkey_renamed;
SELECT agent.can_access(7610001, 'page', 'bp1', 'read');
ROLLBACK;
SQL
}
like "$(check auto)" 'agents_pkey' "auto: the index scan looks the checked index up (a renamed one is refused)"
is "$(check spi)" "t" "spi: the same check reads agent.agents through a query, no index looked up"
is "$(q -c "SET pg_agents.access_backend = spi; SELECT agent.can_access(7610001, 'page', 'bp1', 'read'), agent.can_access(7610001, 'page', 'bp2', 'read')")" \
   "t|f" "spi: a granted page is allowed, another refused"

# a parallel worker decides as the leader does, under both sources (on one
# node SPI runs in a worker; only Citus refuses it: docs/scaling.md)
q >/dev/null <<'SQL'
DROP TABLE IF EXISTS public.backend_calls;
CREATE TABLE public.backend_calls AS SELECT i FROM generate_series(1, 30000) i;
ANALYZE public.backend_calls;
SQL
par() {  # backend, EXPLAIN or nothing
    q 2>&1 <<SQL
SET pg_agents.access_backend = $1;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
${2:-} SELECT count(*) FILTER (WHERE agent.can_access(7610001, 'page', 'bp' || (i % 3), 'read')) FROM public.backend_calls;
SQL
}
like "$(par auto 'EXPLAIN (COSTS OFF)')" 'Gather' "the check of 30000 rows is planned in parallel workers"
is "$(par auto)" "10000" "auto: in parallel workers, the one granted page of three is allowed"
is "$(par spi)" "10000" "spi: the same in parallel workers"

# the access and allowlist matrices again, every table read through SPI
files=$(ls "$root"/test/pgtap/access_*.sql "$root"/test/pgtap/rls_*.sql)
out=$(PGOPTIONS='-c client_min_messages=warning -c pg_agents.access_backend=spi' \
      pg_prove --host "$PGHOST" --port "$PGPORT" --username postgres --dbname "${PG_AGENTS_REGRESS_DB:-pg_agents_regress}" $files 2>&1)
rc=$?
[ $rc -eq 0 ] || diag "$out"
is "$rc $(echo "$out" | grep -c '^Result: PASS')" "0 1" "the access and allowlist pgTAP matrices pass with pg_agents.access_backend = spi ($(echo $files | wc -w) files)"

q -c "DELETE FROM agent.access WHERE agent_id = 7610001; DELETE FROM agent.agents WHERE id = 7610001;
      DELETE FROM agent.resource_acl WHERE workspace_id IN ('ws-backend-a', 'ws-backend-b'); DROP ROLE backend_nobody; DROP TABLE public.backend_calls;" >/dev/null
done_testing
