#!/usr/bin/env bash
# Two third-party Streamable HTTP server implementations from npm, beside the
# reference server of 702:
#   supergateway 4.0.0 (stateful, 2025-11-25 with sessions) in front of the
#     stdio server @modelcontextprotocol/server-memory
#   mcp-proxy 6.7.19 (which speaks 2026-07-28, stateless) in front of the stdio
#     server @modelcontextprotocol/server-filesystem
# The probe negotiates each one's generation by itself (server/discover, else
# initialize) and can be held to 2025-11-25 on the dual-era one; from SQL,
# each server's negotiated version is recorded in agent.mcp_servers, its tools
# are listed and called, structuredContent passes through; a second
# workspace does not see them, and neither a role with no grants nor the
# application role may call them.
. "$(dirname "$0")/../fixtures/mcp_tap.sh"
if ! err=$("$MCP_PEERS" install 2>&1); then skip_all "npm install failed: ${err//$'\n'/ }"; fi
[ -x "$MCP_PROBE" ] || skip_all "bin/pg_agents_mcp is not built (run make)"
mkdir -p "$MCP_TMP/root"
echo "hello from the filesystem" >"$MCP_TMP/root/note.txt"
mport=$("$MCP_PEERS" start-memory "$MCP_TMP") || skip_all "supergateway did not start: $mport"
fport=$("$MCP_PEERS" start-filesystem "$MCP_TMP" "$MCP_TMP/root") || skip_all "mcp-proxy did not start: $fport"
MEM="http://127.0.0.1:$mport/mcp"
FS="http://127.0.0.1:$fport/mcp"
WA=mcp_ws_704a
WB=mcp_ws_704b

# --- the probe ---------------------------------------------------------------
out=$("$MCP_PROBE" -v "$MEM" 2>"$MCP_TMP/err"); rc=$?
is "$rc" 0 "supergateway + server-memory: tools listed"
is "$(echo "$out" | pj 'd["protocolVersion"]')" "2025-11-25" "supergateway: 2025-11-25 negotiated (server/discover refused)"
like "$(cat "$MCP_TMP/err")" "session yes, initializations 1" "supergateway: a session, one initialization"
like " $(echo "$out" | pj '" ".join(t["name"] for t in d["tools"])') " " create_entities .* read_graph " "server-memory's tools listed"
out=$("$MCP_PROBE" -C '[{"call":"create_entities","arguments":{"entities":[{"name":"pg_agents","entityType":"extension","observations":["speaks MCP"]}]}},{"call":"read_graph"}]' "$MEM"); rc=$?
is "$rc" 0 "supergateway: two calls on one session"
is "$(echo "$out" | sed -n 2p | pj 'd["structuredContent"]["entities"][0]["observations"][0]')" "speaks MCP" \
   "supergateway: the entity written by the first call is read back, structuredContent passed through"

out=$("$MCP_PROBE" -v "$FS" 2>"$MCP_TMP/err"); rc=$?
is "$rc" 0 "mcp-proxy + server-filesystem: tools listed"
is "$(echo "$out" | pj 'd["protocolVersion"]')" "2026-07-28" "mcp-proxy: 2026-07-28 negotiated by server/discover"
like "$(cat "$MCP_TMP/err")" "session none, initializations 0" "mcp-proxy: stateless, no initialize"
like " $(echo "$out" | pj '" ".join(t["name"] for t in d["tools"])') " " read_text_file " "server-filesystem's tools listed"
out=$("$MCP_PROBE" -q "$FS" read_text_file "{\"path\":\"$MCP_TMP/root/note.txt\"}"); rc=$?
is "$rc" 0 "mcp-proxy: read_text_file exits 0"
is "$out" "hello from the filesystem" "mcp-proxy: the file read through the stateless call"
out=$("$MCP_PROBE" -v -P 2025-11-25 -q "$FS" read_text_file "{\"path\":\"$MCP_TMP/root/note.txt\"}" 2>"$MCP_TMP/err"); rc=$?
is "$out" "hello from the filesystem" "mcp-proxy held to 2025-11-25: the same call through initialize"
like "$(cat "$MCP_TMP/err")" "protocol 2025-11-25, session yes" "mcp-proxy held to 2025-11-25: a session"
"$MCP_PROBE" -q "$FS" read_text_file '{"path":"/etc/passwd"}' >"$MCP_TMP/out" 2>&1; rc=$?
is "$rc" 1 "mcp-proxy: a path outside the served root is the server's error result (exit 1)"

