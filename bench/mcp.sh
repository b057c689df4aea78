#!/usr/bin/env bash
# MCP client benchmark: tools/call round trips per second, and the latency
# one MCP call adds over a direct HTTP request carrying the same JSON-RPC
# message, against two servers: the reference one
# (@modelcontextprotocol/server-everything, answers over SSE) when npm can
# install it, and our test server (test/fixtures/mcp_server.py, JSON bodies).
#   direct   curl, one process, keep-alive, the same POST on an open session
#            (it reads each answer to the end of the HTTP response)
#   probe    bin/pg_agents_mcp -n N (src/mcp_*.c: one session; it stops reading
#            an SSE stream as soon as the matching response arrived)
#   sql      agent.mcp_call() N times in one backend (session kept per process)
# BENCH_SCALE=small runs 100 calls instead of 1000.
#
# Then MCP tools in the worker (the calls go through its curl multi handle,
# src/mcp/mcp_tools_async.c), with the scripted LLM (test/fixtures/llm_server.py) and
# mcp_server.py --async-tools, pg_agents.max_concurrent_runs = 32:
#   builtin  runs calling a built-in tool (read_resource), then answering
#   mcp      the same runs calling an MCP tool that answers after 200 ms:
#            runs/s, and the ratio to the ideal 32 / 0.2 s = 160 runs/s
#            (target >= 80 %); with each, the worker's CPU time per run
#            (/proc, user + system), which a busy machine does not distort
#            as much as the rates
#   silent   run latency (queue to finish, median and p90) of lone runs
#            calling a built-in tool, alone, then while 8 runs call a
#            server that never answers anything, initialize included
#            (pg_agents.request_timeout = 5 s)
# MCP_BENCH_WORKER_ONLY=1 skips the client part.
. "$PG_AGENTS_ENV"
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
N=1000; [ "${BENCH_SCALE:-}" = small ] && N=100
tmp=$(mktemp -d)
peers="$src/test/fixtures/mcp_peers.sh"
cleanup() { "$peers" stop "$tmp" 2>/dev/null; [ -n "${pypid:-}" ] && kill "$pypid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

python3 "$src/test/fixtures/mcp_server.py" --port-file "$tmp/port" 2>/dev/null & pypid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
targets=("mcp_server.py (JSON answers)|http://127.0.0.1:$(cat "$tmp/port")/mcp")
if "$peers" install 2>"$tmp/err" && port=$("$peers" start-everything "$tmp"); then
    targets=("server-everything (SSE answers)|http://127.0.0.1:$port/mcp" "${targets[@]}")
else
    echo "# reference server unavailable ($(head -1 "$tmp/err")): only test/fixtures/mcp_server.py"
fi
tool=echo
now() { date +%s.%N; }
rate() { python3 -c "import sys; n,t=int(sys.argv[1]),float(sys.argv[2]); print('%8.0f calls/s  %7.3f ms/call' % (n/t, 1000*t/n))" "$1" "$2"; }
hdr=(-H "Content-Type: application/json" -H "Accept: application/json, text/event-stream")

bench_one() {  # label url
    local server=$1 url=$2 sid i t0 t1 direct probe sql sqlt sqlbad got
    # direct: initialize by hand, then N identical tools/call POSTs in one curl
    sid=$(curl -s -D - -o /dev/null "${hdr[@]}" "$url" \
            -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
          | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
    curl -s -o /dev/null "${hdr[@]}" -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 2025-11-25" "$url" \
        -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    for i in $(seq 1 "$N"); do
        [ "$i" -gt 1 ] && echo "next"
        echo "url = \"$url\""
        echo "header = \"Content-Type: application/json\""
        echo "header = \"Accept: application/json, text/event-stream\""
        echo "header = \"Mcp-Session-Id: $sid\""
        echo "header = \"MCP-Protocol-Version: 2025-11-25\""
        echo "data = \"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":$((i + 1)),\\\"method\\\":\\\"tools/call\\\",\\\"params\\\":{\\\"name\\\":\\\"$tool\\\",\\\"arguments\\\":{\\\"message\\\":\\\"bench\\\"}}}\""
        echo "output = \"/dev/null\""
        echo "silent"
    done >"$tmp/curl.cfg"
    t0=$(now); curl -K "$tmp/curl.cfg"; t1=$(now)
    direct=$(python3 -c "print($t1-$t0)")
    got=$(curl -s "${hdr[@]}" -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 2025-11-25" "$url" \
            -d "{\"jsonrpc\":\"2.0\",\"id\":99999,\"method\":\"tools/call\",\"params\":{\"name\":\"$tool\",\"arguments\":{\"message\":\"check\"}}}" | grep -c check)
    [ "$got" -ge 1 ] || echo "# warning: the direct request did not get an echo back"

    # probe: one session, N calls
    t0=$(now); "$src/bin/pg_agents_mcp" -q -n "$N" "$url" "$tool" '{"message":"bench"}' >"$tmp/probe.out"; t1=$(now)
    probe=$(python3 -c "print($t1-$t0)")
    got=$(grep -c bench "$tmp/probe.out")
    [ "$got" -eq "$N" ] || echo "# warning: the probe got $got answers out of $N"

    # SQL: N calls of agent.mcp_call in one backend
    sql=$(psql -XAtq -v ON_ERROR_STOP=1 2>&1 <<SQL
DELETE FROM agent.mcp_servers WHERE workspace_id = 'mcp_bench';
SELECT agent.mcp_add_server('bench', '$url', workspace_id => 'mcp_bench', refresh => false) > 0;
SELECT agent.mcp_call('bench', '$tool', '{"message": "warm"}', 'mcp_bench') IS NOT NULL;
DO \$\$
DECLARE t0 timestamptz := clock_timestamp(); sid bigint := agent._mcp_server_id('bench', 'mcp_bench'); r jsonb; bad int := 0;
BEGIN
  FOR i IN 1..$N LOOP
    r := agent.mcp_call(sid, '$tool', '{"message": "bench"}');
    IF coalesce((r->>'isError')::boolean, false) THEN bad := bad + 1; END IF;
  END LOOP;
  RAISE NOTICE 'elapsed % failed %', extract(epoch FROM clock_timestamp() - t0), bad;
END
\$\$;
DELETE FROM agent.mcp_servers WHERE workspace_id = 'mcp_bench';
SQL
)
    sqlt=$(echo "$sql" | sed -n 's/.*elapsed \([0-9.]*\) failed.*/\1/p')
    sqlbad=$(echo "$sql" | sed -n 's/.*elapsed [0-9.]* failed \([0-9]*\).*/\1/p')
    [ -n "$sqlt" ] || echo "# warning: the SQL run failed: $(echo "$sql" | grep -m1 ERROR)"
    [ "${sqlbad:-0}" = 0 ] || echo "# warning: $sqlbad SQL calls failed"

    echo "server: $server, $N tools/call '$tool' per client, one session each"
    printf '  direct HTTP (curl, keep-alive)   %s\n' "$(rate "$N" "$direct")"
    printf '  probe (src/mcp_*.c)              %s\n' "$(rate "$N" "$probe")"
    [ -n "$sqlt" ] && printf '  SQL agent.mcp_call (one backend) %s\n' "$(rate "$N" "$sqlt")"
    python3 - "$N" "$direct" "$probe" "${sqlt:-0}" <<'PY'
import sys
n, d, p, s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
line = "  added latency of one MCP call over the direct request: probe %+.3f ms (x%.2f)" % (1000*(p-d)/n, p/d)
if s > 0:
    line += ", SQL %+.3f ms (x%.2f)" % (1000*(s-d)/n, s/d)
print(line)
PY
}

if [ -z "${MCP_BENCH_WORKER_ONLY:-}" ]; then
    for t in "${targets[@]}"; do bench_one "${t%%|*}" "${t#*|}"; done
fi

# ---- MCP tools in the worker ----------------------------------------------
. "$src/test/fixtures/llm.sh"
export PGOPTIONS="-c client_min_messages=warning"
llm_start
trap 'llm_stop; cleanup' EXIT
python3 "$src/test/fixtures/mcp_server.py" --async-tools --port-file "$tmp/wport" 2>/dev/null & wpid=$!
trap 'llm_stop; kill $wpid 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/wport" ] && break; sleep 0.05; done
WURL="http://127.0.0.1:$(cat "$tmp/wport")/mcp"
wq() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
setconf() { wq "ALTER SYSTEM SET $1 = '$2'" >/dev/null; wq "SELECT pg_reload_conf()" >/dev/null; sleep 0.3; }
W=$([ "${BENCH_SCALE:-}" = small ] && echo 64 || echo 320)
WS=mcp_bench_worker
wq "DELETE FROM agent.mcp_servers WHERE workspace_id = '$WS'" >/dev/null
wq "SELECT agent.mcp_add_server('b', '$WURL', workspace_id => '$WS')" >/dev/null
# s: a server that never answers anything (listed while it still did)
wq "SELECT agent.mcp_add_server('s', '$WURL', workspace_id => '$WS')" >/dev/null
wq "UPDATE agent.mcp_servers SET url = '${WURL%/mcp}/silent/mcp' WHERE workspace_id = '$WS' AND name = 's'" >/dev/null
wagent() {
    wq "INSERT INTO agent.agents (workspace_id, owner_id, name, scope, hourly_run_cap)
        VALUES ('$WS', 'bench', '$1', jsonb_build_object('llm_url', '$LLM_URL', 'mcp_tools', '[\"mcp__b__*\", \"mcp__s__*\"]'::jsonb), 1000000)
        RETURNING id"
}
wenqueue() {  # agent, n, key -> queues n runs in one transaction; prints the time right after its commit
    psql -XAtq -v ON_ERROR_STOP=1 \
        -c "SELECT count(agent._enqueue_run($1, 'autonomous', 'api', '{\"prompt\": \"bench $3\"}'::jsonb)) FROM generate_series(1, $2)" \
        -c "SELECT clock_timestamp()" | tail -n 1
}
wdone() {  # agent, count
    local i
    for i in $(seq 1 12000); do
        [ "$(wq "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status IN ('succeeded','failed','cancelled','expired')")" -ge "$2" ] && return 0
        sleep 0.05
    done
    echo "# timed out" >&2; return 1
}
wrate() {  # agent, t0 -> runs/s from the queueing commit to the last finish
    wq "SELECT round((count(*) / greatest(extract(epoch FROM max(finished_at) - '$2'::timestamptz), 0.001))::numeric, 1)
        FROM agent.runs WHERE agent_id = $1 AND status = 'succeeded'"
}
wfailed() { wq "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status <> 'succeeded'"; }
# a second turn (its request carries the tool's result) ends the run
llm_script '"role":"tool"' '[{"text": "done", "repeat": true}]'
llm_script '[[wb]]' '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "bench"}, "repeat": true}]'
llm_script '[[wm]]' '[{"tool": "mcp__b__sleep", "input": {"ms": 200}, "repeat": true}]'
llm_script '[[wh]]' '[{"tool": "mcp__s__echo", "input": {"message": "anyone?"}, "repeat": true}]'
setconf pg_agents.max_concurrent_runs 32
warm=$(wagent bench_warm)
wenqueue "$warm" 8 '[[wm]]' >/dev/null; wdone "$warm" 8
wq "VACUUM ANALYZE agent.runs" >/dev/null

wcpu() {  # CPU time of the worker process so far, in clock ticks
    awk '{print $14 + $15}' "/proc/$(wq "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'")/stat"
}
cpums() { python3 -c "import os,sys; print('%.2f' % (1000.0 * (int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf('SC_CLK_TCK') / int(sys.argv[3])))" "$1" "$2" "$W"; }
echo "worker: $W runs, 32 at once, each one tool call then a final answer (scripted LLM, no latency)"
bi=$(wagent bench_builtin)
c0=$(wcpu); t0=$(wenqueue "$bi" "$W" '[[wb]]'); wdone "$bi" "$W"; c1=$(wcpu)
rb=$(wrate "$bi" "$t0")
printf '  built-in tool (read_resource)         %7s runs/s (%s not succeeded), worker CPU %s ms a run\n' "$rb" "$(wfailed "$bi")" "$(cpums "$c0" "$c1")"
mc=$(wagent bench_mcp)
c0=$(wcpu); t0=$(wenqueue "$mc" "$W" '[[wm]]'); wdone "$mc" "$W"; c1=$(wcpu)
rm_=$(wrate "$mc" "$t0")
printf '  MCP tool answering after 200 ms       %7s runs/s (%s not succeeded) = %s %% of the ideal 32 / 0.2 s = 160 runs/s (target >= 80 %%), worker CPU %s ms a run\n' \
    "$rm_" "$(wfailed "$mc")" "$(python3 -c "print(round(100*$rm_/160))")" "$(cpums "$c0" "$c1")"

# lone runs, one at a time: queue-to-finish latency, without then with silent calls in flight
lone() {  # agent, n -> "median p90" ms of n lone built-in runs
    local i r ids=""
    for i in $(seq 1 "$2"); do
        r=$(wq "SELECT agent._enqueue_run($1, 'autonomous', 'api', '{\"prompt\": \"lone [[wb]]\"}'::jsonb)")
        ids="$ids,$r"
        for _ in $(seq 1 600); do
            [ "$(wq "SELECT status IN ('succeeded','failed') FROM agent.runs WHERE id = $r")" = t ] && break
            sleep 0.01
        done
    done
    wq "SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric) || ' ' || round((percentile_cont(0.9) WITHIN GROUP (ORDER BY ms))::numeric)
        FROM (SELECT extract(epoch FROM finished_at - created_at) * 1000 AS ms FROM agent.runs WHERE id IN (${ids#,})) s"
}
setconf pg_agents.request_timeout 5000
lo=$(wagent bench_lone)
read -r l50 l90 <<<"$(lone "$lo" 10)"
hg=$(wagent bench_hang)
wenqueue "$hg" 8 '[[wh]]' >/dev/null
for _ in $(seq 1 200); do
    [ "$(curl -s "${WURL%/mcp}/_control/log" | python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin) if e.get("path") == "/silent/mcp"))')" -ge 1 ] && break
    sleep 0.05
done
hung=$(wq "SELECT count(*) FROM agent.runs WHERE agent_id = $hg AND status IN ('queued', 'running')")
read -r h50 h90 <<<"$(lone "$lo" 10)"
printf '  lone built-in runs, queue to finish:  median %s ms, p90 %s ms alone; median %s ms, p90 %s ms while %s runs call a silent server\n' \
    "$l50" "$l90" "$h50" "$h90" "$hung"
wdone "$hg" 8
wq "ALTER SYSTEM RESET pg_agents.request_timeout" >/dev/null
wq "ALTER SYSTEM RESET pg_agents.max_concurrent_runs" >/dev/null; wq "SELECT pg_reload_conf()" >/dev/null
wq "DELETE FROM agent.mcp_servers WHERE workspace_id = '$WS'" >/dev/null
