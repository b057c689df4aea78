#!/usr/bin/env bash
# Provider rate limits (docs/worker.md, "Providers"): the scripted LLM server
# enforces a provider's limits (test/fixtures/llm_server.py, POST /_limits:
# 50 requests in flight, 6,000 requests per minute as a bucket of one
# second's worth) and answers 429 beyond them, counting each.
#   1. without limits configured on the provider: the worker (100 slots)
#      overruns the server; the 429s it gets                       (the storm)
#      baseline: no limits anywhere (worker CPU per run without the limiter)
#   2. 3,000 single-turn runs, 250 ms model latency, provider limited to
#      max_concurrent 50 and requests_per_minute 6,000: 429s (target 0) and
#      throughput against the limit (target within 10 % of 100 runs/s)
#   3. the same provider, 1 s latency: the concurrency cap binds (50 runs/s
#      at most): 429s (target 0), throughput against 50/s
# BENCH_SCALE=small shrinks the run counts.
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/fixtures/llm.sh"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

if [ "${BENCH_SCALE:-}" = small ]; then n0=300; n1=600; n2=200; else n0=600; n1=3000; n2=1000; fi
llm_start

post() {  # post PATH JSON: to the scripted server
    python3 -c 'import sys,urllib.request; urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), data=sys.argv[3].encode())).read()' "$LLM_PORT" "$1" "$2"
}
stats() {  # field of the server's counters
    python3 -c 'import json,sys,urllib.request; print(json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_stats" % sys.argv[1]).read())[sys.argv[2]])' "$LLM_PORT" "$1"
}
setconf() { q "ALTER SYSTEM SET $1 = '$2'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.3; }
agent() {  # name provider
    q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope, hourly_run_cap)
       VALUES ('bench_prov', 'bench', '$1', jsonb_build_object('provider', '$2'), 1000000) RETURNING id"
}
wait_done() {  # agent, count
    local i
    for i in $(seq 1 12000); do
        [ "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status IN ('succeeded','failed')")" -ge "$2" ] && return 0
        sleep 0.05
    done
    echo "timed out" >&2; return 1
}
enqueue() {  # agent, n -> queues n runs in one transaction; prints the time right after its commit
    psql -XAtq -v ON_ERROR_STOP=1 \
        -c "SELECT count(agent._enqueue_run($1, 'autonomous', 'api', '{\"prompt\": \"bench\"}'::jsonb)) FROM generate_series(1, $2)" \
        -c "SELECT clock_timestamp()" | tail -n 1
}
rate() {  # agent, t0 -> succeeded runs/s from the queueing commit to the last finish
    q "SELECT round((count(*) / greatest(extract(epoch FROM max(finished_at) - '$2'::timestamptz), 0.001))::numeric, 1)
       FROM agent.runs WHERE agent_id = $1 AND status = 'succeeded'"
}
wpid() { q "SELECT pid FROM agent.worker_status"; }
cpu_ms() {  # CPU time (user + system) of the worker process so far, in ms
    awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"
}
failed() { q "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status <> 'succeeded'"; }
retries() { q "SELECT count(*) FROM agent.run_steps s JOIN agent.runs r ON r.id = s.run_id WHERE r.agent_id = $1 AND s.status = 'retry'"; }

# the provider's key from the secrets store (a file the server reads)
kf=$(mktemp /tmp/pg_agents_bench_key.XXXXXX); printf 'sk-bench-provider' > "$kf"; chmod 644 "$kf"
q "SELECT agent.set_secret('bench_key', pg_catalog.pg_read_file('$kf'))" >/dev/null; rm -f "$kf"
q "SELECT agent.drop_provider(name) FROM agent.providers WHERE name IN ('bench_open', 'bench_limited')" >/dev/null
q "SELECT agent.add_provider('bench_open', 'openai', '$LLM_URL', '\${secret:bench_key}', '{\"default_model\": \"bench\"}')" >/dev/null
q "SELECT agent.add_provider('bench_limited', 'openai', '$LLM_URL', '\${secret:bench_key}',
     '{\"default_model\": \"bench\", \"max_concurrent\": 50, \"requests_per_minute\": 6000}')" >/dev/null
setconf pg_agents.max_concurrent_runs 100