# --- SQL: two workspaces -----------------------------------------------------
q -c "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WA', '$WB')" >/dev/null
out=$(q -c "SELECT agent.mcp_add_server('memory', '$MEM', workspace_id => '$WA') > 0" \
        -c "SELECT agent.mcp_add_server('files', '$FS', workspace_id => '$WB') > 0" \
        -c "SELECT name || ':' || connected || ':' || protocol_version || ':' || (tool_count > 3) FROM agent.mcp_status WHERE workspace_id IN ('$WA', '$WB') ORDER BY name")
is "$(echo $out)" "t t files:true:2026-07-28:true memory:true:2025-11-25:true" \
   "each server refreshed with its own negotiated version recorded"
is "$(q -c "SELECT protocol_version FROM agent.mcp_servers WHERE workspace_id = '$WB' AND name = 'files'")" "2026-07-28" \
   "agent.mcp_servers.protocol_version holds the stateless version"
out=$(q -c "SELECT agent.mcp_call('files', 'read_text_file', '{\"path\": \"$MCP_TMP/root/note.txt\"}', '$WB')->'content'->0->>'text'")
is "$out" "hello from the filesystem" "mcp_call from SQL on the stateless server"
out=$(q -c "SELECT agent.mcp_call('memory', 'read_graph', '{}', '$WA')->'structuredContent'->'entities'->0->>'name'")
is "$out" "pg_agents" "mcp_call from SQL on the stateful one: the probe's entity is there, structuredContent kept"
out=$(q -c "SELECT agent.mcp_call('files', 'read_text_file', '{\"path\": \"$MCP_TMP/root/note.txt\"}', '$WA')")
like "$out" "does not exist" "workspace A cannot name workspace B's server"

# periodic refresh: an old tool list is listed again, a failing server is left alone
q -c "UPDATE agent.mcp_servers SET tools_refreshed_at = now() - interval '2 hours' WHERE workspace_id = '$WA' AND name = 'memory'" >/dev/null
q -c "SELECT agent.mcp_add_server('gone', 'http://127.0.0.1:9/mcp', workspace_id => '$WA')" >/dev/null
is "$(q -c "SELECT agent.mcp_refresh_due()")" 1 "agent.mcp_refresh_due refreshes the server listed two hours ago, not the failing one"
is "$(q -c "SELECT tools_refreshed_at > now() - interval '1 minute' FROM agent.mcp_servers WHERE workspace_id = '$WA' AND name = 'memory'")" t \
   "its tools were listed again"
is "$(q -c "SELECT agent.mcp_refresh_due()")" 0 "nothing else is due"
like "$(q -c "SELECT agent.mcp_refresh_due(interval '1 second')")" "at least one minute" "max_age below a minute is refused"

# --- roles -------------------------------------------------------------------
q -c "DROP ROLE IF EXISTS mcp704_nobody" -c "DROP ROLE IF EXISTS mcp704_app" >/dev/null
q -c "CREATE ROLE mcp704_nobody LOGIN" -c "CREATE ROLE mcp704_app LOGIN IN ROLE agents_app" >/dev/null
out=$(q -c "SET ROLE mcp704_nobody" -c "SET pg_agents.workspace = '$WA'" -c "SELECT agent.mcp_call('memory', 'read_graph', '{}', '$WA')")
like "$out" "permission denied" "a role with no grants cannot call an MCP tool"
out=$(q -c "SET ROLE mcp704_app" -c "SET pg_agents.workspace = '$WA'" -c "SELECT agent.mcp_call('memory', 'read_graph', '{}', '$WA')")
like "$out" "permission denied" "the application role cannot call MCP tools directly either"
out=$(q -c "SET ROLE mcp704_app" -c "SET pg_agents.workspace = '$WA'" -c "SELECT string_agg(name || ':' || protocol_version, ',') FROM agent.mcp_status")
like "$out" "memory:2025-11-25" "the application role sees its workspace's server and its version"
unlike "$out" "files" "and not the other workspace's"
q -c "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WA', '$WB')" -c "DROP ROLE mcp704_nobody" -c "DROP ROLE mcp704_app" >/dev/null
done_testing
