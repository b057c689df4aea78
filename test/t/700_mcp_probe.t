#!/usr/bin/env bash
# The MCP client (bin/pg_agents_mcp, built from src/mcp/mcp_transport.c,
# mcp_protocol.c, mcp_async.c) against our own Python MCP server: pagination,
# SSE, sessions, protocol headers, lost sessions, errors of every kind, the
# URL policy.
. "$(dirname "$0")/../fixtures/mcp_tap.sh"
[ -x "$MCP_PROBE" ] || skip_all "bin/pg_agents_mcp is not built (run make)"
start_py_server 0 --tools 25 --page-size 10

# listing, pagination
out=$("$MCP_PROBE" "$PY/mcp"); rc=$?
is "$rc" 0 "probe lists tools (exit 0)"
is "$(echo "$out" | pj 'len(d["tools"])')" 25 "all 25 tools listed across pages"
is "$(echo "$out" | pj 'len(set(t["name"] for t in d["tools"]))')" 25 "no tool listed twice"
is "$(echo "$out" | pj 'd["protocolVersion"]')" "2025-11-25" "protocol version 2025-11-25 negotiated"
log=$(py_log)
is "$(echo "$log" | pj 'sum(1 for e in d if e["rpc_method"]=="tools/list")')" 3 "nextCursor followed: 3 tools/list pages"
is "$(echo "$log" | pj '[e["rpc_method"] for e in d if e["method"]=="POST"][:4]')" \
   '["server/discover", "initialize", "notifications/initialized", "tools/list"]' \
   "auto: server/discover first, refused by a 2025-11-25 server: initialize, notifications/initialized, tools/list"
is "$(echo "$log" | pj 'all(e["session"] and e["protocol_version"]=="2025-11-25" for e in d if e["method"]=="POST" and e["rpc_method"] not in ("initialize", "server/discover"))')" \
   true "Mcp-Session-Id echoed and MCP-Protocol-Version sent after initialization"
is "$(echo "$log" | pj '[e for e in d if e["rpc_method"]=="initialize"][0]["protocol_version"]')" null "no MCP-Protocol-Version header on initialize"
py_reset
"$MCP_PROBE" -P 2025-11-25 "$PY/mcp" >/dev/null; rc=$?
is "$(py_log | pj '[e["rpc_method"] for e in d if e["method"]=="POST"][:2]')" '["initialize", "notifications/initialized"]' \
   "-P 2025-11-25: initialize at once, no server/discover"
is "$(echo "$log" | pj 'all("application/json" in e["accept"] and "text/event-stream" in e["accept"] for e in d if e["method"]=="POST")')" \
   true "every POST accepts application/json and text/event-stream"
is "$(echo "$log" | pj '[e["status"] for e in d if e["method"]=="DELETE"]')" "[200]" "session closed with DELETE"

# calls
out=$("$MCP_PROBE" "$PY/mcp" echo '{"message":"hello"}'); rc=$?
is "$rc" 0 "echo call exits 0"
is "$(echo "$out" | pj 'd["content"][0]["text"]')" "echo: hello" "echo result"
out=$("$MCP_PROBE" -t add -a '{"a":2,"b":40}' "$PY/mcp"); rc=$?
is "$(echo "$out" | pj 'd["structuredContent"]["sum"]')" 42 "options -t/-a before the URL (conformance style)"
py_reset
out=$("$MCP_PROBE" "$PY/mcp" sse_echo '{"message":"streamed"}'); rc=$?
is "$rc" 0 "SSE answer exits 0"
is "$(echo "$out" | pj 'd["content"][0]["text"]')" "sse: streamed" \
   "SSE: comment, notification, server request and a foreign id skipped; multi-line CRLF data joined"
is "$(py_log | pj 'sum(1 for e in d if e["rpc_response"] and e["session"])')" 1 "the server's ping request was answered in-session"

out=$("$MCP_PROBE" "$PY/mcp" fail 2>"$MCP_TMP/err"); rc=$?
is "$rc" 1 "isError result exits 1"
is "$(echo "$out" | pj 'd["isError"]')" true "isError result printed"
out=$("$MCP_PROBE" "$PY/mcp" boom 2>"$MCP_TMP/err"); rc=$?
is "$rc" 1 "JSON-RPC error exits 1"
like "$(cat "$MCP_TMP/err")" "JSON-RPC error -32603: boom" "JSON-RPC error reported with code and message"
"$MCP_PROBE" "$PY/mcp" nosuchtool 2>"$MCP_TMP/err"; rc=$?
is "$rc" 1 "unknown tool exits 1"

