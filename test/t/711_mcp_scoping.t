#!/usr/bin/env bash
# Attack (issues 14 #6, 15 part 3): MCP across users and workspaces.
# A personal (user scope) MCP server serves only runs of its user: the
# requester of a manual run, the agent's owner for an autonomous one; the
# agent owner's personal server is not offered (nor callable) in a run
# another user requested.  agent.mcp_status (view and function) shows only
# the session's workspace.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/mcp_server.py" --port-file "$tmp/py.port" >/dev/null 2>&1 & pypid=$!
cleanup() {
    llm_stop; kill $pypid 2>/dev/null; rm -rf "$tmp"
    q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('w711a', 'w711b')" >/dev/null
    q "DROP ROLE IF EXISTS w711_app; DROP ROLE IF EXISTS w711_nobody" >/dev/null
}
trap cleanup EXIT
for _ in $(seq 1 100); do [ -s "$tmp/py.port" ] && break; sleep 0.05; done
PY="http://127.0.0.1:$(cat "$tmp/py.port")/mcp"
offered() {  # MCP tool names offered in the first request of a key
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
print(",".join(sorted(t["function"]["name"] for t in rs[0]["body"].get("tools", []) if t["function"]["name"].startswith("mcp__") and t["function"]["name"].endswith("__echo"))) if rs else "none")' "$1"
}
tool_msg() {  # the first tool result the model received for a key
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
print([m["content"] for m in rs[1]["body"]["messages"] if m["role"]=="tool"][0] if len(rs) > 1 else "no second request")' "$1"
}
q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('w711a', 'w711b');
   DROP ROLE IF EXISTS w711_app; DROP ROLE IF EXISTS w711_nobody;
   CREATE ROLE w711_app LOGIN IN ROLE agents_app; CREATE ROLE w711_nobody LOGIN" >/dev/null
q "SELECT agent.mcp_add_server('team', '$PY', workspace_id => 'w711a');
   SELECT agent.mcp_add_server('alice_own', '$PY', scope => 'user', owner_id => 'alice711', workspace_id => 'w711a');
   SELECT agent.mcp_add_server('bob_own', '$PY', scope => 'user', owner_id => 'bob711', workspace_id => 'w711a');
   SELECT agent.mcp_add_server('elsewhere', '$PY', workspace_id => 'w711b');" >/dev/null
is "$(q "SELECT string_agg(name || ':' || connected, ',' ORDER BY name) FROM agent.mcp_status")" \
   "alice_own:true,bob_own:true,elsewhere:true,team:true" "(a superuser session without a workspace sees every server)"

# alice's agent, every server in scope, shared with bob (interact: bob may chat with it)
a=$(mk_agent "mcp711" '{"mcp_servers": ["*"]}' none '[]' 10 w711a alice711)
q "INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by) VALUES ('w711a', $a, 'bob711', 'interact', 'alice711')" >/dev/null

# 1. bob's manual run: the workspace server and bob's own, never alice's
llm_script "[[t711b]]" '[{"tool": "mcp__alice_own__echo", "input": {"message": "steal"}}, {"text": "done"}]'
r=$(start_run "$a" '{"prompt": "as bob [[t711b]]"}' manual bob711)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "bob's manual run ends"
is "$(offered "[[t711b]]")" "mcp__bob_own__echo,mcp__team__echo" "bob's run is offered the workspace server and bob's own"
is "$(tool_msg "[[t711b]]")" '{"error":"unknown tool \"mcp__alice_own__echo\""}' "calling alice's personal tool anyway: unknown tool"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND name = 'mcp__alice_own__echo' AND status = 'ok'")" 0 "it never ran"

# 2. alice's manual run: alice's own
llm_script "[[t711a]]" '[{"tool": "mcp__alice_own__echo", "input": {"message": "mine"}}, {"text": "done"}]'
r=$(start_run "$a" '{"prompt": "as alice [[t711a]]"}' manual alice711)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "alice's manual run ends"
is "$(offered "[[t711a]]")" "mcp__alice_own__echo,mcp__team__echo" "alice's run is offered alice's own"
is "$(tool_msg "[[t711a]]")" '{"result":"echo: mine"}' "and may call it"