# warm-up (no limits at the server)
post /_limits '{}'
llm_script "" '[{"text": "ok", "repeat": true}]'
w=$(agent bench_prov_warm bench_open)
enqueue "$w" 20 >/dev/null; wait_done "$w" 20
q "VACUUM ANALYZE agent.runs" >/dev/null; q "CHECKPOINT" >/dev/null

# 1. no limits configured: the storm
llm_script "" '[{"text": "ok", "latency": 0.25, "repeat": true}]'
post /_limits '{"max_concurrent": 50, "rpm": 6000, "headers": true}'
a=$(agent bench_prov_open bench_open)
t0=$(enqueue "$a" "$n0"); wait_done "$a" "$n0"
s429=$(( $(stats rejected_concurrency) + $(stats rejected_rpm) ))
echo "no limits on the provider, $n0 runs, 250 ms latency, 100 slots:  $s429 replies 429 from the server ($(retries "$a") retries recorded, $(failed "$a") runs failed), $(rate "$a" "$t0") runs/s"

# baseline: no limits anywhere, the same latency (worker CPU per run without the limiter's waits)
post /_limits '{}'
a2=$(agent bench_prov_free bench_open)
pid=$(wpid); c0=$(cpu_ms "$pid")
t0=$(enqueue "$a2" "$n1"); wait_done "$a2" "$n1"
c1=$(cpu_ms "$pid")
echo "baseline, no limits anywhere, $n1 runs, 250 ms latency, 100 slots: $(rate "$a2" "$t0") runs/s, worker CPU $(python3 -c "print(round(($c1 - $c0) / $n1, 2))") ms per run"

# 2. limited: 50 at once, 6,000 a minute; 250 ms latency (the rate binds)
post /_limits '{"max_concurrent": 50, "rpm": 6000, "headers": true}'
b=$(agent bench_prov_rpm bench_limited)
pid=$(wpid); c0=$(cpu_ms "$pid")
t0=$(enqueue "$b" "$n1"); wait_done "$b" "$n1"
c1=$(cpu_ms "$pid")
r=$(rate "$b" "$t0")
c429=$(stats rejected_concurrency); r429=$(stats rejected_rpm)
echo "limited provider (50 at once, 6,000/min), $n1 runs, 250 ms latency: $((c429 + r429)) replies 429 (target 0: $c429 over the concurrency, $r429 over the rate), $(failed "$b") runs failed"
echo "  throughput $r runs/s = $(python3 -c "print(round(100*$r/100))") % of the limit of 100/s (target 90-100 %); at most $(stats max_in_flight) requests in flight at the server"
echo "  provider_status: $(q "SELECT format('requests %s, waits %s, rate_limited %s', requests, waits, rate_limited) FROM agent.provider_status WHERE name = 'bench_limited'"); worker CPU $(python3 -c "print(round(($c1 - $c0) / $n1, 2))") ms per run"

# 3. 1 s latency: the concurrency cap binds (50/s)
llm_script "" '[{"text": "ok", "latency": 1.0, "repeat": true}]'
post /_limits '{"max_concurrent": 50, "rpm": 6000, "headers": true}'
c=$(agent bench_prov_conc bench_limited)
c0=$(cpu_ms "$pid")
t0=$(enqueue "$c" "$n2"); wait_done "$c" "$n2"
c1=$(cpu_ms "$pid")
r=$(rate "$c" "$t0")
c429=$(stats rejected_concurrency); r429=$(stats rejected_rpm)
echo "limited provider, $n2 runs, 1 s latency (the cap binds): $((c429 + r429)) replies 429 (target 0), $(failed "$c") runs failed"
echo "  throughput $r runs/s = $(python3 -c "print(round(100*$r/50))") % of the 50/s the cap allows; at most $(stats max_in_flight) in flight at the server; worker CPU $(python3 -c "print(round(($c1 - $c0) / $n2, 2))") ms per run"

post /_limits '{}'
q "UPDATE agent.agents SET scope = '{}' WHERE workspace_id = 'bench_prov'" >/dev/null
q "SELECT agent.drop_provider('bench_open'), agent.drop_provider('bench_limited'), agent.drop_secret('bench_key')" >/dev/null
q "ALTER SYSTEM RESET pg_agents.max_concurrent_runs" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
