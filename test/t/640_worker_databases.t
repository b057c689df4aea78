#!/usr/bin/env bash
# Launcher (issue 32): every database that has the extension is served, in a
# cluster of its own with pg_agents.database = '' (the shared test cluster
# restricts the worker to one database).  Two databases run their queued
# runs; a third without the extension gets no worker until CREATE EXTENSION,
# then is served without a restart; DROP DATABASE while its worker holds a
# run succeeds and the launcher starts no worker for it again; DROP
# EXTENSION stops its database's worker; a pg_dump of a served database
# restored into a new one is served and runs its agent end to end.
. "$(dirname "$0")/../fixtures/worker_lib.sh"

own=$(mktemp -d /tmp/pg_agents_640.XXXXXX)
PG_AGENTS_EXTRA_CONF="pg_agents.database = ''
pg_agents.launcher_naptime = 1000" "$PG_AGENTS_SRC/tools/cluster.sh" start "$own" >/dev/null ||
    { echo "Bail out! cannot start the cluster of this test"; exit 1; }
cleanup() { llm_stop; "$PG_AGENTS_SRC/tools/cluster.sh" stop "$own"; }
# shellcheck disable=SC1091
. "$own/env"
llm_start
trap cleanup EXIT
log="$own/server.log"

qd() { PGDATABASE=$1 psql -XAtq -v ON_ERROR_STOP=1 -c "$2"; }
workers_in() { qd postgres "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_agents worker' AND datname = '$1'"; }
# waits (bounded) until the count of workers in database $1 is $2
wait_workers() {
    local _
    for _ in $(seq 1 "${3:-200}"); do [ "$(workers_in "$1")" = "$2" ] && return 0; sleep 0.05; done
    return 1
}
setup_db() {
    qd postgres "CREATE DATABASE $1" >/dev/null
    qd "$1" "CREATE EXTENSION pg_agents" >/dev/null
}
run_in() {  # DB WORKSPACE KEY: an agent and a run queued in that database
    local a
    a=$(PGDATABASE=$1 mk_agent "a640_$1" '{}' none '[]' 10 "$2")
    PGDATABASE=$1 start_run "$a" "{\"prompt\": \"Hello $3\"}"
}
st_in() { qd "$1" "SELECT status FROM agent.runs WHERE id = $2"; }
wait_st() {
    local st
    for _ in $(seq 1 600); do st=$(st_in "$1" "$2"); [[ "|$3|" == *"|$st|"* ]] && break; sleep 0.05; done
    echo "$st"
}

ok "$([ "$(qd postgres "SHOW pg_agents.database")" = "" ] && echo 0)" "pg_agents.database is empty: every database served"
ok "$(qd postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_agents launcher'" | grep -q t && echo 0)" \
   "one launcher runs"

# 1. two databases with the extension, a run in each (two workspaces)
setup_db a640
setup_db b640
qd postgres "CREATE DATABASE c640" >/dev/null
llm_script "[[t640a]]" '[{"text": "answer of a"}]'
llm_script "[[t640b]]" '[{"text": "answer of b"}]'
ra=$(run_in a640 w6 "[[t640a]]")
rb=$(run_in b640 w7 "[[t640b]]")
is "$(wait_st a640 "$ra" "succeeded|failed")" "succeeded" "the run queued in database a640 succeeds"
is "$(wait_st b640 "$rb" "succeeded|failed")" "succeeded" "the run queued in database b640 succeeds"
is "$(qd a640 "SELECT output->>'text' FROM agent.runs WHERE id = $ra")" "answer of a" "a640's run has its own answer"
is "$(qd b640 "SELECT output->>'text' FROM agent.runs WHERE id = $rb")" "answer of b" "b640's run has its own answer"
pa=$(qd a640 "SELECT pid FROM agent.worker_status")
pb=$(qd b640 "SELECT pid FROM agent.worker_status")
is "$(qd postgres "SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_stat_activity WHERE pid IN ($pa, $pb)")" "a640,b640" \
   "each database's agent.worker_status names a worker connected to that database"
is "$(qd a640 "SELECT database FROM agent.worker_status")" "a640" "worker_status names its database"
# the claim and finish audit rows are in each database, by the worker
is "$(qd b640 "SELECT count(*) FROM agent.audit_log WHERE target_type = 'run' AND target_id = '$rb' AND action = 'run.finish' AND actor_kind = 'system'")" \
   "1" "b640's worker wrote the finish of b640's run in b640"

# 2. the database without the extension has no worker (one that looks exits)
ok "$(wait_workers c640 0 && echo 0)" "database c640 without the extension keeps no worker"
ok "$(wait_workers c640 0 && echo 0)" "... still none a moment later"

# 3. CREATE EXTENSION there: served without a restart (within a launcher poll)
qd c640 "CREATE EXTENSION pg_agents" >/dev/null
llm_script "[[t640c]]" '[{"text": "answer of c"}]'
rc=$(run_in c640 w6 "[[t640c]]")
is "$(wait_st c640 "$rc" "succeeded|failed")" "succeeded" "after CREATE EXTENSION, a run queued in c640 succeeds without a restart"
ok "$(wait_workers c640 1 && echo 0)" "c640 has its worker"

