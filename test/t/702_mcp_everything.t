#!/usr/bin/env bash
# The reference server @modelcontextprotocol/server-everything (npm), over
# Streamable HTTP with SSE answers and session ids: the probe and the SQL
# functions list its tools and call echo and get-sum; a restart of the server
# (lost session) is recovered.
. "$(dirname "$0")/../fixtures/mcp_tap.sh"
if ! err=$("$MCP_PEERS" install 2>&1); then skip_all "npm install failed: ${err//$'\n'/ }"; fi
port=$("$MCP_PEERS" start-everything "$MCP_TMP") || skip_all "server-everything did not start: $port"
EV="http://127.0.0.1:$port/mcp"
WS=mcp_ws_702

out=$("$MCP_PROBE" "$EV"); rc=$?
is "$rc" 0 "probe lists the reference server's tools"
names=$(echo "$out" | pj '" ".join(sorted(t["name"] for t in d["tools"]))')
like " $names " " echo " "echo listed"
like " $names " " get-sum " "get-sum listed"
is "$(echo "$out" | pj 'd["protocolVersion"]')" "2025-11-25" "protocol 2025-11-25 negotiated"
out=$("$MCP_PROBE" "$EV" echo '{"message":"hello everything"}'); rc=$?
is "$rc" 0 "echo call exits 0"
is "$(echo "$out" | pj 'd["content"][0]["text"]')" "Echo: hello everything" "echo answered (SSE stream, session id)"
out=$("$MCP_PROBE" -q "$EV" get-sum '{"a":19,"b":23}'); rc=$?
like "$out" "42" "get-sum answered 42"
"$MCP_PROBE" "$EV" get-sum '{"a":"x"}' >"$MCP_TMP/out" 2>&1; rc=$?
is "$rc" 1 "invalid arguments: a failed tool result, exit 1"

# SQL: refresh, status, call
q -c "DELETE FROM agent.mcp_servers WHERE workspace_id = '$WS'" >/dev/null
out=$(q -c "SELECT agent.mcp_add_server('everything', '$EV', workspace_id => '$WS') > 0" \
        -c "SELECT connected, tool_count >= 10, protocol_version FROM agent.mcp_status WHERE workspace_id = '$WS'")
is "$(echo $out)" "t t|t|2025-11-25" "mcp_add_server + refresh: connected, tools listed"
out=$(q -c "SELECT count(*) FROM agent.mcp_tools t JOIN agent.mcp_servers s ON s.id = t.server_id WHERE s.workspace_id = '$WS' AND t.exposed_name IN ('mcp__everything__echo', 'mcp__everything__get-sum')")
is "$out" 2 "exposed as mcp__everything__echo and mcp__everything__get-sum"
out=$(q -c "SELECT agent.mcp_call('everything', 'get-sum', '{\"a\": 2, \"b\": 3}', '$WS')->'content'->0->>'text'")
like "$out" "5" "mcp_call get-sum from SQL"

# restart of the server on the same port: sessions are lost
mkfifo "$MCP_TMP/step"
"$MCP_PROBE" -v -s -n 2 "$EV" echo '{"message":"restart"}' <"$MCP_TMP/step" >"$MCP_TMP/out" 2>"$MCP_TMP/err" &
probe=$!
exec 7>"$MCP_TMP/step"
for _ in $(seq 1 600); do grep -q restart "$MCP_TMP/out" 2>/dev/null && break; sleep 0.05; done
out=$(psql -XAtq 2>&1 <<SQL
SELECT agent.mcp_call('everything', 'echo', '{"message": "before"}', '$WS')->'content'->0->>'text';
\! "$MCP_PEERS" stop "$MCP_TMP" && "$MCP_PEERS" start-everything "$MCP_TMP" $port >/dev/null
SELECT agent.mcp_call('everything', 'echo', '{"message": "after"}', '$WS')->'content'->0->>'text';
SQL
)
is "$(echo $out)" "Echo: before Echo: after" "SQL: a call after the server restarted re-initializes and succeeds"
echo go >&7
exec 7>&-
wait $probe; rc=$?
is "$rc" 0 "probe: the call after the restart succeeds"
is "$(grep -c 'Echo: restart' "$MCP_TMP/out")" 2 "probe: both calls answered"
like "$(cat "$MCP_TMP/err")" "initializations 2" "probe: one new initialization after the restart"

q -c "DELETE FROM agent.mcp_servers WHERE workspace_id = '$WS'" >/dev/null
done_testing
