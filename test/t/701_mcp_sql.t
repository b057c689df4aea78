#!/usr/bin/env bash
# The SQL side of the MCP client against our own Python MCP server:
# mcp_add_server / mcp_refresh / mcp_status / mcp_call / mcp_agent_tools /
# mcp_agent_call, broken servers next to good ones, secrets, lost sessions.
. "$(dirname "$0")/../fixtures/mcp_tap.sh"
start_py_server 0 --tools 25 --page-size 10
WS=mcp_ws_701
q -c "DELETE FROM agent.mcp_servers WHERE workspace_id = '$WS'; DELETE FROM agent.agents WHERE workspace_id = '$WS';" >/dev/null
T0=$(q -c "SELECT clock_timestamp()")
free_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')

# a good server, broken ones next to it, one behind a bearer token
out=$(q <<SQL
SET pg_agents.workspace = '$WS';
SELECT agent.mcp_add_server('good', '$PY/mcp', description => 'our test server') > 0;
SELECT agent.mcp_add_server('garbage', '$PY/garbage') > 0;
SELECT agent.mcp_add_server('refused', 'http://127.0.0.1:$free_port/mcp') > 0;
SELECT agent.mcp_add_server('badauth', '$PY/auth/mcp', '{"Authorization": "Bearer wrong-token-0001"}') > 0;
SELECT agent.mcp_add_server('auth', '$PY/auth/mcp', '{"Authorization": "Bearer s3cr3t-token-value"}') > 0;
SQL
)
is "$out" "$(printf 't\nt\nt\nt\nt')" "five servers added (each refreshed at once), broken ones too"

out=$(q -c "SET pg_agents.workspace = '$WS'" -c "SELECT name, connected, tool_count, last_error IS NULL FROM agent.mcp_status WHERE workspace_id = '$WS' ORDER BY name")
is "$out" "$(printf 'auth|t|25|t\nbadauth|f|0|f\ngarbage|f|0|f\ngood|t|25|t\nrefused|f|0|f')" \
   "mcp_status: good servers connected with all tools (pagination), broken ones skipped with an error"
out=$(q -c "SELECT last_error FROM agent.mcp_servers WHERE workspace_id = '$WS' AND name = 'garbage'")
like "$out" "did not answer JSON-RPC" "garbage: clear error"
out=$(q -c "SELECT last_error FROM agent.mcp_servers WHERE workspace_id = '$WS' AND name = 'refused'")
like "$out" "(server/discover|initialize) failed: .*(connect|Connection)" "refused: clear error"
out=$(q -c "SELECT last_error FROM agent.mcp_servers WHERE workspace_id = '$WS' AND name = 'badauth'")
like "$out" "refused the credentials \\(HTTP 401\\)" "401: clear error"
unlike "$out" "wrong-token-0001" "401: the token echoed by the server is masked"

st=$(q -c "SELECT agent.mcp_status('$WS')")
is "$(echo "$st" | pj 'd["configuredServers"]')" '["auth", "badauth", "garbage", "good", "refused"]' "mcp_status(): configuredServers"
is "$(echo "$st" | pj 'd["connectedServers"]')" '["auth", "good"]' "mcp_status(): connectedServers"
is "$(echo "$st" | pj 'd["totalTools"]')" 50 "mcp_status(): totalTools"
is "$(echo "$st" | pj 'sorted(d["errors"].keys())')" '["badauth", "garbage", "refused"]' "mcp_status(): errors per server"
is "$(echo "$st" | pj '[t for t in d["tools"] if t["name"]=="mcp__good__echo"][0]')" \
   '{"name": "mcp__good__echo", "source": "good", "description": "Echoes the message back."}' "mcp_status(): tools as mcp__<server>__<tool>"

# refresh of everything: broken servers do not stop the others
out=$(q -c "SELECT name || ':' || connected FROM agent.mcp_refresh(workspace_id => '$WS') ORDER BY name")
is "$(echo $out)" "auth:true badauth:false garbage:false good:true refused:false" "mcp_refresh(): one row per server, broken ones skipped"

