#!/usr/bin/env bash
# Elicitation from a 2025-11-25 (stateful) server in the middle of a
# worker's call (docs/mcp.md, "Elicitation"), end to end with the scripted
# LLM and test/fixtures/mcp_server.py --elicit-tools, whose tool "ask" sends
# elicitation/create in the call's SSE stream and waits for the client's
# answer on the session:
#  1. accept: the question waits for people like an approval (shown in
#     agent.mcp_pending_input, an approval step) while the stream stays open
#     and the run stays running; another run finishes meanwhile; other
#     workspaces, a role with no grants and a user who may not approve
#     cannot answer; the owner's answer reaches the server on the same
#     session, the form's default filled in (SEP-1034), and the tool's
#     result reaches the model;
#  2. decline: the server gets "decline";
#  3. expiry: unanswered within pg_agents.mcp_elicitation_wait, the server
#     gets "cancel", the question is recorded as expired and the run goes
#     on with the server's result;
#  4. with pg_agents.mcp_elicitation_wait = 0 the worker does not declare
#     elicitation to such servers, which then do not ask;
#  5. the periodic refresh of tool lists runs in a process of its own: while
#     it waits on a server that never answers, runs go on.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/mcp_server.py" --async-tools --elicit-tools --port-file "$tmp/py.port" >/dev/null 2>&1 & pypid=$!
cleanup() {
    q "ALTER SYSTEM RESET pg_agents.mcp_elicitation_wait" >/dev/null 2>&1; q "SELECT pg_reload_conf()" >/dev/null 2>&1
    llm_stop; kill $pypid 2>/dev/null; rm -rf "$tmp"
}
trap cleanup EXIT
for _ in $(seq 1 100); do [ -s "$tmp/py.port" ] && break; sleep 0.05; done
PY="http://127.0.0.1:$(cat "$tmp/py.port")"
WS=mcp_ws_713
WB=mcp_ws_713b
OWNER=owner713
qe() { psql -XAtq -v ON_ERROR_STOP=1 "$@" 2>&1; }
app() { qe -c "SET ROLE mcp713_app" -c "SET pg_agents.workspace = '$1'" -c "$2"; }
like_no() { [[ "$1" =~ $2 ]] && echo 0 || echo 1; }
tool_msgs() {  # the tool messages the model received in request N (0-based) of a key
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
n=int(sys.argv[2]); print(" | ".join(m["content"] for m in rs[n]["body"]["messages"] if m["role"]=="tool") if len(rs)>n else "no request %d" % n)' "$1" "$2"
}
wait_for() {  # wait_for SECONDS COMMAND...: until the command prints t
    local secs=$1 i; shift
    for i in $(seq 1 $((secs*20))); do [ "$("$@")" = t ] && return 0; sleep 0.05; done
    return 1
}
pending() { q "SELECT count(*) > 0 FROM agent.mcp_pending_input WHERE run_id = $1"; }
setconf() { q "ALTER SYSTEM SET $1 = '$2'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5; }

q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WS', '$WB')" >/dev/null
qe -c "DROP ROLE IF EXISTS mcp713_nobody" -c "DROP ROLE IF EXISTS mcp713_app" >/dev/null
qe -c "CREATE ROLE mcp713_nobody LOGIN" -c "CREATE ROLE mcp713_app LOGIN IN ROLE agents_app" >/dev/null
sid=$(q "SELECT agent.mcp_add_server('desk', '$PY/mcp', workspace_id => '$WS')")
is "$(q "SELECT protocol_version FROM agent.mcp_servers WHERE id = $sid")" "2025-11-25" "the server speaks the stateful protocol"
a=$(mk_agent "mcp713a" '{"mcp_tools": ["mcp__desk__*"]}' none '[]' 10 "$WS" "$OWNER")

# 1. accept
llm_script "[[t713a]]" '[{"tool": "mcp__desk__ask", "input": {"topic": "invoice"}}, {"text": "asked"}]'
llm_script "[[t713f]]" '[{"tool": "mcp__desk__echo", "input": {"message": "meanwhile"}}, {"text": "fast"}]'
r=$(start_run "$a" '{"prompt": "Ask [[t713a]]"}' autonomous "$OWNER")
wait_for 60 pending "$r"; ok $? "the server's question in the stream is waiting for people"
is "$(q "SELECT status FROM agent.runs WHERE id = $r")" running "the run stays running, its stream open"
out=$(app "$WS" "SELECT approval_key || '|' || message || '|' || (requested_schema->'properties'->'colour'->>'default') FROM agent.mcp_pending_input WHERE run_id = $r")
key=${out%%|*}
is "${out#*|}" "Whose name goes on the invoice?|blue" "the application sees the question and its form"
is "$(q "SELECT kind || ':' || status || ':' || (output->>'elicitation') FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")" \
   "approval:pending:pending" "an approval step records that the run waits for a person"
is "$(q "SELECT count(*) FROM agent.approvals WHERE run_id = $r AND approval_key = '$key' AND status = 'pending'")" 1 \
   "the question is a pending approval, with its expiry"
f=$(start_run "$a" '{"prompt": "Meanwhile [[t713f]]"}' autonomous "$OWNER")
is "$(wait_status "$f" "succeeded|failed" 60)" succeeded "another run finishes while the question waits"
is "$(app "$WB" "SELECT count(*) FROM agent.mcp_pending_input")" 0 "another workspace does not see the question"
out=$(app "$WB" "SELECT agent.answer_elicitation('$key', '{\"action\": \"accept\", \"content\": {\"name\": \"Eve\"}}', '$OWNER')")
ok "$(like_no "$out" 'no pending elicitation')" "another workspace cannot answer it"
out=$(qe -c "SET ROLE mcp713_nobody" -c "SET pg_agents.workspace = '$WS'" -c "SELECT agent.answer_elicitation('$key', '{\"action\": \"decline\"}', '$OWNER')")
ok "$(like_no "$out" 'permission denied')" "a role with no grants cannot answer it"
out=$(app "$WS" "SELECT agent.answer_elicitation('$key', '{\"action\": \"accept\", \"content\": {\"name\": \"Eve\"}}', 'mallory')")
ok "$(like_no "$out" 'may not decide')" "a user who may not approve the agent's calls cannot answer it"
is "$(q "SELECT status FROM agent.mcp_elicitations WHERE run_id = $r")" pending "the question is still pending"
is "$(app "$WS" "SELECT agent.answer_elicitation('$key', '{\"action\": \"accept\", \"content\": {\"name\": \"Ada\"}}', '$OWNER') = $r")" t \
   "the owner answers"
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run finishes"
is "$(tool_msgs "[[t713a]]" 1)" '{"result":"accept: {\"colour\": \"blue\", \"name\": \"Ada\"}"}' \
   "the server got the answer, default colour filled in, and the model reads its result"
sess=$(curl -s "$PY/_control/log" | python3 -c 'import json,sys; L=json.load(sys.stdin); print([e["session"] for e in L if e["tool"]=="ask"][0])')
is "$(curl -s "$PY/_control/elicit" | python3 -c 'import json,sys; L=json.load(sys.stdin); print(len(L), L[0]["session"]==sys.argv[1], L[0]["result"]["action"])' "$sess")" \
   "1 True accept" "one answer, posted on the call's session"
is "$(q "SELECT status || ':' || answered_by FROM agent.mcp_elicitations WHERE run_id = $r")" "consumed:$OWNER" "the answer was sent once"

# 2. decline
llm_script "[[t713b]]" '[{"tool": "mcp__desk__ask", "input": {"topic": "contract"}}, {"text": "declined"}]'
r=$(start_run "$a" '{"prompt": "Ask [[t713b]]"}' autonomous "$OWNER")
wait_for 60 pending "$r"; ok $? "a second question"
key=$(q "SELECT approval_key FROM agent.mcp_pending_input WHERE run_id = $r")
app "$WS" "SELECT agent.answer_elicitation('$key', '{\"action\": \"decline\"}', '$OWNER')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "declined: the run goes on"
is "$(tool_msgs "[[t713b]]" 1)" '{"result":"decline: null"}' "the server got the decline"

# 3. expiry
setconf pg_agents.mcp_elicitation_wait 2s
llm_script "[[t713c]]" '[{"tool": "mcp__desk__ask", "input": {"topic": "receipt"}}, {"text": "expired"}]'
r=$(start_run "$a" '{"prompt": "Ask [[t713c]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "unanswered: the run goes on"
is "$(tool_msgs "[[t713c]]" 1)" '{"result":"cancel: null"}' "the server got a cancel at pg_agents.mcp_elicitation_wait"
is "$(q "SELECT e.status || ':' || p.status FROM agent.mcp_elicitations e JOIN agent.approvals p ON p.run_id = e.run_id AND p.approval_key = e.approval_key WHERE e.run_id = $r")" \
   "expired:expired" "the question and its approval are recorded as expired"
is "$(q "SELECT count(*) FROM agent.mcp_pending_input WHERE run_id = $r")" 0 "and no longer pending"

# 4. not declared
setconf pg_agents.mcp_elicitation_wait 0
q "UPDATE agent.mcp_servers SET headers = '{\"X-New\": \"1\"}' WHERE id = $sid" >/dev/null   # a new client (configuration changed)
llm_script "[[t713d]]" '[{"tool": "mcp__desk__ask", "input": {"topic": "memo"}}, {"text": "not asked"}]'
r=$(start_run "$a" '{"prompt": "Ask [[t713d]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "without elicitation declared the run goes on"
is "$(tool_msgs "[[t713d]]" 1)" '{"error":"this client cannot be asked anything"}' "and the server did not ask"

# 5. the refresh pass on a silent server stalls no run
mid=$(q "SELECT agent.mcp_add_server('mute', '$PY/mcp', workspace_id => '$WS')")
q "UPDATE agent.mcp_servers SET url = '$PY/silent/mcp', tools_stale = true WHERE id = $mid" >/dev/null
refreshing() { q "SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'pg_agents mcp refresh' AND state = 'active'"; }
wait_for 60 refreshing; ok $? "the refresh pass runs in a process of its own, waiting on the silent server"
llm_script "[[t713e]]" '[{"tool": "mcp__desk__echo", "input": {"message": "during the refresh"}}, {"text": "fine"}]'
r=$(start_run "$a" '{"prompt": "Meanwhile [[t713e]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 50)" succeeded "a run finishes meanwhile"
is "$(refreshing)" t "while the refresh still waits"
is "$(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_agents worker' AND xact_start IS NOT NULL AND state = 'idle in transaction'")" 0 \
   "and the worker holds no transaction open"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_agents mcp refresh'" >/dev/null

q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WS', '$WB')" >/dev/null
qe -c "DROP ROLE mcp713_nobody" -c "DROP ROLE mcp713_app" >/dev/null
done_testing
