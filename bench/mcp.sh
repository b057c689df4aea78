#!/usr/bin/env bash
# MCP client benchmark: tools/call round trips per second, and the latency
# one MCP call adds over a direct HTTP request carrying the same JSON-RPC
# message, against two servers: the reference one
# (@modelcontextprotocol/server-everything, answers over SSE) when npm can
# install it, and our test server (test/fixtures/mcp_server.py, JSON bodies).
#   direct   curl, one process, keep-alive, the same POST on an open session
#            (it reads each answer to the end of the HTTP response)
#   probe    bin/pg_agents_mcp -n N (src/mcp.c: one session; it stops reading
#            an SSE stream as soon as the matching response arrived)
#   sql      agent.mcp_call() N times in one backend (session kept per process)
# BENCH_SCALE=small runs 100 calls instead of 1000.
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
    printf '  probe (src/mcp.c)                %s\n' "$(rate "$N" "$probe")"
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

for t in "${targets[@]}"; do bench_one "${t%%|*}" "${t#*|}"; done