# calls
out=$(q -c "SET pg_agents.workspace = '$WS'" -c "SELECT agent.mcp_call('good', 'echo', '{\"message\": \"from sql\"}')->'content'->0->>'text'")
is "$out" "echo: from sql" "mcp_call echo"
out=$(q -c "SELECT agent.mcp_call('auth', 'add', '{\"a\": 1, \"b\": 2}', '$WS')->'structuredContent'")
is "$out" '{"sum": 3}' "mcp_call through a server with a bearer header"
out=$(q -c "SELECT agent.mcp_call('good', 'sse_echo', '{\"message\": \"s\"}', '$WS')->'content'->0->>'text'")
is "$out" "sse: s" "mcp_call with an SSE answer"
out=$(q -c "SELECT agent.mcp_call('good', 'fail', '{}', '$WS')")
is "$(echo "$out" | pj 'd["isError"]')" true "isError result returned as a result"
out=$(q -c "SELECT agent.mcp_call('good', 'boom', '{}', '$WS')")
is "$(echo "$out" | pj '[d["isError"], d["error"]["code"]]')" '[true, -32603]' "JSON-RPC error becomes a failed result"
out=$(psql -XAtq -c "SELECT agent.mcp_call('refused', 'echo', '{}', '$WS')" 2>&1)
like "$out" "ERROR:  could not call MCP tool \"echo\" on server \"refused\"" "unreachable server: clear error"
out=$(psql -XAtq -c "\\set VERBOSITY verbose" -c "SELECT agent.mcp_call('refused', 'echo', '{}', '$WS')" 2>&1)
like "$out" "ERROR:  08006" "unreachable server: SQLSTATE 08006 (connection_failure)"
out=$(psql -XAtq -c "SELECT agent.mcp_call('nosuch', 'echo', '{}', '$WS')" 2>&1)
like "$out" "MCP server \"nosuch\" does not exist" "unknown server"

# lost sessions in one backend (the session is kept per server and process)
out=$(psql -XAtq -v ON_ERROR_STOP=1 2>&1 <<SQL
SELECT agent.mcp_call('good', 'echo', '{"message": "one"}', '$WS')->'content'->0->>'text';
\! curl -s -X POST $PY/_control/drop_sessions >/dev/null
SELECT agent.mcp_call('good', 'echo', '{"message": "two"}', '$WS')->'content'->0->>'text';
SQL
)
is "$(echo $out)" "echo: one echo: two" "a session lost between two calls of one backend is re-initialized"
py_reset
q -c "SELECT agent.mcp_call('good', 'echo', '{\"message\": \"a\"}', '$WS'), agent.mcp_call('good', 'echo', '{\"message\": \"b\"}', '$WS')" >/dev/null
is "$(py_log | pj 'sum(1 for e in d if e["rpc_method"]=="initialize")')" 1 "two calls in one backend share one session"
is "$(py_log | pj '[e["method"] for e in d][-1]')" DELETE "the session is closed (DELETE) when the backend exits"

# query cancel interrupts a slow call; the backend survives
out=$(psql -XAtq 2>&1 <<SQL
SELECT agent.mcp_add_server('slow', '$PY/slow/mcp', workspace_id => '$WS', refresh => false) > 0;
SET statement_timeout = '500ms';
SELECT agent.mcp_call('slow', 'echo', '{}', '$WS');
RESET statement_timeout;
SELECT 'alive';
SQL
)
like "$out" "canceling statement due to statement timeout" "a slow call is interrupted by statement_timeout"
like "$out" "alive" "the backend goes on after the interrupted call"

