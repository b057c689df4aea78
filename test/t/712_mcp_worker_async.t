#!/usr/bin/env bash
# Asynchronous MCP calls in the worker (docs/mcp.md, "How the worker calls
# MCP servers"), end to end with the scripted LLM server and
# test/fixtures/mcp_server.py --async-tools, behind a bearer token:
#  1. a run waiting on a slow MCP call (a gate the test opens) does not hold
#     the worker: another run calling the same server starts and finishes
#     meanwhile, and the worker has no transaction open while the call is in
#     flight; once the gate opens the slow run gets its answer, recorded
#     like any call;
#  2. one session: the worker initializes the session server once, and
#     calls in flight together all use its Mcp-Session-Id;
#  3. a tool that never answers, and a server that never answers at all
#     (its session's initialize included): each call ends after
#     pg_agents.request_timeout with a clear error result, its run goes on,
#     and another run finishes while they wait;
#  4. notifications/tools/list_changed in a call's stream marks the
#     server's tools stale, and agent.mcp_refresh_due lists them again; a
#     2026-07-28 server's ttlMs makes its list due;
#  5. tenants and roles: the worker's prepare/finish functions are the
#     worker's only (a role with no grants, the application role, an agent
#     session), the headers stay unreadable, an agent of another workspace
#     is not offered the tools; a header from the secrets store
#     (${secret:NAME}) is resolved for the worker's call; no token in any
#     step or the server log.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d); chmod 755 "$tmp"
python3 "$src/test/fixtures/mcp_server.py" --async-tools --port-file "$tmp/py.port" >/dev/null 2>&1 & pypid=$!
python3 "$src/test/fixtures/mcp_stateless_server.py" --port-file "$tmp/sl.port" >/dev/null 2>&1 & slpid=$!
cleanup() {
    q "ALTER SYSTEM RESET pg_agents.request_timeout" >/dev/null 2>&1; q "SELECT pg_reload_conf()" >/dev/null 2>&1
    llm_stop; kill $pypid $slpid 2>/dev/null; rm -rf "$tmp"
}
trap cleanup EXIT
for _ in $(seq 1 100); do [ -s "$tmp/py.port" ] && [ -s "$tmp/sl.port" ] && break; sleep 0.05; done
PY="http://127.0.0.1:$(cat "$tmp/py.port")"
SL="http://127.0.0.1:$(cat "$tmp/sl.port")"
WS=mcp_ws_712
WB=mcp_ws_712b
OWNER=owner712
TOKEN=s3cr3t-token-value
qe() { psql -XAtq -v ON_ERROR_STOP=1 "$@" 2>&1; }
steps() { q "SELECT string_agg(kind || ':' || coalesce(name, '') || ':' || coalesce(status, ''), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $1"; }
tool_msgs() {  # the tool messages the model received in request N (0-based) of a key
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
n=int(sys.argv[2]); print(" | ".join(m["content"] for m in rs[n]["body"]["messages"] if m["role"]=="tool") if len(rs)>n else "no request %d" % n)' "$1" "$2"
}
offered() {  # MCP tool names offered in the first request of a key
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
print(",".join(sorted(t["function"]["name"] for t in rs[0]["body"].get("tools", []) if t["function"]["name"].startswith("mcp__"))) if rs else "none")' "$1"
}
srvlog() {  # python expression over the server's request log L
    curl -s "$PY/_control/log" | python3 -c "import json,sys; L=json.load(sys.stdin); print($1)"
}
wait_for() {  # wait_for SECONDS COMMAND...: until the command prints t
    local secs=$1 i; shift
    for i in $(seq 1 $((secs*20))); do [ "$("$@")" = t ] && return 0; sleep 0.05; done
    return 1
}
worker() { q "SELECT state || ':' || (xact_start IS NULL) FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'"; }

