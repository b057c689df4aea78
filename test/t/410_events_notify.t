#!/usr/bin/env bash
# events: NOTIFY agent_runs delivery to a listening session, one worker
# wake-up per committing transaction, nothing for a rolled-back one.
. "$PG_AGENTS_ENV"
# every event belongs to a workspace: the session's
export PGOPTIONS='-c client_min_messages=warning -c pg_agents.workspace=w-events-it'
. "$(dirname "$0")/../fixtures/tap.sh"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
plan 9

q <<'SQL'
DELETE FROM agent.agents WHERE id = 4300;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES (4300, 'w-events-it', 'u1', 'notified', 1000);
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type) VALUES (4300, 'event', 'events.it.notify', 'collection');
SQL

out=$(mktemp)
# the listener: LISTEN, then stay busy long enough for the writer to commit;
# psql prints notifications received during and after each command
psql -XAtq -c "LISTEN agent_runs" -c "SELECT pg_sleep(4)" -c "SELECT 'listener done'" >"$out" 2>&1 &
lpid=$!
for _ in $(seq 1 50); do
  c=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(4)' AND state = 'active'")
  [ "$c" = 1 ] && break
  sleep 0.1
done
ok $([ "$c" = 1 ] && echo 0 || echo 1) "a session listens on agent_runs"

w0=$(q -c "SELECT agent._wake_count()")
ids=$(q <<'SQL'
BEGIN;
SELECT agent.fire_event('events.it.notify', 'collection', 'x', '{}', 'user:it', 'n-' || i) FROM generate_series(1, 3) i;
COMMIT;
SQL
)
w1=$(q -c "SELECT agent._wake_count()")
q >/dev/null <<'SQL'
BEGIN;
SELECT agent.fire_event('events.it.notify', 'collection', 'x', '{}', 'user:it', 'n-rolled-back');
ROLLBACK;
SQL
w2=$(q -c "SELECT agent._wake_count()")
wait $lpid

ok $([ "$(echo "$ids" | grep -c .)" = 3 ] && echo 0 || echo 1) "a committed transaction queues 3 runs"
# (a running worker may add notifications of its own as it claims the runs)
got=$(grep 'Asynchronous notification "agent_runs"' "$out" | grep -c '"agent_id" : 4300, "status" : "queued"')
ok $([ "$got" = 3 ] && echo 0 || echo 1) "the listener received exactly 3 queued notifications for the agent (got $got)"
missing=0
for id in $ids; do
  grep -q "payload \"{\"run_id\" : $id, \"agent_id\" : 4300, \"status\" : \"queued\"}\"" "$out" || missing=1
done
ok $missing "each notification carries {run_id, agent_id, status} of a queued run"
ok $([ "$(q -c "SELECT count(*) FROM agent.runs WHERE input->>'event_id' = 'n-rolled-back'")" = 0 ] && echo 0 || echo 1) \
   "a rolled-back fire_event leaves no run"
ok $(grep -q "listener done" "$out" && echo 0 || echo 1) "the listener finished normally"
if [ -z "$w0" ]; then
  ok 1 "pg_agents is preloaded: _wake_count is not NULL"
else
  ok 0 "pg_agents is preloaded: _wake_count is not NULL"
fi
ok $([ -n "$w0" ] && [ "$((w1 - w0))" = 1 ] && echo 0 || echo 1) "the worker is woken once for a transaction that queued 3 runs ($w0 -> $w1)"
ok $([ -n "$w1" ] && [ "$((w2 - w1))" = 0 ] && echo 0 || echo 1) "a rolled-back transaction wakes nobody ($w1 -> $w2)"

[ "$_tap_fail" = 0 ] || { echo "# listener output:"; sed 's/^/# /' "$out"; }
rm -f "$out"
q -c "DELETE FROM agent.agents WHERE id = 4300" >/dev/null
done_testing