# secrets: headers readable by superusers only, never logged
q -c "DROP ROLE IF EXISTS mcp_701_app; CREATE ROLE mcp_701_app LOGIN IN ROLE agents_app" >/dev/null
out=$(psql -XAtq -U mcp_701_app -c "SELECT headers FROM agent.mcp_servers" 2>&1)
like "$out" "permission denied for table mcp_servers" "a non-superuser cannot read headers"
out=$(psql -XAtq -U mcp_701_app -c "SELECT * FROM agent.mcp_servers" 2>&1)
like "$out" "permission denied" "nor the table"
out=$(psql -XAtq -U mcp_701_app -c "SET pg_agents.workspace = '$WS'" -c "SELECT count(*) FROM agent.mcp_status" 2>&1)
is "$out" 6 "a non-superuser reads agent.mcp_status of its workspace"
out=$(psql -XAtq -U mcp_701_app -c "SET pg_agents.workspace = '$WS'" -c "SELECT row_to_json(s) FROM agent.mcp_status s" -c "SELECT agent.mcp_status()" 2>&1)
unlike "$out" "s3cr3t|wrong-token|Bearer|headers" "agent.mcp_status (view and function) show no header"
out=$(psql -XAtq -U mcp_701_app -c "SELECT agent.mcp_add_server('x', 'https://example.com/mcp', workspace_id => '$WS')" 2>&1)
like "$out" "permission denied for function mcp_add_server" "a non-superuser cannot add servers"
out=$(psql -XAtq -U mcp_701_app -c "SELECT agent.mcp_call(1, 'echo')" 2>&1)
like "$out" "permission denied for function mcp_call" "nor call tools directly"
out=$(q -c "SELECT count(*) FROM agent.audit_log WHERE action LIKE 'mcp.%' AND workspace_id = '$WS' AND at >= '$T0'")
is "$out" 6 "adding servers is audited"
out=$(q -c "SELECT coalesce(string_agg(inputs::text || summary, ' '), '') FROM agent.audit_log WHERE workspace_id = '$WS'")
unlike "$out" "s3cr3t|wrong-token-0001" "audit rows carry no header value"
like "$out" "Authorization" "audit rows carry header names only"
out=$(q -c "SELECT coalesce(string_agg(last_error, ' '), '') FROM agent.mcp_servers WHERE workspace_id = '$WS'")
unlike "$out" "s3cr3t|wrong-token-0001" "no header value in last_error"

# URL policy
out=$(psql -XAtq -c "\\set VERBOSITY verbose" -c "SELECT agent.mcp_add_server('ext', 'http://example.com/mcp', workspace_id => '$WS')" 2>&1)
like "$out" "22023: URL of MCP server \"ext\" is not allowed" "http:// to a non-loopback host refused (22023)"
like "$out" "only for loopback hosts" "with the reason"
out=$(psql -XAtq -c "INSERT INTO agent.mcp_servers (workspace_id, name, url) VALUES ('$WS', 'direct', 'http://192.168.1.1/mcp')" 2>&1)
like "$out" "URL of MCP server \"direct\" is not allowed" "a direct INSERT is checked too"
out=$(psql -XAtq -c "UPDATE agent.mcp_servers SET url = 'http://example.com/' WHERE workspace_id = '$WS' AND name = 'good'" 2>&1)
like "$out" "is not allowed" "and an UPDATE"

# tools change on the server: refresh replaces them, approvals kept
q -c "SELECT agent.mcp_set_tool_approval(agent._mcp_server_id('good', '$WS'), 'echo')" >/dev/null
stop_py_server
start_py_server "$PY_PORT" --tools 7 --page-size 3
out=$(q -c "SELECT name || ':' || connected || ':' || tool_count FROM agent.mcp_refresh('good', '$WS')")
is "$out" "good:true:7" "refresh after the server changed: 7 tools"
out=$(q -c "SELECT string_agg(t.name || '=' || t.needs_approval, ',' ORDER BY t.name) FROM agent.mcp_tools t JOIN agent.mcp_servers s ON s.id = t.server_id WHERE s.workspace_id = '$WS' AND s.scope = 'workspace' AND s.name = 'good' AND t.name IN ('echo', 'add', 'tool_010')")
is "$out" "add=false,echo=true" "tools gone from the server are removed, needs_approval kept"