q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WS', '$WB')" >/dev/null
qe -c "DROP ROLE IF EXISTS mcp712_nobody" -c "DROP ROLE IF EXISTS mcp712_app" >/dev/null
qe -c "CREATE ROLE mcp712_nobody LOGIN" -c "CREATE ROLE mcp712_app LOGIN IN ROLE agents_app" >/dev/null
sid=$(q "SELECT agent.mcp_add_server('slow', '$PY/auth/mcp', '{\"Authorization\": \"Bearer $TOKEN\"}', workspace_id => '$WS')")
is "$(q "SELECT connected FROM agent.mcp_status WHERE server_id = $sid")" t "the slow server is connected"
a=$(mk_agent "mcp712a" '{"mcp_tools": ["mcp__slow__*", "mcp__silent__*", "mcp__vault__*"]}' none '[]' 10 "$WS" "$OWNER")

# 1. a call in flight holds nothing
llm_script "[[t712a]]" '[{"tool": "mcp__slow__gate", "input": {"name": "g1"}}, {"text": "gate passed"}]'
llm_script "[[t712f]]" '[{"tool": "mcp__slow__echo", "input": {"message": "meanwhile"}}, {"text": "fast"}]'
ra=$(start_run "$a" '{"prompt": "Wait at the gate [[t712a]]"}' autonomous "$OWNER")
waiting() { python3 -c 'import json,sys; print("t" if json.load(open(sys.argv[1])).get("g1", 0) >= 1 else "f")' "$tmp/w" 2>/dev/null || echo f; }
poll_gate() { curl -s -o "$tmp/w" "$PY/_control/waiting"; waiting; }
wait_for 60 poll_gate; ok $? "the slow call reached the server"
# while it waits: the worker is idle outside any transaction, never idle in one
idle=0; intx=0
for _ in $(seq 1 20); do
    st=$(worker)
    [ "$st" = "idle:true" ] && idle=$((idle+1)); samples="$samples $st"
    [[ "$st" == "idle in transaction"* ]] && intx=$((intx+1))
    sleep 0.05
done
[ "$idle" -gt 0 ] || diag "samples:$samples"
ok "$([ "$idle" -gt 0 ] && echo 0 || echo 1)" "the worker sits idle with no transaction open while the call is in flight ($idle of 20 samples)"
is "$intx" 0 "never idle in a transaction"
rf=$(start_run "$a" '{"prompt": "Quick one [[t712f]]"}' autonomous "$OWNER")
is "$(wait_status "$rf" "succeeded|failed" 60)" succeeded "another run calling the same server finishes meanwhile"
is "$(tool_msgs "[[t712f]]" 1)" '{"result":"echo: meanwhile"}' "with its answer"
is "$(q "SELECT status || ':' || (SELECT count(*) FROM agent.run_steps s WHERE s.run_id = r.id AND s.kind = 'tool') FROM agent.runs r WHERE r.id = $ra")" "running:0" \
   "the slow run is still waiting on its call"
curl -s -X POST -H 'Content-Type: application/json' -d '{"name": "g1"}' "$PY/_control/release" >/dev/null
is "$(wait_status "$ra" "succeeded|failed" 60)" succeeded "once the gate opens the slow run finishes"
is "$(tool_msgs "[[t712a]]" 1)" '{"result":"gate g1 opened"}' "its answer reaches the model"
is "$(steps "$ra")" "llm:default:ok,tool:mcp__slow__gate:ok,llm:default:ok" "steps: llm, the MCP tool, llm (as a synchronous call records them)"

# 2. one session, several calls in flight on it
for i in 1 2 3 4; do
    llm_script "[[t712s$i]]" '[{"tool": "mcp__slow__sleep", "input": {"ms": 300}}, {"text": "slept"}]'
done
rs=""
for i in 1 2 3 4; do rs="$rs $(start_run "$a" "{\"prompt\": \"Sleep [[t712s$i]]\"}" autonomous "$OWNER")"; done
n=0; for r in $rs; do [ "$(wait_status "$r" "succeeded|failed" 60)" = succeeded ] && n=$((n+1)); done
is "$n" 4 "four runs calling the slow tool at once all succeed"
is "$(srvlog 'len(set(e["session"] for e in L if e["rpc_method"] == "tools/call"))')" 1 "every call of the worker used one session"
is "$(srvlog 'sum(1 for e in L if e["rpc_method"] == "initialize" and e["status"] == 200)')" 2 \
   "initialized once by the worker (and once by the backend that added the server)"
