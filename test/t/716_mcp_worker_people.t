#!/usr/bin/env bash
# MCP in the worker where people come in, end to end with the scripted LLM:
#  1. OAuth: a server behind a local authorization server
#     (test/fixtures/oauth_server.py), authorized through SQL for the agent's
#     owner, is called by a run with the owner's token; no token or secret in
#     any step, audit row or the server log;
#  2. elicitation: a 2026-07-28 server (test/fixtures/mcp_stateless_server.py)
#     asks who the booking is for during the call: the run waits like on an
#     approval, the question is shown in agent.mcp_pending_input, answered with
#     agent.answer_elicitation (the form's default filled in), the run resumes
#     and the server gets the answer with its requestState; a decline is the
#     server's to report; an unanswered question expires with the run; other
#     workspaces, a role with no grants and a user who may not approve cannot
#     answer;
#  3. a slow server: the call waits for the answer and the run goes on.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/oauth_server.py" --port-file "$tmp/oa.port" >/dev/null 2>&1 & oapid=$!
python3 "$src/test/fixtures/mcp_stateless_server.py" --port-file "$tmp/sl.port" >/dev/null 2>&1 & slpid=$!
trap 'llm_stop; kill $oapid $slpid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/oa.port" ] && [ -s "$tmp/sl.port" ] && break; sleep 0.05; done
OA="http://127.0.0.1:$(cat "$tmp/oa.port")"
SL="http://127.0.0.1:$(cat "$tmp/sl.port")"
WS=mcp_ws_711
WB=mcp_ws_711b
OWNER=owner711
qe() { psql -XAtq -v ON_ERROR_STOP=1 "$@" 2>&1; }
tool_msgs() {  # the tool messages the model received in request N (0-based) of a key
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
n=int(sys.argv[2]); print(" | ".join(m["content"] for m in rs[n]["body"]["messages"] if m["role"]=="tool") if len(rs)>n else "no request %d" % n)' "$1" "$2"
}
q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WS', '$WB')" >/dev/null
qe -c "DROP ROLE IF EXISTS mcp711_nobody" -c "DROP ROLE IF EXISTS mcp711_app" >/dev/null
qe -c "CREATE ROLE mcp711_nobody LOGIN" -c "CREATE ROLE mcp711_app LOGIN IN ROLE agents_app" >/dev/null

# 1. OAuth in the worker
sid=$(q "SELECT agent.mcp_add_server('secure', '$OA/mcp', workspace_id => '$WS')")
q "SELECT agent.mcp_set_oauth($sid)" >/dev/null
url=$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WS'" -c "SELECT agent.mcp_authorize($sid, '$OWNER', 'https://app.example.com/cb')")
redirect=$(curl -s -o /dev/null -w '%{redirect_url}' "$url" | sed 's/^[^?]*?//')
qp() { python3 -c 'import sys,urllib.parse; print(dict(urllib.parse.parse_qsl(sys.argv[1])).get(sys.argv[2], ""))' "$redirect" "$1"; }
out=$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WS'" \
         -c "SELECT agent.mcp_authorization_callback('$(qp state)', '$(qp code)', '$(qp iss)', '$OWNER')")
