#!/usr/bin/env bash
# The locks of the queue (issue 30, finding 7): row locks of agent.locks
# (now) against the advisory locks they replace (0.3), side by side in this
# one run, each variant made from the installed function by swapping its one
# lock statement back (pg_get_functiondef), rounds alternating A B A B A B:
#   1. the worker's runs/s on the claim path that takes the lock: single-turn
#      runs, zero model latency, pg_agents.max_runs_per_workspace = 64 (so
#      that every agent.claim_runs takes the claim lock), 64 at once;
#   2. queueing under the hourly cap (agent._enqueue_run takes the agent's
#      cap lock): 2 clients (pgbench), one run per transaction, over 4
#      agents, worker paused; runs queued per second.
# BENCH_SCALE=small shrinks the run counts.
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/fixtures/llm.sh"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
pgb=$(command -v pgbench || echo "$PG_AGENTS_BINDIR/pgbench")

if [ "${BENCH_SCALE:-}" = small ]; then n=300; t=200; else n=1000; t=500; fi
tmp=$(mktemp -d /tmp/pg_agents_bench_locks.XXXXXX)
restore() {  # the installed definitions back, the worker resumed, settings reset
    [ -s "$tmp/claim_runs.sql" ] && psql -XAtq -f "$tmp/claim_runs.sql" >/dev/null 2>&1
    [ -s "$tmp/enqueue.sql" ] && psql -XAtq -f "$tmp/enqueue.sql" >/dev/null 2>&1
    q "SELECT agent.resume_worker()" >/dev/null 2>&1
    q "ALTER SYSTEM RESET pg_agents.max_runs_per_workspace" >/dev/null 2>&1
    q "ALTER SYSTEM RESET pg_agents.max_concurrent_runs" >/dev/null 2>&1
    q "SELECT pg_reload_conf()" >/dev/null 2>&1
}
cleanup() { restore; rm -rf "$tmp"; llm_stop; }
trap cleanup EXIT
llm_start

setconf() { q "ALTER SYSTEM SET $1 = '$2'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.3; }
agent() {
    q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope, hourly_run_cap)
       VALUES ('bench_locks', 'bench', '$1', jsonb_build_object('llm_url', '$LLM_URL'), 100000000) RETURNING id"
}
wait_done() {
    local i
    for i in $(seq 1 6000); do
        [ "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status IN ('succeeded','failed')")" -ge "$2" ] && return 0
        sleep 0.05
    done
    echo "timed out" >&2; return 1
}
# a function's definition with its lock statement replaced: FUNCTION FROM TO FILE
variant() {
    q "SELECT pg_get_functiondef('$1'::regprocedure)" >"$tmp/def"
    python3 - "$tmp/def" "$2" "$3" >"$4" <<'PY'
import sys
src, old, new = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
if src.count(old) != 1:
    sys.exit("the lock statement %r is not in the function once" % old)
print(src.replace(old, new) + ";")
PY
}
q "SELECT pg_get_functiondef('agent.claim_runs(integer)'::regprocedure)" | sed '$s/$/;/' >"$tmp/claim_runs.sql"
q "SELECT pg_get_functiondef('agent._enqueue_run(bigint,text,text,jsonb,bigint,text,bigint,bigint)'::regprocedure)" |
    sed '$s/$/;/' >"$tmp/enqueue.sql"
variant 'agent.claim_runs(integer)' "PERFORM FROM agent.locks l WHERE l.purpose = 'claim' AND l.key = '' FOR UPDATE;" \
        "PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('pg_agents.claim'), 0);" "$tmp/claim_adv.sql"
variant 'agent._enqueue_run(bigint,text,text,jsonb,bigint,text,bigint,bigint)' "PERFORM FROM agent.locks l WHERE l.purpose = 'cap' AND l.key = p_agent_id::text FOR UPDATE;" \
        "PERFORM pg_advisory_xact_lock(hashtext('pg_agents.cap'), hashtext(p_agent_id::text));" "$tmp/enqueue_adv.sql"