is "$(srvlog 'sum(1 for e in L if e["rpc_method"] == "tools/call" and not e["authorization"])')" 0 "every call carried the bearer header"

# 3. a server that never answers
q "ALTER SYSTEM SET pg_agents.request_timeout = '5s'" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
llm_script "[[t712h]]" '[{"tool": "mcp__slow__hang", "input": {}}, {"text": "gave up"}]'
q "SELECT agent.mcp_add_server('silent', '$PY/mcp', workspace_id => '$WS')" >/dev/null
q "UPDATE agent.mcp_servers SET url = '$PY/silent/mcp' WHERE workspace_id = '$WS' AND name = 'silent'" >/dev/null
llm_script "[[t712q]]" '[{"tool": "mcp__silent__echo", "input": {"message": "anyone?"}}, {"text": "nobody"}]'
llm_script "[[t712o]]" '[{"tool": "mcp__slow__echo", "input": {"message": "other"}}, {"text": "other done"}]'
rh=$(start_run "$a" '{"prompt": "Hang [[t712h]]"}' autonomous "$OWNER")
rq=$(start_run "$a" '{"prompt": "Silent [[t712q]]"}' autonomous "$OWNER")
hanging() { [ "$(srvlog 'sum(1 for e in L if e["tool"] == "hang") + sum(1 for e in L if e["path"] == "/silent/mcp")')" -ge 2 ] && echo t || echo f; }
wait_for 60 hanging; ok $? "the calls reached the silent tool and the silent server"
ro=$(start_run "$a" '{"prompt": "Other [[t712o]]" }' autonomous "$OWNER")
is "$(wait_status "$ro" "succeeded|failed" 60)" succeeded "another run finishes while the silent server keeps its call"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id IN ($rh, $rq) AND kind = 'tool'")" 0 "the silent calls are still pending then"
is "$(wait_status "$rh" "succeeded|failed" 60)" succeeded "the run of the silent call goes on after the time-out"
is "$(tool_msgs "[[t712h]]" 1)" '{"error":"tools/call timed out after 5000 ms"}' "a clear error result reaches the model"
is "$(steps "$rh")" "llm:default:ok,tool:mcp__slow__hang:error,llm:default:ok" "the failed call is a tool step in error"
is "$(wait_status "$rq" "succeeded|failed" 60)" succeeded "the run calling the silent server goes on too"
is "$(tool_msgs "[[t712q]]" 1)" '{"error":"initialize timed out after 5000 ms"}' "its session's initialize timed out: a clear error result"
q "ALTER SYSTEM RESET pg_agents.request_timeout" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null

# 4. list_changed and ttlMs
t0=$(q "SELECT now()")
llm_script "[[t712l]]" '[{"tool": "mcp__slow__changed", "input": {}}, {"text": "noted"}]'
rl=$(start_run "$a" '{"prompt": "Change [[t712l]]" }' autonomous "$OWNER")
is "$(wait_status "$rl" "succeeded|failed" 60)" succeeded "a call whose stream says the tool list changed succeeds"
is "$(tool_msgs "[[t712l]]" 1)" '{"result":"list changed"}' "with its answer"
# (the worker's own refresh pass may have listed them again already)
is "$(q "SELECT tools_stale OR tools_refreshed_at > '$t0' FROM agent.mcp_servers WHERE id = $sid")" t \
   "notifications/tools/list_changed marked the server's tools stale"
q "SELECT agent.mcp_refresh_due()" >/dev/null
is "$(q "SELECT NOT tools_stale AND tools_refreshed_at > '$t0' FROM agent.mcp_servers WHERE id = $sid")" t \
   "agent.mcp_refresh_due listed them again"
did=$(q "SELECT agent.mcp_add_server('desk', '$SL/mcp', workspace_id => '$WS')")
is "$(q "SELECT protocol_version || ':' || tools_ttl_ms FROM agent.mcp_servers WHERE id = $did")" "2026-07-28:60000" \
   "a 2026-07-28 server's ttlMs is recorded with its list"