is "$out" t "the owner authorized the OAuth server through the application"
a=$(mk_agent "mcp711a" '{"mcp_tools": ["mcp__secure__whoami"]}' none '[]' 10 "$WS" "$OWNER")
llm_script "[[t711a]]" '[{"tool": "mcp__secure__whoami", "input": {}}, {"text": "known"}]'
r=$(start_run "$a" '{"prompt": "Who am I [[t711a]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "a run calls the OAuth server"
is "$(tool_msgs "[[t711a]]" 1)" '{"result":"sub:user-consented"}' "with the token of the user who consented"
secrets=$(curl -s "$OA/_control/tokens" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("|".join(d["access"]+d["refresh"]+d["secrets"]))')
leak=$(q "SELECT coalesce(string_agg(x, ' '), '') FROM (SELECT s::text AS x FROM agent.run_steps s WHERE s.run_id = $r
           UNION ALL SELECT a::text FROM agent.audit_log a) t" | grep -oE "$secrets" | head -1)
is "$leak" "" "no token or secret in the run's steps or any audit row"
is "$(grep -oE "$secrets" "$PG_AGENTS_DIR/server.log" | head -1)" "" "nor in the server log"

# 2. elicitation through people
q "SELECT agent.mcp_add_server('desk', '$SL/mcp', workspace_id => '$WS')" >/dev/null
is "$(q "SELECT protocol_version FROM agent.mcp_servers WHERE workspace_id = '$WS' AND name = 'desk'")" "2026-07-28" \
   "the stateless server is recorded as 2026-07-28"
b=$(mk_agent "mcp711b" '{"mcp_tools": ["mcp__desk__*"]}' none '[]' 10 "$WS" "$OWNER")
llm_script "[[t711b]]" '[{"tool": "mcp__desk__book", "input": {"day": "monday"}}, {"text": "booked"}]'
r=$(start_run "$b" '{"prompt": "Book monday [[t711b]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 60)" waiting_approval "the server's question pauses the run like an approval"
out=$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WS'" \
         -c "SELECT approval_key || '|' || message || '|' || (requested_schema->'properties'->'size'->>'default') FROM agent.mcp_pending_input WHERE run_id = $r")
key=${out%%|*}
is "${out#*|}" "Who is the booking for, and how many?|2" "the application sees the question and its form"
is "$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WB'" -c "SELECT count(*) FROM agent.mcp_pending_input")" 0 \
   "another workspace does not see it"
out=$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WB'" -c "SELECT agent.answer_elicitation('$key', '{\"action\": \"accept\", \"content\": {\"name\": \"Eve\"}}', 'mallory')")
like_no() { [[ "$1" =~ $2 ]] && echo 0 || echo 1; }
ok "$(like_no "$out" 'no pending elicitation')" "another workspace cannot answer it"
out=$(qe -c "SET ROLE mcp711_nobody" -c "SET pg_agents.workspace = '$WS'" -c "SELECT agent.answer_elicitation('$key', '{\"action\": \"decline\"}', '$OWNER')")
ok "$(like_no "$out" 'permission denied')" "a role with no grants cannot answer it"
out=$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WS'" -c "SELECT agent.answer_elicitation('$key', '{\"action\": \"accept\", \"content\": {\"name\": \"Eve\"}}', 'mallory')")
ok "$(like_no "$out" 'ERROR')" "a user who may not approve the agent's calls cannot answer it"
out=$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WS'" -c "SELECT agent.answer_elicitation('$key', '{\"action\": \"maybe\"}', '$OWNER')")
ok "$(like_no "$out" 'an elicitation answer is')" "an answer that is not accept, decline or cancel is refused"
is "$(q "SELECT status FROM agent.runs WHERE id = $r")" waiting_approval "the run still waits"
out=$(qe -c "SET ROLE mcp711_app" -c "SET pg_agents.workspace = '$WS'" -c "SELECT agent.answer_elicitation('$key', '{\"action\": \"accept\", \"content\": {\"name\": \"Ada\"}}', '$OWNER') = $r")
is "$out" t "the owner answers"
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run resumes and finishes"
is "$(tool_msgs "[[t711b]]" 1)" '{"result":"booked monday for 2 under Ada"}' "the server got the answer, default size 2 filled in (SEP-1034)"
log=$(curl -s "$SL/_control/log")
is "$(echo "$log" | python3 -c 'import json,sys; d=[e for e in json.load(sys.stdin) if e["tool"]=="book"]; print(len(d), d[0]["elicitation_declared"], d[-1]["requestState"], json.dumps(d[-1]["inputResponses"], sort_keys=True))')" \
   '2 True book-state-monday {"party": {"action": "accept", "content": {"name": "Ada", "size": 2}}}' \
   "two calls: elicitation declared, then the answer with the server's requestState echoed"
is "$(q "SELECT status FROM agent.mcp_elicitations WHERE run_id = $r")" consumed "the answer was used once"

llm_script "[[t711c]]" '[{"tool": "mcp__desk__book", "input": {"day": "tuesday"}}, {"text": "not booked"}]'
r=$(start_run "$b" '{"prompt": "Book tuesday [[t711c]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 60)" waiting_approval "a second question"
key=$(q "SELECT approval_key FROM agent.mcp_pending_input WHERE run_id = $r")
q "SET pg_agents.workspace = '$WS'; SELECT agent.answer_elicitation('$key', '{\"action\": \"decline\"}', '$OWNER')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "declined: the run goes on"
is "$(tool_msgs "[[t711c]]" 1)" '{"result":"booking declined by the user"}' "the decline went to the server, whose answer the model reads"

llm_script "[[t711d]]" '[{"tool": "mcp__desk__book", "input": {"day": "friday"}}, {"text": "never"}]'
r=$(start_run "$b" '{"prompt": "Book friday [[t711d]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 60)" waiting_approval "a third question"
q "UPDATE agent.approvals SET expires_at = now() - interval '1 second' WHERE run_id = $r AND status = 'pending'" >/dev/null
is "$(wait_status "$r" "expired|succeeded|failed" 60)" expired "unanswered, it expires with the run (pg_agents.approval_ttl)"
is "$(q "SELECT count(*) FROM agent.mcp_pending_input WHERE run_id = $r")" 0 "and is no longer pending"

# 3. a slow server
llm_script "[[t711e]]" '[{"tool": "mcp__desk__slow", "input": {"seconds": 2}}, {"text": "waited"}]'
r=$(start_run "$b" '{"prompt": "Be slow [[t711e]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "a slow MCP answer is waited for"
is "$(tool_msgs "[[t711e]]" 1)" '{"result":"slow done"}' "and reaches the model"

q "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WS', '$WB')" >/dev/null
qe -c "DROP ROLE mcp711_nobody" -c "DROP ROLE mcp711_app" >/dev/null
done_testing