# lost session: the server forgets it after one request
py_reset
out=$("$MCP_PROBE" -v -n 3 "$PY/short/mcp" echo '{"message":"again"}' 2>"$MCP_TMP/err"); rc=$?
is "$rc" 0 "three calls on a session the server keeps losing all succeed"
is "$(echo "$out" | grep -c 'echo: again')" 3 "three echo results"
like "$(cat "$MCP_TMP/err")" "initializations 3" "re-initialized after each lost session"
is "$(py_log | pj 'sum(1 for e in d if e["status"]==404 and e["method"]=="POST")')" 2 "the server answered 404 twice"

# lost session: the server is restarted on the same port between two calls
mkfifo "$MCP_TMP/step"
"$MCP_PROBE" -v -s -n 2 "$PY/mcp" echo '{"message":"restart"}' <"$MCP_TMP/step" >"$MCP_TMP/out" 2>"$MCP_TMP/err" &
probe=$!
exec 7>"$MCP_TMP/step"
for _ in $(seq 1 600); do grep -q restart "$MCP_TMP/out" 2>/dev/null && break; sleep 0.05; done
stop_py_server
start_py_server "$PY_PORT" --tools 25 --page-size 10
echo go >&7
exec 7>&-
wait $probe; rc=$?
is "$rc" 0 "a call after a server restart succeeds"
is "$(grep -c 'echo: restart' "$MCP_TMP/out")" 2 "both calls answered"
like "$(cat "$MCP_TMP/err")" "initializations 2" "one new initialization after the restart"

# broken servers
"$MCP_PROBE" "$PY/garbage" 2>"$MCP_TMP/err"; rc=$?
is "$rc" 1 "garbage server exits 1"
like "$(cat "$MCP_TMP/err")" "did not answer JSON-RPC" "garbage reported"
"$MCP_PROBE" "$PY/nothere" 2>"$MCP_TMP/err"; rc=$?
like "$(cat "$MCP_TMP/err")" "HTTP 404" "HTTP 404 on initialize reported"
"$MCP_PROBE" "$PY/auth/mcp" 2>"$MCP_TMP/err"; rc=$?
is "$rc" 1 "401 exits 1"
like "$(cat "$MCP_TMP/err")" "refused the credentials \\(HTTP 401\\)" "401 reported"
"$MCP_PROBE" -H 'Authorization: Bearer wrong-secret-4242' "$PY/auth/mcp" 2>"$MCP_TMP/err"; rc=$?
unlike "$(cat "$MCP_TMP/err")" "wrong-secret-4242" "a header value echoed by the server is masked in the error"
like "$(cat "$MCP_TMP/err")" "\\[redacted\\]" "masked as [redacted]"
out=$("$MCP_PROBE" -H 'Authorization: Bearer s3cr3t-token-value' "$PY/auth/mcp" echo '{"message":"authed"}'); rc=$?
is "$(echo "$out" | pj 'd["content"][0]["text"]')" "echo: authed" "the configured header is sent"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
"$MCP_PROBE" "http://127.0.0.1:$port/mcp" 2>"$MCP_TMP/err"; rc=$?
is "$rc" 1 "refused connection exits 1"
like "$(cat "$MCP_TMP/err")" "(server/discover|initialize) failed: .*(connect|Connection)" "refused connection reported"
"$MCP_PROBE" -T 1000 "$PY/slow/mcp" 2>"$MCP_TMP/err"; rc=$?
like "$(cat "$MCP_TMP/err")" "timed out after 1000 ms" "time-out reported"
"$MCP_PROBE" "$PY/old/mcp" 2>"$MCP_TMP/err"; rc=$?
like "$(cat "$MCP_TMP/err")" "unsupported protocol version \"2024-01-01\"" "unsupported protocol version refused"

# URL policy: https everywhere, http only to loopback
for u in http://example.com/mcp http://10.1.2.3/mcp "http://127.0.0.1@example.com/mcp" \
         http://localhost.example.com/mcp http://127.0.0.1.example.com/mcp ftp://127.0.0.1/mcp "not a url"; do
    "$MCP_PROBE" "$u" 2>"$MCP_TMP/err"; rc=$?
    like "$rc $(cat "$MCP_TMP/err")" "^1 pg_agents_mcp: URL refused" "refused before any traffic: $u"
done
for u in "http://localhost:$PY_PORT/mcp" "http://127.0.0.2:9/mcp" "http://[::1]:9/mcp" "https://127.0.0.1:9/mcp"; do
    "$MCP_PROBE" -T 2000 "$u" >/dev/null 2>"$MCP_TMP/err"
    unlike "$(cat "$MCP_TMP/err")" "URL refused" "allowed: $u"
done
done_testing