q "UPDATE agent.mcp_servers SET tools_refreshed_at = now() - interval '10 minutes' WHERE id IN ($did, $sid)" >/dev/null
q "SELECT agent.mcp_refresh_due()" >/dev/null
is "$(q "SELECT string_agg(name || ':' || (tools_refreshed_at > now() - interval '1 minute'), ',' ORDER BY name) FROM agent.mcp_servers WHERE id IN ($did, $sid)")" \
   "desk:true,slow:false" "past its ttlMs (five minutes at least) a list is due; a list without ttlMs waits for max_age"

# 5. tenants, roles, secrets
for role in mcp712_nobody mcp712_app; do
    out=$(qe -c "SET ROLE $role" -c "SELECT agent._mcp_worker_prepare($ra, 'mcp__slow__echo', '{}', $sid, 'echo', '{}')")
    [[ "$out" == *"permission denied"* ]]; ok $? "$role cannot prepare a worker call (and read the headers it returns)"
    out=$(qe -c "SET ROLE $role" -c "SELECT agent._mcp_worker_finish($ra, 'mcp__slow__echo', '{}', $sid, 'slow', 'echo', '{\"ok\": true}', true)")
    [[ "$out" == *"permission denied"* ]]; ok $? "$role cannot record a worker call's answer"
done
out=$(qe -c "SET ROLE mcp712_app" -c "SET pg_agents.workspace = '$WS'" -c "SET pg_agents.actor = 'agent:$a'" \
         -c "SELECT headers FROM agent.mcp_servers WHERE id = $sid")
[[ "$out" == *"permission denied"* ]]; ok $? "an agent session cannot read the server's headers"
b=$(mk_agent "mcp712b" '{"mcp_tools": ["mcp__slow__*"]}' none '[]' 10 "$WB" "$OWNER")
llm_script "[[t712b]]" '[{"tool": "mcp__slow__echo", "input": {"message": "cross"}}, {"text": "tried"}]'
rb=$(start_run "$b" '{"prompt": "Cross [[t712b]]"}' autonomous "$OWNER")
is "$(wait_status "$rb" "succeeded|failed" 60)" succeeded "a run of another workspace ends"
is "$(offered "[[t712b]]")" "" "it is not offered the other workspace's server"
is "$(tool_msgs "[[t712b]]" 1)" '{"error":"unknown tool \"mcp__slow__echo\""}' "and a call of it is refused"
is "$(srvlog 'sum(1 for e in L if e["tool"] == "echo" and e["rpc_method"] == "tools/call")')" 2 "the server never saw that call"
# (through a file the server reads: the value is in no statement text)
printf '%s' "$TOKEN" > "$tmp/k712"; chmod 644 "$tmp/k712"
qe -c "SELECT agent.set_secret('k712_mcp', pg_catalog.pg_read_file('$tmp/k712'))" | grep -v '^$' | sed 's/^/# set_secret: /'
rm -f "$tmp/k712"
q "SELECT agent.mcp_add_server('vault', '$PY/auth/mcp', '{\"Authorization\": \"Bearer \${secret:k712_mcp}\"}', workspace_id => '$WS')" >/dev/null
llm_script "[[t712v]]" '[{"tool": "mcp__vault__echo", "input": {"message": "from the vault"}}, {"text": "ok"}]'
rv=$(start_run "$a" '{"prompt": "Vault [[t712v]]"}' autonomous "$OWNER")
is "$(wait_status "$rv" "succeeded|failed" 60)" succeeded "a run calls a server whose bearer header is \${secret:k712_mcp}"
is "$(tool_msgs "[[t712v]]" 1)" '{"result":"echo: from the vault"}' "the worker resolved the secret for its call"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE (input::text || coalesce(output::text, '')) ~ 's3cr3t|Bearer'")" 0 \
   "no token in any step (the time-out's included)"
is "$(grep -c "$TOKEN" "$PG_AGENTS_DIR/server.log")" 0 "nor in the server log"

q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WS', '$WB')" >/dev/null
qe -c "DROP ROLE IF EXISTS mcp712_nobody" -c "DROP ROLE IF EXISTS mcp712_app" >/dev/null
q "SELECT agent.drop_secret('k712_mcp')" >/dev/null
done_testing
