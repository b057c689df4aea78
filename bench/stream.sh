#!/usr/bin/env bash
# Streaming vs non-streaming: the worker's CPU per run (target streamed <= 1.1x).
#   n runs, each with one long answer (8,000 characters), 32 at once, against
#   the scripted LLM server: once without streaming, once streamed
#   (pg_agents.llm_stream = on: 40-character text deltas, so 200 events per
#   answer, parsed as they arrive, and the text published on NOTIFY
#   agent_run_deltas under the throttle) with a session listening.  The
#   worker's CPU is the time its threads spent on a CPU (/proc/<pid>/task/*/
#   schedstat, nanoseconds: clock ticks are too coarse for a phase of a
#   fraction of a second) over each phase.
# BENCH_SCALE=small shrinks the run count; BENCH_ROUNDS sets the rounds (5).
# BENCH_STREAM_PERF=<dir> records each phase with perf record -g into
# <dir>/<phase>.data (a profile: the ratios are then not worth much).
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/fixtures/llm.sh"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

if [ "${BENCH_SCALE:-}" = small ]; then n=200; else n=1000; fi
llm_start
stop=$(mktemp -u /tmp/pg_agents_bench_stream.XXXXXX)
lpid=
cleanup() { touch "$stop"; [ -n "$lpid" ] && wait "$lpid" 2>/dev/null; rm -f "$stop"; llm_stop; }
trap cleanup EXIT

setconf() { q "ALTER SYSTEM SET $1 = '$2'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.3; }
agent() {
    q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope, hourly_run_cap)
       VALUES ('bench', 'bench', '$1', jsonb_build_object('llm_url', '$LLM_URL'), 1000000) RETURNING id"
}
wait_done() {
    local i
    for i in $(seq 1 12000); do
        [ "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status IN ('succeeded','failed')")" -ge "$2" ] && return 0
        sleep 0.05
    done
    echo "timed out" >&2; return 1
}
enqueue() {
    q "SELECT count(agent._enqueue_run($1, 'autonomous', 'api', '{\"prompt\": \"bench\"}'::jsonb)) FROM generate_series(1, $2)" >/dev/null
}
wpid() { q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'"; }
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'; }   # on-CPU time, ns
rounds=${BENCH_ROUNDS:-5}

text=$(python3 -c 'print(("lorem ipsum dolor sit amet " * 400)[:8000])')
llm_script "" "[{\"text\": \"$text\", \"stream_chunk\": 40, \"repeat\": true}]"
setconf pg_agents.max_concurrent_runs 32
w=$(agent bench_stream_warmup)
enqueue "$w" 20; wait_done "$w" 20
q "VACUUM ANALYZE agent.runs" >/dev/null

xacts() { sleep 1.2; q "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }
phase() {  # name -> prints "ns seconds commits"
    local a pid c0 c1 t0 t1 x0 x1 perf=
    a=$(agent "bench_stream_$1")
    pid=$(wpid)
    x0=$(xacts)
    if [ -n "${BENCH_STREAM_PERF:-}" ]; then
        mkdir -p "$BENCH_STREAM_PERF"
        perf record -q -g -p "$pid" -o "$BENCH_STREAM_PERF/$1.data" >/dev/null 2>&1 & perf=$!
        sleep 0.5
    fi
    c0=$(cpu_ns "$pid"); t0=$(date +%s.%N)
    enqueue "$a" "$n"; wait_done "$a" "$n"
    c1=$(cpu_ns "$pid"); t1=$(date +%s.%N)
    if [ -n "$perf" ]; then kill -INT "$perf"; wait "$perf" || true; fi
    [ "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a AND status = 'succeeded'")" = "$n" ] || { echo "runs failed" >&2; exit 1; }
    x1=$(xacts)
    echo "$((c1 - c0)) $(python3 -c "print(round($t1 - $t0, 2))") $((x1 - x0))"
}

( echo "LISTEN agent_run_deltas;"; while [ ! -e "$stop" ]; do echo "SELECT 1;"; sleep 0.2; done ) |
    psql -XAtq >/dev/null 2>&1 &
lpid=$!

ms() { python3 -c "print(round($1 / 1e6 / $n, 3))"; }
per() { python3 -c "print(round($1 / $n, 2))"; }
echo "worker CPU per run, 8,000-character answers, $n runs, 32 at once ($rounds rounds, each not streamed then streamed):"
ratios=()
for round in $(seq 1 "$rounds"); do
    setconf pg_agents.llm_stream off
    read -r plain_ns plain_s plain_x <<<"$(phase "plain$round")"
    setconf pg_agents.llm_stream on
    read -r str_ns str_s str_x <<<"$(phase "streamed$round")"
    ratio=$(python3 -c "print(round($str_ns / max($plain_ns, 1), 2))")
    ratios+=("$ratio")
    echo "  round $round: not streamed $(ms "$plain_ns") ms/run ($plain_s s wall, $(per "$plain_x") commits/run);" \
         "streamed $(ms "$str_ns") ms/run ($str_s s wall, $(per "$str_x") commits/run); ratio $ratio"
done
setconf pg_agents.llm_stream off
echo "  ratio streamed / not streamed, median of $rounds: $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n "$(( (rounds + 1) / 2 ))p") (target <= 1.1)"
echo "  (streamed: 200 text deltas per answer parsed as they arrive, text published on NOTIFY agent_run_deltas at most every 100 ms)"
q "ALTER SYSTEM RESET pg_agents.max_concurrent_runs" >/dev/null; q "ALTER SYSTEM RESET pg_agents.llm_stream" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