# 4. DROP DATABASE while its worker holds a run
llm_script "[[t640hang]]" '[{"hang": true, "hang_seconds": 60}]'
rh=$(run_in b640 w7 "[[t640hang]]")
is "$(wait_st b640 "$rh" "running")" "running" "a run of b640 is running (its model call hangs)"
starts_before=$(grep -c 'pg_agents worker started in database "b640"' "$log")
out=$(qd postgres "DROP DATABASE b640" 2>&1)
is "$out" "" "DROP DATABASE b640 succeeds while its worker holds a run"
is "$(qd postgres "SELECT count(*) FROM pg_database WHERE datname = 'b640'")" "0" "b640 is gone"
# two launcher passes later, no worker was started for it again
sleep 2.5
is "$(grep -c 'pg_agents worker started in database "b640"' "$log")" "$starts_before" "the launcher does not start a worker for the dropped database"
is "$(qd postgres "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_agents worker' AND datname IS NULL")" "0" \
   "no worker is left without its database"
# the others still work
llm_script "[[t640a2]]" '[{"text": "a again"}]'
ra2=$(run_in a640 w6 "[[t640a2]]")
is "$(wait_st a640 "$ra2" "succeeded|failed")" "succeeded" "a640 is still served after the DROP DATABASE of b640"

# 5. pg_agents.max_cluster_runs = 1: the run of c640 waits for a640's to finish
qd postgres "ALTER SYSTEM SET pg_agents.max_cluster_runs = 1" >/dev/null
qd postgres "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
llm_script "[[t640slow]]" '[{"text": "slow a", "latency": 2}]'
llm_script "[[t640capc]]" '[{"text": "c under the cap"}]'
rs=$(run_in a640 w6 "[[t640slow]]")
is "$(wait_st a640 "$rs" "running")" "running" "a slow run of a640 is running"
rcap=$(run_in c640 w6 "[[t640capc]]")
is "$(wait_st a640 "$rs" "succeeded|failed")" "succeeded" "the slow run of a640 succeeds"
is "$(wait_st c640 "$rcap" "succeeded|failed")" "succeeded" "the run of c640 succeeds"
fin=$(qd a640 "SELECT finished_at FROM agent.runs WHERE id = $rs")
is "$(qd c640 "SELECT started_at >= '$fin'::timestamptz FROM agent.runs WHERE id = $rcap")" "t" \
   "under a cluster cap of 1, c640's run was claimed only after a640's finished"
qd postgres "ALTER SYSTEM RESET pg_agents.max_cluster_runs" >/dev/null
qd postgres "SELECT pg_reload_conf()" >/dev/null

# 6. DROP EXTENSION stops its database's worker
qd c640 "DROP EXTENSION pg_agents CASCADE" >/dev/null
ok "$(wait_workers c640 0 && echo 0)" "DROP EXTENSION in c640 stops its worker"
out=$(qd postgres "DROP DATABASE c640" 2>&1)
is "$out" "" "then DROP DATABASE c640 succeeds"

# 7. a pg_dump of a640 restored into a new database (docs/operations.md) is
# the same history, and its launcher-started worker runs its agent end to end
dumpf="$own/a640.sql"
pg_dump --load-via-partition-root -d a640 -f "$dumpf" 2>"$own/dump.err"
ok $? "pg_dump of a640"
qd postgres "CREATE DATABASE r640" >/dev/null
out=$(PGOPTIONS='-c session_replication_role=replica' PGDATABASE=r640 psql -XAtq -1 -v ON_ERROR_STOP=1 -f "$dumpf" 2>&1)
rc=$?; ok $rc "the dump restores into r640"; [ $rc = 0 ] || diag "${out:0:2000}"
hist() { qd "$1" "SELECT count(*) || ' ' || md5(string_agg(id || status || coalesce(output::text, ''), '|' ORDER BY id)) FROM agent.runs"; }
is "$(hist r640)" "$(hist a640)" "r640 has a640's runs, their statuses and answers"
ag=$(qd r640 "SELECT min(id) FROM agent.agents")
llm_script "[[t640restored]]" '[{"text": "answer on the restored copy"}]'
rr=$(PGDATABASE=r640 start_run "$ag" '{"prompt": "Hello [[t640restored]]"}')
is "$(wait_st r640 "$rr" "succeeded|failed")" "succeeded" "a run of a restored agent succeeds on the restored copy"
is "$(qd r640 "SELECT output->>'text' FROM agent.runs WHERE id = $rr")" "answer on the restored copy" \
   "with its own answer"
qd postgres "DROP DATABASE r640 WITH (FORCE)" >/dev/null 2>&1

# 8. no permission for a role with no grants, and the app role's view
qd a640 "DO \$\$ BEGIN CREATE ROLE nogrant640 LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$" >/dev/null
like "$(PGUSER=nogrant640 qd a640 "SELECT count(*) FROM agent.worker_status" 2>&1)" "permission denied" \
   "a role with no grants cannot read agent.worker_status"
ok "$(grep -q 'no background worker slot is free' "$log" && echo 1 || echo 0)" "no background worker slot ran out"
done_testing
