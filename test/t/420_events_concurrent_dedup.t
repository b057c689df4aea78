#!/usr/bin/env bash
# events: dedup under concurrent sessions (pgbench, several clients firing the
# same event at once -> exactly one run; distinct ids -> one run each), and the
# hourly cap under concurrency (never more queued runs than the cap).
. "$PG_AGENTS_ENV"
# every event belongs to a workspace: the session's
export PGOPTIONS='-c client_min_messages=warning -c pg_agents.workspace=w-events-it'
. "$(dirname "$0")/../fixtures/tap.sh"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
pgb=$(command -v pgbench || echo "$PG_AGENTS_BINDIR/pgbench")
plan 6

q <<'SQL'
DELETE FROM agent.agents WHERE id IN (4400, 4401);
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (4400, 'w-events-it', 'u1', 'burst', 100000), (4401, 'w-events-it', 'u1', 'capped', 5);
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type) VALUES
  (4400, 'event', 'events.it.burst', 'collection'), (4401, 'event', 'events.it.capburst', 'collection');
DROP SEQUENCE IF EXISTS events_it_seq;
CREATE SEQUENCE events_it_seq;
SQL

dir=$(mktemp -d)
# each transaction holds its fingerprint a little, so that the clients really
# collide on the same key while the first one is still uncommitted
cat >"$dir/same.sql" <<'SQL'
BEGIN;
SELECT count(*) FROM agent.fire_event('events.it.burst', 'collection', 'public.t', '{"row": {"id": 1}}', 'user:it', 'burst-same');
SELECT pg_sleep(0.01);
COMMIT;
SQL
cat >"$dir/nokey.sql" <<'SQL'
BEGIN;
SELECT count(*) FROM agent.fire_event('events.it.burst', 'collection', 'public.t', '{"row": {"id": 2, "v": "no id"}}', 'user:it');
SELECT pg_sleep(0.01);
COMMIT;
SQL
cat >"$dir/distinct.sql" <<'SQL'
SELECT count(*) FROM agent.fire_event('events.it.burst', 'collection', 'public.t', '{}', 'user:it', 'burst-' || nextval('events_it_seq'));
SQL
cat >"$dir/cap.sql" <<'SQL'
SELECT count(*) FROM agent.fire_event('events.it.capburst', 'collection', 'public.t', '{}', 'user:it', 'cap-' || nextval('events_it_seq'));
SQL

run() { "$pgb" -n -c 10 -j 2 -t 5 -f "$1" >"$dir/out" 2>&1; }
run "$dir/same.sql"; rc=$?
ok $rc "pgbench: 10 clients x 5 identical events ran"
got=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 4400 AND input->>'event_id' = 'burst-same'")
ok $([ "$got" = 1 ] && echo 0 || echo 1) "50 identical concurrent events make exactly 1 run (got $got)"
run "$dir/nokey.sql"
got=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 4400 AND input->'payload'->'row'->>'v' = 'no id'")
ok $([ "$got" = 1 ] && echo 0 || echo 1) "50 identical concurrent events without an id make exactly 1 run (got $got)"
run "$dir/distinct.sql"
got=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 4400 AND input->>'event_id' LIKE 'burst-%' AND input->>'event_id' <> 'burst-same'")
ok $([ "$got" = 50 ] && echo 0 || echo 1) "50 concurrent events with distinct ids make 50 runs (got $got)"
run "$dir/cap.sql"
# (a running worker may already have claimed the queued ones)
got=$(q -c "SELECT count(*) FILTER (WHERE status <> 'budget_exceeded') || '/' || count(*) FILTER (WHERE status = 'budget_exceeded') FROM agent.runs WHERE agent_id = 4401")
ok $([ "$got" = "5/45" ] && echo 0 || echo 1) "hourly cap 5 under 10 concurrent clients: 5 runs, 45 budget_exceeded (got $got)"
got=$(q -c "SELECT count(*) FROM agent.event_dedup WHERE trigger_id IN (SELECT id FROM agent.triggers WHERE agent_id = 4400)")
ok $([ "$got" = 52 ] && echo 0 || echo 1) "one fingerprint per distinct event (got $got)"

[ "$rc" = 0 ] || sed 's/^/# /' "$dir/out"
rm -rf "$dir"
q -c "DELETE FROM agent.agents WHERE id IN (4400, 4401); DROP SEQUENCE events_it_seq" >/dev/null
done_testing