# what an agent may use
out=$(q <<SQL
INSERT INTO agent.agents (workspace_id, owner_id, name, scope) VALUES
  ('$WS', 'u1', 'none', '{}'),
  ('$WS', 'u1', 'servers', '{"mcp_servers": ["good"]}'),
  ('$WS', 'u1', 'patterns', '{"mcp_tools": ["mcp__good__echo", "mcp__auth__a*"], "needs_approval": ["mcp__auth__*"]}'),
  ('$WS', 'u1', 'all', '{"mcp_servers": ["*"]}'),
  ('$WS', 'u2', 'all2', '{"mcp_servers": ["*"]}');
SELECT agent.mcp_add_server('mine', '$PY/mcp', scope => 'user', owner_id => 'u1', workspace_id => '$WS') > 0;
SELECT agent.mcp_add_server('good', '$PY/mcp', scope => 'user', owner_id => 'u1', workspace_id => '$WS') > 0;
SQL
)
is "$out" "$(printf 't\nt')" "personal servers added for u1 (one named like a workspace server)"
agent() { q -c "SELECT id FROM agent.agents WHERE workspace_id = '$WS' AND name = '$1'"; }
out=$(q -c "SELECT count(*) FROM agent.mcp_agent_tools($(agent none))")
is "$out" 0 "no MCP tool without mcp_servers/mcp_tools in the scope"
out=$(q -c "SELECT count(*) FROM agent.mcp_agent_tools($(agent servers))")
is "$out" 14 "scope.mcp_servers: every tool of the servers of that name it can see (workspace and personal)"
out=$(q -c "SELECT string_agg(exposed_name || ':' || needs_approval, ',' ORDER BY exposed_name) FROM agent.mcp_agent_tools($(agent patterns))")
is "$out" "mcp__auth__add:true,mcp__good__echo:true" "scope.mcp_tools patterns; scope.needs_approval patterns and the tool flag"
out=$(q -c "SELECT count(*), count(DISTINCT exposed_name), count(*) FILTER (WHERE server = 'mine') FROM agent.mcp_agent_tools($(agent all))")
is "$out" "46|46|7" "owner u1 sees workspace servers and its personal ones, exposed names distinct"
out=$(q -c "SELECT count(*) FILTER (WHERE exposed_name ~ '^mcp__good__echo_[0-9a-f]{8}\$') FROM agent.mcp_agent_tools($(agent all))")
is "$out" 1 "the colliding personal tool got a hash-suffixed exposed name"
out=$(q -c "SELECT count(*) FROM agent.mcp_agent_tools($(agent all2))")
is "$out" 32 "another owner does not see u1's personal servers"
q -c "SELECT agent.mcp_set_enabled(agent._mcp_server_id('auth', '$WS'), false)" >/dev/null
out=$(q -c "SELECT count(*) FROM agent.mcp_agent_tools($(agent all2))")
is "$out" 7 "a disabled server is not offered"
q -c "SELECT agent.mcp_set_enabled(agent._mcp_server_id('auth', '$WS'), true)" >/dev/null

out=$(q -c "SELECT agent.mcp_agent_call($(agent patterns), 'mcp__good__echo', '{\"message\": \"agent\"}')")
is "$(echo "$out" | pj '[d["ok"], d["server"], d["tool"], d["result"]["content"][0]["text"]]')" '[true, "good", "echo", "echo: agent"]' \
   "mcp_agent_call maps the exposed name back to server and tool"
out=$(q -c "SELECT agent.mcp_agent_call($(agent patterns), 'mcp__good__add', '{}')")
is "$(echo "$out" | pj '[d["ok"], d["denied"], d["result"]["isError"]]')" '[false, true, true]' "a tool outside the agent's scope is refused as a failed result"
out=$(q -c "SELECT agent.mcp_agent_call($(agent all), 'mcp__good__fail', '{}')")
is "$(echo "$out" | pj '[d["ok"], d["result"]["isError"]]')" '[false, true]' "isError is a failed result"
out=$(q -c "SELECT agent.mcp_agent_call($(agent all), 'mcp__refused__x', '{}')")
is "$(echo "$out" | pj 'd["ok"]')" false "a tool of an unreachable server is a failed result, not an exception"
long=$(q -c "SELECT agent._mcp_exposed_name(agent._mcp_server_id('good', '$WS'), repeat('very-long.tool name ', 5))")
like "$long ${#long}" '^mcp__good__very-long_tool_name_very-long_tool_name_[A-Za-z0-9_-]*_[0-9a-f]{8} 64$' "overlong names are cut and hash-suffixed into ^[a-zA-Z0-9_-]{1,64}\$"

# removal is immediate
out=$(q -c "SELECT agent.mcp_remove_server('mine', '$WS', 'u1')" -c "SELECT count(*) FILTER (WHERE server = 'mine') FROM agent.mcp_agent_tools($(agent all))")
is "$(echo $out)" "t 0" "a removed server's tools disappear"

q -c "DELETE FROM agent.mcp_servers WHERE workspace_id = '$WS'; DELETE FROM agent.agents WHERE workspace_id = '$WS'; DROP ROLE mcp_701_app;" >/dev/null
done_testing
