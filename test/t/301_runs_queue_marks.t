#!/usr/bin/env bash
# Queue marks (docs/runs.md, "The queue and long transactions"): a claim
# scans each queue from its mark, and no run is ever left below one.  Claims
# in their own transactions raise the marks; then every way a run can come
# back below a mark is tried: a lease that expired (agent._tick_runs), an
# UPDATE by hand, a run id taken by a transaction still open while the
# marks move on (by INSERT, and by nextval first as agent._enqueue_run
# does), a claim rolled back after others moved the marks; a claimer
# holding the marks makes no one wait; interactive runs still first,
# another workspace untouched, a deleted agent's run never claimed; and
# the marks are no one's but the claim's: a role with no grants, the
# application and an agent session can neither read nor move them.  Its
# own database, so that the worker never competes.
. "$PG_AGENTS_ENV"
set -u
db=pg_agents_queue_marks_it
app=pg_agents_queue_marks_open
tmp=$(mktemp -d)
pids=()
cleanup() {
    psql -XAtq -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE '$app%'" >/dev/null 2>&1
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
    psql -XAtq -d postgres -c "DROP ROLE IF EXISTS qm_nobody; DROP ROLE IF EXISTS qm_app" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
q() { psql -XAtq -d "$db" -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE EXTENSION pg_agents" >/dev/null
echo "1..28"
n=0
check() {  # description, got, want
    n=$((n+1))
    if [ "$2" = "$3" ]; then echo "ok $n - $1"; else echo "not ok $n - $1 (got '$2', want '$3')"; fi
}

q >/dev/null <<'SQL'
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (1, 'qa', 'owner', 'a', 100000000), (2, 'qa', 'owner', 'a2', 100000000), (3, 'qb', 'owner', 'b', 100000000);
CREATE TABLE claims (k serial, run_id bigint, priority int);
SQL
enqueue() {  # agent, count, priority
    q -c "INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
          SELECT a.workspace_id, a.id, 'autonomous', 'api', 'queued', $3 FROM agent.agents a, generate_series(1, $2) WHERE a.id = $1" >/dev/null
}
claims() {  # workspace, claims of batch, batch: each claim its own transaction
    q -c "SET pg_agents.workspace = '$1'" -c "DO \$\$
BEGIN
  FOR i IN 1 .. $2 LOOP
    INSERT INTO claims (run_id, priority) SELECT c.id, c.priority FROM agent.claim_runs($3) c;
    COMMIT;
  END LOOP;
END \$\$" >/dev/null
}
claim() {  # workspace, n: the ids claimed, in claim order
    q -c "SET pg_agents.workspace = '$1'" -c "SELECT coalesce(string_agg(id::text, ' ' ORDER BY o), '') FROM agent.claim_runs($2) WITH ORDINALITY c(id, o)" |
        tail -1
}
mark() { q -c "SELECT low_id FROM agent.run_queue_marks WHERE workspace_id = '$1' AND priority = $2"; }
opened() {  # name, SQL: a session left open in a transaction after running it
    mkfifo "$tmp/$1"
    PGAPPNAME="$app$1" psql -XAtq -d "$db" -v ON_ERROR_STOP=1 < "$tmp/$1" > "$tmp/$1.out" 2>&1 &
    pids+=($!)
    eval "pid_$1=$!"
    eval "exec {fd_$1}> \"$tmp/$1\""
    local fd; eval "fd=\$fd_$1"
    printf '%s\n' "BEGIN;" "$2" "SELECT 'done';" >&"$fd"
    for _ in $(seq 1 100); do grep -q '^done$' "$tmp/$1.out" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
closed() {  # name, COMMIT or ROLLBACK
    local fd; eval "fd=\$fd_$1"
    printf '%s\n' "$2;" '\q' >&"$fd"   # \q: other sessions may hold this pipe open too
    eval "exec $fd>&-"
    local pid; eval "pid=\$pid_$1"
    wait "$pid" 2>/dev/null
}

# 1. claims raise the mark: 1000 runs, 60 claims of 10, each committed
enqueue 1 1000 0
first=$(q -c "SELECT min(id) FROM agent.runs")
claims qa 60 10
check "600 runs claimed, the oldest" "$(q -c "SELECT count(*), max(run_id) - $first FROM claims")" "600|599"
low=$(mark qa 0)
check "the mark went past the claimed runs (more than 256 ids, never past a queued one)" \
      "$(q -c "SELECT $low - $first > 256 AND $low <= (SELECT min(id) FROM agent.runs WHERE status = 'queued')")" "t"

# 2. a lease that expired: the run goes back to the queue below the mark,
#    and the next claim takes it first (oldest)
old1=$first
q -c "UPDATE agent.runs SET lease_until = now() - interval '1 minute' WHERE id = $old1" -c "SELECT agent._tick_runs()" >/dev/null
check "the expired run is queued again" "$(q -c "SELECT status FROM agent.runs WHERE id = $old1")" "queued"
check "it is noted below its mark, for the claims" \
      "$(q -c "SELECT low_id > $old1, (SELECT array_agg(run_id) FROM agent.run_queue_returns WHERE workspace_id = 'qa' AND priority = 0) FROM agent.run_queue_marks WHERE workspace_id = 'qa' AND priority = 0")" "t|{$old1}"
check "the next claim takes it" "$(claim qa 1)" "$old1"

# 3. an UPDATE by hand
old2=$((first + 5))
q -c "UPDATE agent.runs SET status = 'queued', lease_until = NULL WHERE id = $old2" >/dev/null
check "a run put back by hand is claimed next" "$(claim qa 1)" "$old2"

# 4. interactive first: a priority-10 queue with its own mark, then a run
#    put back below both marks
enqueue 1 400 10
claims qa 35 10
check "the interactive runs went first" "$(q -c "SELECT count(*) FROM claims WHERE priority = 10")" "350"
check "the interactive queue has its own mark" "$(q -c "SELECT count(*) FROM agent.run_queue_marks WHERE workspace_id = 'qa' AND priority = 10 AND low_id > $first + 1000")" "1"
old3=$((first + 7))
q -c "UPDATE agent.runs SET status = 'queued', lease_until = NULL WHERE id = $old3" >/dev/null
got=$(claim qa 51)
check "a claim takes the 50 interactive runs left, then the old autonomous one" \
      "$(q -c "SELECT count(*) FILTER (WHERE priority = 10), (array_agg(id ORDER BY o))[51] FROM unnest('{${got// /,}}'::bigint[]) WITH ORDINALITY u(id, o) JOIN agent.runs r USING (id)")" \
      "50|$old3"

# 5. a transaction that took a run id stays open while 60 claims move the
#    marks on: its run is claimed once it commits (oldest first)
opened ins "INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status) VALUES ('qa', 1, 'autonomous', 'api', 'queued') RETURNING id;" ||
    echo "# the open insert did not start"
held_ins=$(head -1 "$tmp/ins.out")
opened seq "SELECT nextval(pg_get_serial_sequence('agent.runs', 'id'));" || echo "# the open nextval did not start"
held_seq=$(head -1 "$tmp/seq.out")
enqueue 1 700 0
claims qa 60 10
check "while they are open, neither run is below the mark" \
      "$(q -c "SELECT low_id <= least($held_ins, $held_seq) FROM agent.run_queue_marks WHERE workspace_id = 'qa' AND priority = 0")" "t"
closed ins COMMIT
printf '%s\n' "INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status) VALUES ($held_seq, 'qa', 1, 'autonomous', 'api', 'queued');" >&"$fd_seq"
closed seq COMMIT
claims qa 60 10   # more claims: the marks take their steps
check "the run inserted by the open transaction is claimed" "$(q -c "SELECT count(*) FROM claims WHERE run_id = $held_ins")" "1"
check "the run whose id was taken first (as agent._enqueue_run does) is claimed" "$(q -c "SELECT count(*) FROM claims WHERE run_id = $held_seq")" "1"
check "once they ended, the mark moves past them" "$(q -c "SELECT low_id > $held_seq FROM agent.run_queue_marks WHERE workspace_id = 'qa' AND priority = 0")" "t"

# 6. a claim rolled back after other claims moved the marks on
enqueue 1 600 0
opened clm "SET pg_agents.workspace = 'qa'; SELECT string_agg(id::text, ',') FROM agent.claim_runs(10);" || echo "# the open claim did not start"
rolled=$(head -1 "$tmp/clm.out")
claims qa 40 10
closed clm ROLLBACK
check "the runs of the rolled-back claim are queued" "$(q -c "SELECT count(*) FROM agent.runs WHERE id IN ($rolled) AND status = 'queued'")" "10"
check "the next claim takes them" "$(claim qa 10 | tr ' ' ',')" "$rolled"

# 6b. a claimer that holds the marks (a step, not committed) makes no one
#     wait: a run put back by hand goes through at once (lock_timeout 1 ms:
#     a wait would fail it), and another session's claim takes it
opened stp "SELECT agent._queue_advance('qa', '{0}');" || echo "# the open step did not start"
old4=$((first + 9))
check "a run is put back below the mark while a claimer holds the marks, without waiting" \
      "$(q -c "SET lock_timeout = '1ms'" -c "UPDATE agent.runs SET status = 'queued', lease_until = NULL WHERE id = $old4 RETURNING status" 2>&1)" "queued"
check "and claimed next by another session" "$(claim qa 1)" "$old4"
closed stp COMMIT

# 7. another workspace: its runs are claimed from its own queue
enqueue 3 300 0
oldest_b=$(q -c "SELECT string_agg(id::text, ' ' ORDER BY id) FROM (SELECT id FROM agent.runs WHERE workspace_id = 'qb' ORDER BY id LIMIT 3) s")
check "a claim of workspace qb gets qb's oldest runs" "$(claim qb 3)" "$oldest_b"

# 8. a deleted agent's runs are never claimed
enqueue 2 5 0
q -c "UPDATE agent.agents SET deleted_at = now() WHERE id = 2" >/dev/null
claims qa 200 10
check "every queued run of qa was claimed, each once" \
      "$(q -c "SELECT count(*) FROM agent.runs WHERE workspace_id = 'qa' AND agent_id = 1 AND status = 'queued'")|$(q -c "SELECT count(*) - count(DISTINCT run_id) FROM claims")" "0|0"
check "the deleted agent's runs stayed queued" "$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 2 AND status = 'queued'")" "5"

# 9. the claim of several workspaces (a session bound to none, as the
# worker's) walks the queue from the marks of all workspaces (workspace ''),
# with runs of two workspaces queued in turn
q >/dev/null <<'SQL'
UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL WHERE status IN ('queued', 'running');
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (4, 'qc', 'owner', 'c', 100000000), (5, 'qd', 'owner', 'd', 100000000);
TRUNCATE claims;
SQL
q -c "INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
      SELECT CASE WHEN i % 2 = 0 THEN 'qc' ELSE 'qd' END, 4 + i % 2, 'autonomous', 'api', 'queued', 0
        FROM generate_series(0, 799) i ORDER BY i" >/dev/null
first_all=$(q -c "SELECT min(id) FROM agent.runs WHERE status = 'queued'")
q -c "DO \$\$
BEGIN
  FOR i IN 1 .. 600 LOOP
    WITH c AS (SELECT c.id, c.priority FROM agent.claim_runs(1) c)
    INSERT INTO claims (run_id, priority) SELECT c.id, c.priority FROM c;
    UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL WHERE status = 'running';
    COMMIT;
  END LOOP;
END \$\$" >/dev/null
check "600 runs claimed by the claim of several workspaces, the oldest first (nothing running)" \
      "$(q -c "SELECT count(*), max(run_id) < (SELECT min(id) FROM agent.runs WHERE status = 'queued'), count(*) FILTER (WHERE r.workspace_id = 'qc') FROM claims c JOIN agent.runs r ON r.id = c.run_id")" "600|t|300"
check "the mark of all workspaces went past the claimed runs, never past a queued one" \
      "$(q -c "SELECT low_id > $first_all + 256, low_id <= (SELECT min(id) FROM agent.runs WHERE status = 'queued') FROM agent.run_queue_marks WHERE workspace_id = '' AND priority = 0")" "t|t"
old5=$(q -c "SELECT min(run_id) FROM claims c JOIN agent.runs r ON r.id = c.run_id WHERE r.workspace_id = 'qd'")
q -c "UPDATE agent.runs SET status = 'queued', finished_at = NULL WHERE id = $old5" >/dev/null
check "a run of qd put back by hand is noted below it" \
      "$(q -c "SELECT count(*) FROM agent.run_queue_returns WHERE workspace_id = 'qd' AND run_id = $old5")" "1"
check "the next claim of several workspaces takes it" "$(q -c "SELECT string_agg(id::text, ' ') FROM agent.claim_runs(1)")" "$old5"

# 10. the marks are the claim's own
q >/dev/null <<'SQL'
CREATE ROLE qm_nobody NOLOGIN;
CREATE ROLE qm_app NOLOGIN IN ROLE agents_app;
SQL
as() {  # role, SQL: the SQLSTATE, or ok
    q -c "SET ROLE $1" -c "SET pg_agents.workspace = 'qa'" -c "DO \$\$ BEGIN $2; RAISE EXCEPTION 'ok' USING ERRCODE = 'P0001'; EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', CASE WHEN SQLSTATE = 'P0001' THEN 'ok' ELSE SQLSTATE END; END \$\$" 2>&1 |
        sed -n 's/.*NOTICE:  //p'
}
check "a role with no grants cannot read the marks" "$(as qm_nobody "PERFORM * FROM agent.run_queue_marks")" "42501"
check "the application cannot lower a mark" "$(as qm_app "UPDATE agent.run_queue_marks SET low_id = 0")" "42501"
check "nor move the marks on" "$(as qm_app "PERFORM agent._queue_advance('qa', '{0}')")" "42501"
check "an agent session cannot either" \
      "$(q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" -c "SET pg_agents.workspace = 'qa'" -c "DO \$\$ BEGIN PERFORM agent._queue_advance('qa', '{0}'); EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', SQLSTATE; END \$\$" 2>&1 | sed -n 's/.*NOTICE:  //p')" "42501"
