#!/usr/bin/env bash
# Run bookkeeping across sessions: concurrent claimers never claim a run
# twice, with runs of one workspace or of several (fair claiming), and never
# fill a workspace past pg_agents.max_runs_per_workspace together; NOTIFY
# agent_runs reaches listeners at commit; a finished child re-queues its
# waiting parent for another session to claim.
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
. "$(dirname "$0")/../fixtures/tap.sh"
plan 14
check() { is "$2" "$3" "$1"; }  # description, got, want

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

# Several workspaces (fair claiming serves them in turn): a busy one and four
# small ones, 4 concurrent claimers
q >/dev/null <<SQL
UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL WHERE status = 'running';
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap)
SELECT 10 + i, 'ws' || i, 'owner', 'agent ' || i, 100000 FROM generate_series(0, 4) i;
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'ws' || w, 10 + w, 'autonomous', 'api', 'queued', (i % 2)::smallint
  FROM generate_series(0, 4) w, generate_series(1, CASE WHEN w = 0 THEN 1000 ELSE 125 END) i;
TRUNCATE claims;
SQL
for c in 1 2 3 4; do claimer $c & done
wait
check "several workspaces: 4 concurrent claimers claimed every run" \
      "$(q -c "SELECT count(DISTINCT run_id) FROM claims")" "1500"
check "several workspaces: no run was claimed twice" "$(q -c "SELECT count(*) - count(DISTINCT run_id) FROM claims")" "0"
check "several workspaces: each run claimed once (attempts = 1, running)" \
      "$(q -c "SELECT count(*) FROM agent.runs WHERE workspace_id LIKE 'ws_' AND attempts = 1 AND status = 'running'")" "1500"

# With pg_agents.max_runs_per_workspace: claimers at the same time never
# fill the same room twice (claims with the cap on are serialised)
q >/dev/null <<SQL
UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL WHERE status = 'running';
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'ws' || w, 10 + w, 'autonomous', 'api', 'queued', 0
  FROM generate_series(0, 4) w, generate_series(1, 200) i;
TRUNCATE claims;
ALTER DATABASE $db SET pg_agents.max_runs_per_workspace = 13;
SQL
claimer1() {  # claims one run at a time: the most claims racing for the last places
    q -c "DO \$\$
DECLARE k int;
BEGIN
  LOOP
    INSERT INTO claims SELECT $1, c.id, c.priority FROM agent.claim_runs(1) c;
    GET DIAGNOSTICS k = ROW_COUNT;
    COMMIT;
    EXIT WHEN k = 0;
  END LOOP;
END \$\$" >/dev/null
}
for c in 1 2 3 4; do claimer $c & claimer1 $((c + 4)) & done
wait
check "with a cap of 13, 8 concurrent claimers left exactly 13 runs running in each workspace" \
      "$(q -c "SELECT string_agg(workspace_id || ':' || n, ' ' ORDER BY workspace_id) FROM (SELECT workspace_id, count(*) n FROM agent.runs WHERE workspace_id LIKE 'ws_' AND status = 'running' GROUP BY 1) x")" \
      "ws0:13 ws1:13 ws2:13 ws3:13 ws4:13"
check "with the cap: no run was claimed twice" "$(q -c "SELECT count(*) - count(DISTINCT run_id) FROM claims")" "0"
# the places freed by runs that end are filled again, still up to the cap:
# four rounds of claimers racing for a few freed places
running_per_ws() {
    q -c "SELECT string_agg(workspace_id || ':' || n, ' ' ORDER BY workspace_id) FROM (SELECT workspace_id, count(*) n FROM agent.runs WHERE workspace_id LIKE 'ws_' AND status = 'running' GROUP BY 1) x"
}
rounds=""
for r in 1 2 3 4; do
    q -c "UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL
          WHERE id IN (SELECT id FROM agent.runs WHERE workspace_id IN ('ws2', 'ws3') AND status = 'running' LIMIT 5)" >/dev/null
    for c in 1 2 3 4 5 6; do claimer1 $c & done
    claimer $r &
    wait
    rounds="$rounds$(running_per_ws);"
done
check "runs that end free their places: refilled to 13 in each of 4 rounds, never past it" "$rounds" \
      "$(for r in 1 2 3 4; do printf 'ws0:13 ws1:13 ws2:13 ws3:13 ws4:13;'; done)"
# one workspace left with queued runs (claimed in one statement): the same
q -c "UPDATE agent.runs SET status = 'cancelled', finished_at = now() WHERE status = 'queued' AND workspace_id <> 'ws4';
      UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL
       WHERE id IN (SELECT id FROM agent.runs WHERE workspace_id = 'ws4' AND status = 'running' LIMIT 6)" >/dev/null
for c in 1 2 3 4 5 6; do claimer1 $c & done
wait
check "one workspace with queued runs: refilled to 13, not past it" "$(running_per_ws)" "ws0:13 ws1:13 ws2:13 ws3:13 ws4:13"
q -c "ALTER DATABASE $db RESET pg_agents.max_runs_per_workspace" >/dev/null

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
done_testing
