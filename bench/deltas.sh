#!/usr/bin/env bash
# Streaming delta latency as a client sees it (issue 30: NOTIFY carries ids
# only, the text is read through agent.run_deltas): runs streamed from the
# scripted LLM server (pg_agents.llm_stream = on, 40-character chunks 5 ms
# apart), 2 at once, while a client of the application role (bound to the
# workspace) LISTENs on agent_run_deltas and, for each notification, reads
# that delta's text through agent.run_deltas (bench/stream_client.c, libpq).
# Latency of a delta: from the commit of the worker's transaction that wrote
# it (track_commit_timestamp: the moment it can be read) to the client
# having its text; median and p90 over every delta.  From that transaction's
# start (the row's created_at) printed beside.  (The worker publishes a
# call's text at most every 100 ms: a chunk's wait for the next publication
# is the throttle's, not counted here.)
# BENCH_SCALE=small shrinks the run count.
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/fixtures/llm.sh"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

if [ "${BENCH_SCALE:-}" = small ]; then n=8; else n=24; fi
tmp=$(mktemp -d /tmp/pg_agents_bench_deltas.XXXXXX)
cpid=
cleanup() { touch "$tmp/stop"; [ -n "$cpid" ] && wait "$cpid" 2>/dev/null; rm -rf "$tmp"; llm_stop; }
trap cleanup EXIT
pgc=$("$here/tools/pg_version.sh" pg_config)
cc -std=gnu99 -O2 -Wall -Wextra -I"$("$pgc" --includedir)" -o "$tmp/stream_client" "$here/bench/stream_client.c" \
   -L"$("$pgc" --libdir)" -lpq
llm_start

setconf() { q "ALTER SYSTEM SET $1 = '$2'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.3; }
wait_done() {
    local i
    for i in $(seq 1 6000); do
        [ "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status IN ('succeeded','failed')")" -ge "$2" ] && return 0
        sleep 0.05
    done
    echo "timed out" >&2; return 1
}
q "DROP ROLE IF EXISTS bench_deltas_app; CREATE ROLE bench_deltas_app LOGIN IN ROLE agents_app" >/dev/null
a=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope, hourly_run_cap)
       VALUES ('bench_deltas', 'bench', 'bench_deltas', jsonb_build_object('llm_url', '$LLM_URL'), 1000000) RETURNING id")
text=$(python3 -c 'print(("lorem ipsum dolor sit amet " * 200)[:4000])')
llm_script "" "[{\"text\": \"$text\", \"stream_chunk\": 40, \"stream_delay\": 0.005, \"repeat\": true}]"
setconf pg_agents.llm_stream on
setconf pg_agents.max_concurrent_runs 2

"$tmp/stream_client" "host=$PGHOST port=$PGPORT dbname=$PGDATABASE user=bench_deltas_app options='-c pg_agents.workspace=bench_deltas'" \
    bench "$tmp/stop" >"$tmp/seen" 2>"$tmp/client.err" &
cpid=$!
for _ in $(seq 1 100); do grep -q listening "$tmp/client.err" && break; sleep 0.05; done
q "SELECT count(agent._enqueue_run($a, 'autonomous', 'api', '{\"prompt\": \"bench\"}'::jsonb)) FROM generate_series(1, $n)" >/dev/null
wait_done "$a" "$n"
sleep 0.5
touch "$tmp/stop"; wait "$cpid"; cpid=
[ "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a AND status = 'succeeded'")" = "$n" ] || { echo "runs failed" >&2; exit 1; }
if [ -s "$tmp/client.err" ] && grep -qv listening "$tmp/client.err"; then sed 's/^/  client: /' "$tmp/client.err" | head -5 >&2; fi

q "CREATE TABLE public.bench_deltas_seen (run_id bigint, step int, attempt int, \"offset\" bigint, length int, notified_us bigint, us bigint)" >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 -c "\\copy public.bench_deltas_seen FROM '$tmp/seen' WITH (DELIMITER ' ')" >/dev/null
read -r seen total c50 c90 s50 s90 n50 n90 <<<"$(q "
  SELECT count(*), (SELECT count(*) FROM agent.run_stream_text d JOIN agent.runs r ON r.id = d.run_id WHERE r.agent_id = $a),
         round((percentile_cont(0.5) WITHIN GROUP (ORDER BY from_commit))::numeric, 2),
         round((percentile_cont(0.9) WITHIN GROUP (ORDER BY from_commit))::numeric, 2),
         round((percentile_cont(0.5) WITHIN GROUP (ORDER BY from_start))::numeric, 2),
         round((percentile_cont(0.9) WITHIN GROUP (ORDER BY from_start))::numeric, 2),
         round((percentile_cont(0.5) WITHIN GROUP (ORDER BY notified))::numeric, 2),
         round((percentile_cont(0.9) WITHIN GROUP (ORDER BY notified))::numeric, 2)
    FROM (SELECT (s.us / 1e3) - extract(epoch FROM pg_xact_commit_timestamp(d.xmin)) * 1e3 AS from_commit,
                 (s.notified_us / 1e3) - extract(epoch FROM pg_xact_commit_timestamp(d.xmin)) * 1e3 AS notified,
                 (s.us / 1e3) - extract(epoch FROM d.created_at) * 1e3 AS from_start
            FROM public.bench_deltas_seen s
            JOIN agent.run_stream_text d
              ON d.run_id = s.run_id AND d.step = s.step AND d.attempt = s.attempt AND d.\"offset\" = s.\"offset\") x" | tr '|' ' ')"
echo "streamed delta latency, NOTIFY (ids) then agent.run_deltas (text): median $c50 ms, p90 $c90 ms from the writing commit" \
     "over $seen deltas of $n runs, 2 at once (the client read $seen of $total)"
echo "  (of which the notification: median $n50 ms, p90 $n90 ms; from the writing transaction's start: median $s50 ms, p90 $s90 ms; target: a few ms)"
q "DROP TABLE public.bench_deltas_seen" >/dev/null
q "ALTER SYSTEM RESET pg_agents.llm_stream" >/dev/null; q "ALTER SYSTEM RESET pg_agents.max_concurrent_runs" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
q "DROP ROLE bench_deltas_app" >/dev/null 2>&1 || true