llm_script "" '[{"text": "ok", "repeat": true}]'
setconf pg_agents.max_concurrent_runs 64
setconf pg_agents.max_runs_per_workspace 64
w=$(agent bench_locks_warmup)
q "SELECT count(agent._enqueue_run($w, 'autonomous', 'api', '{\"prompt\": \"bench\"}'::jsonb)) FROM generate_series(1, 20)" >/dev/null
wait_done "$w" 20
q "VACUUM ANALYZE agent.runs" >/dev/null

claim_phase() {  # definition file -> runs/s of the worker over n runs
    local a t0
    psql -XAtq -v ON_ERROR_STOP=1 -f "$1" >/dev/null
    a=$(agent "bench_locks_claim")
    t0=$(psql -XAtq -v ON_ERROR_STOP=1 \
        -c "SELECT count(agent._enqueue_run($a, 'autonomous', 'api', '{\"prompt\": \"bench\"}'::jsonb)) FROM generate_series(1, $n)" \
        -c "SELECT clock_timestamp()" | tail -n 1)
    wait_done "$a" "$n"
    q "SELECT round(count(*) / greatest(extract(epoch FROM max(finished_at) - least(min(started_at), '$t0')), 0.001))::int
         FROM agent.runs WHERE agent_id = $a AND status = 'succeeded'"
}
ratio() { python3 -c "print(round($1 / max($2, 1), 2))"; }
med() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
echo "the worker's runs/s, claims under max_runs_per_workspace = 64 (zero latency, 64 at once, $n runs a round):"
ra=(); rb=(); rr=()
for round in 1 2 3; do
    a=$(claim_phase "$tmp/claim_runs.sql"); b=$(claim_phase "$tmp/claim_adv.sql")
    ra+=("$a"); rb+=("$b"); rr+=("$(ratio "$a" "$b")")
    echo "  round $round: row lock (now) $a runs/s; advisory lock (0.3) $b runs/s; ratio $(ratio "$a" "$b")"
done
echo "  median: row lock $(med "${ra[@]}") runs/s, advisory $(med "${rb[@]}") runs/s, ratio $(med "${rr[@]}") (target >= 0.95)"
psql -XAtq -v ON_ERROR_STOP=1 -f "$tmp/claim_runs.sql" >/dev/null

# 2. queueing under the cap, worker paused (nothing claims meanwhile)
q "SELECT agent.pause_worker('bench/locks.sh')" >/dev/null
ids=$(for i in 1 2 3 4; do agent "bench_locks_cap$i"; done | tr '\n' ',' | sed 's/,$//')
cat >"$tmp/enqueue.pgb" <<SQL
SELECT agent._enqueue_run((ARRAY[$ids])[1 + (random() * 3)::int], 'autonomous', 'api', '{"prompt": "bench"}'::jsonb);
SQL
enqueue_phase() {  # definition file -> transactions/s
    psql -XAtq -v ON_ERROR_STOP=1 -f "$1" >/dev/null
    "$pgb" -n -c 2 -j 2 -t "$t" -f "$tmp/enqueue.pgb" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1 |
        python3 -c 'import sys; print(round(float(sys.stdin.read() or 0)))'
}
echo "queueing under the hourly cap (agent._enqueue_run, 2 clients, one run per transaction, $((2 * t)) a round):"
ra=(); rb=(); rr=()
for round in 1 2 3; do
    a=$(enqueue_phase "$tmp/enqueue.sql"); b=$(enqueue_phase "$tmp/enqueue_adv.sql")
    ra+=("$a"); rb+=("$b"); rr+=("$(ratio "$a" "$b")")
    echo "  round $round: row lock (now) $a runs/s; advisory lock (0.3) $b runs/s; ratio $(ratio "$a" "$b")"
done
echo "  median: row lock $(med "${ra[@]}") runs/s, advisory $(med "${rb[@]}") runs/s, ratio $(med "${rr[@]}") (target >= 0.95)"
q "DELETE FROM agent.runs WHERE agent_id IN ($ids)" >/dev/null