# 3. an autonomous run: the owner's personal servers only
llm_script "[[t711c]]" '[{"tool": "mcp__bob_own__echo", "input": {"message": "x"}}, {"text": "done"}]'
r=$(start_run "$a" '{"prompt": "on its own [[t711c]]"}' autonomous alice711)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the autonomous run ends"
is "$(offered "[[t711c]]")" "mcp__alice_own__echo,mcp__team__echo" "an autonomous run gets the owner's personal servers only"
is "$(tool_msg "[[t711c]]")" '{"error":"unknown tool \"mcp__bob_own__echo\""}' "bob's server is not callable in it"
is "$(q "SELECT count(*) FROM agent.mcp_agent_tools($a, 'bob711') WHERE server = 'alice_own'")" 0 \
   "agent.mcp_agent_tools(agent, user): no other user's personal server"

# 4. mcp_status: the session's workspace only
app() { psql -XAtq -U w711_app -c "SET pg_agents.workspace = '$1'" -c "$2" 2>&1; }
is "$(app w711b "SELECT string_agg(name, ',' ORDER BY name) FROM agent.mcp_status")" "elsewhere" \
   "workspace B's session sees only its own servers in the view"
is "$(app w711b "SELECT count(*) FROM agent.mcp_status WHERE workspace_id = 'w711a'")" 0 "not one of workspace A's"
is "$(app w711b "SELECT agent.mcp_status('w711a') - 'tools'")" \
   '{"errors": {}, "totalTools": 0, "connectedServers": [], "configuredServers": []}' \
   "agent.mcp_status('w711a') from workspace B: as if A had no server"
is "$(app w711a "SELECT agent.mcp_status('w711a')->'configuredServers'")" '["team"]' "workspace A's own session sees its workspace server"
is "$(app w711a "SELECT agent.mcp_status('w711a', 'bob711')->'configuredServers'")" '["bob_own", "team"]' \
   "and a user's personal servers when the application names the user"
out=$(psql -XAtq -U w711_app -c "SELECT agent.mcp_status('w711a')" 2>&1)
ok "$([[ "$out" == *"pg_agents.workspace is not set"* ]] && echo 0)" "a session without a workspace is refused"
out=$(psql -XAtq -U w711_nobody -c "SET pg_agents.workspace = 'w711a'" -c "SELECT agent.mcp_status('w711a')" -c "SELECT count(*) FROM agent.mcp_status" 2>&1)
is "$(echo "$out" | grep -c "permission denied")" 2 "a role with no grants reads neither the function nor the view"

# 5. the catalogue's admin functions name servers inside the session's workspace only (a superuser session bound to B)
team=$(q "SELECT id FROM agent.mcp_servers WHERE workspace_id = 'w711a' AND name = 'team'")
inb() { psql -XAtq -c "SET pg_agents.workspace = 'w711b'" -c "$1" 2>&1; }
contains "$(inb "SELECT agent.mcp_call('team', 'echo', '{\"message\": \"x\"}', workspace_id => 'w711a')")" \
     'MCP server "team" does not exist' "from workspace B, A's server by name does not exist"
contains "$(inb "SELECT agent.mcp_call($team, 'echo', '{\"message\": \"x\"}')")" "MCP server $team does not exist" "nor by id"
is "$(inb "SELECT agent.mcp_remove_server($team)")" "f" "removing it from B: no such server"
contains "$(inb "SELECT agent.mcp_set_enabled($team, false)")" "does not exist" "disabling it from B: no such server"
contains "$(inb "SELECT agent.mcp_add_server('planted', '$PY', workspace_id => 'w711a')")" "is not the session's workspace" \
     "adding a server to A from B is refused"
is "$(inb "SELECT string_agg(name, ',' ORDER BY name) FROM agent.mcp_refresh(workspace_id => NULL)")" "elsewhere" \
   "refreshing every server from B refreshes B's only"
is "$(q "SELECT count(*) FROM agent.mcp_servers WHERE workspace_id = 'w711a' AND enabled")" 3 "A's servers are untouched"
done_testing
