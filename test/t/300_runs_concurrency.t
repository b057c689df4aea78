#!/usr/bin/env bash
# Run bookkeeping across sessions: concurrent claimers never claim a run
# twice; NOTIFY agent_runs reaches listeners at commit; a finished child
# re-queues its waiting parent for another session to claim.
# Works in its own database so that the worker (pg_agents.database) never
# competes for these runs.
. "$PG_AGENTS_ENV"
set -u
db=pg_agents_runs_it
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1' EXIT
q() { psql -XAtq -d "$db" -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE EXTENSION pg_agents" >/dev/null
echo "1..7"
n=0
check() {  # description, got, want
    n=$((n+1))
    if [ "$2" = "$3" ]; then echo "ok $n - $1"; else echo "not ok $n - $1 (got '$2', want '$3')"; fi
}

N=2000
q >/dev/null <<SQL
INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, hourly_run_cap)
VALUES (1, 'ws', 'owner', 'lead', '[2]', 100000), (2, 'ws', 'owner', 'helper', '[]', 100000);
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'ws', 1, 'autonomous', 'api', 'queued', (i % 3)::smallint FROM generate_series(1, $N) i;
CREATE TABLE claims (claimer int, run_id bigint, priority int);
SQL

claimer() {
    q -c "DO \$\$
DECLARE k int;
BEGIN
  LOOP
    INSERT INTO claims SELECT $1, c.id, c.priority FROM agent.claim_runs(7) c;
    GET DIAGNOSTICS k = ROW_COUNT;
    COMMIT;
    EXIT WHEN k = 0;
  END LOOP;
END \$\$" >/dev/null
}
for c in 1 2 3 4; do claimer $c & done
wait
check "4 concurrent claimers claimed every run" "$(q -c "SELECT count(DISTINCT run_id) FROM claims")" "$N"
check "no run was claimed twice" "$(q -c "SELECT count(*) - count(DISTINCT run_id) FROM claims")" "0"
check "each run was claimed once (attempts = 1, running)" \
      "$(q -c "SELECT count(*) FROM agent.runs WHERE attempts = 1 AND status = 'running'")" "$N"
check "every claimer got work" "$(q -c "SELECT count(DISTINCT claimer) FROM claims")" "4"

# NOTIFY at commit: the listener is told about a queued run, with its payload
out=$(q -c "LISTEN agent_runs" -c "SELECT agent.start_run(1, 'owner')" -c "SELECT 1" 2>&1)
rid=$(q -c "SELECT max(id) FROM agent.runs WHERE origin = 'chat'")
case "$out" in
  *"\"run_id\" : $rid, \"agent_id\" : 1, \"status\" : \"queued\""*) check "NOTIFY agent_runs carries run_id, agent_id and status" ok ok ;;
  *) check "NOTIFY agent_runs carries run_id, agent_id and status" "$out" "a notification for run $rid" ;;
esac

# a parent waits for its child in one session; the child finishes in another
parent=$(q -c "UPDATE agent.runs SET status = 'running' WHERE id = $rid RETURNING id" | head -1)
child=$(q -c "SELECT agent.try_delegate($parent, 2, 'look it up', '[]', 100) ->> 'child_run_id'" | head -1)
q -c "SELECT agent.wait_for_children($parent)" >/dev/null
q -c "UPDATE agent.runs SET status = 'running' WHERE id = $child" >/dev/null
q -c "SELECT agent.add_usage($child, 30, 12)" >/dev/null
q -c "SELECT agent.finish_run($child, 'succeeded', '{\"answer\": 42}')" >/dev/null
check "the waiting parent is re-queued with the child's result" \
      "$(q -c "SELECT r.status || ' ' || r.tokens_total || ' ' || (s.output -> 'output' ->> 'answer') FROM agent.runs r JOIN agent.run_steps s ON s.run_id = r.id AND s.kind = 'delegate' WHERE r.id = $parent")" \
      "queued 42 42"
check "the re-queued parent is claimable" "$(q -c "SELECT id FROM agent.claim_runs(1)")" "$parent"
