#!/usr/bin/env bash
# Worker faults: 429 with Retry-After, 5xx, time-outs, connection refused,
# malformed and truncated bodies, an unknown tool, a model that never stops.
# Each ends in a retry or a failed run with a clear error; the worker lives on.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
a=$(mk_agent "faults604" '{}' none '[]' 3)
wpid=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'")

run() {  # run KEY SCRIPT -> run id
    llm_script "$1" "$2"
    start_run "$a" "{\"prompt\": \"go $1\"}"
}

r=$(run "[[f429]]" '[{"status": 429, "retry_after": "0"}, {"text": "after 429"}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "429 is retried"
is "$(q "SELECT (output->>'http_status') || ',' || (output->>'retry_after') FROM agent.run_steps WHERE run_id = $r AND status = 'retry'")" \
   "429,true" "the retry is a step honouring Retry-After"

r=$(run "[[f500]]" '[{"status": 500}, {"status": 503}, {"text": "after 5xx"}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "5xx are retried with backoff"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND status = 'retry'")" "2" "two retry steps"

r=$(run "[[f500x]]" '[{"status": 500, "repeat": true}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "persistent 5xx fail the run"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" \
   "LLM endpoint returned HTTP 500: scripted status 500 (gave up after 4 attempts)" "bounded retries, clear error"

q "ALTER SYSTEM SET pg_agents.request_timeout = '400ms'" && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
r=$(run "[[fhang]]" '[{"hang": true, "hang_seconds": 5}, {"text": "after a time-out"}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a time-out is retried"
is "$(q "SELECT output->>'error' FROM agent.run_steps WHERE run_id = $r AND status = 'retry'")" \
   "LLM request timed out after 400 ms" "the time-out is recorded"
r=$(run "[[fhang2]]" '[{"hang": true, "hang_seconds": 5, "repeat": true}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "persistent time-outs fail the run"
ok "$(q "SELECT error LIKE 'LLM request timed out after 400 ms (gave up after 4 attempts)' FROM agent.runs WHERE id = $r")" "with a clear error"
q "ALTER SYSTEM RESET pg_agents.request_timeout" && q "SELECT pg_reload_conf()" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
llm_allow "http://127.0.0.1:$port/v1"
d=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope) VALUES ('w6', 'owner6', 'refused604',
       '{\"llm_url\": \"http://127.0.0.1:$port/v1\"}') RETURNING id")
r=$(start_run "$d" '{"prompt": "x"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "connection refused fails the run after retries"
ok "$(q "SELECT error LIKE 'could not reach the LLM endpoint: %(gave up after 4 attempts)' FROM agent.runs WHERE id = $r")" \
   "with a clear error"

r=$(run "[[fmal]]" '[{"malformed": true}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "a malformed body fails the run"
ok "$(q "SELECT error LIKE 'malformed response from the LLM:%' FROM agent.runs WHERE id = $r")" "with a clear error"

r=$(run "[[ftrunc]]" '[{"truncated": true, "text": "this answer will be cut in the middle"}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "a truncated body fails the run"
ok "$(q "SELECT error LIKE 'truncated response from the LLM%' OR error LIKE 'malformed response%' FROM agent.runs WHERE id = $r")" "with a clear error"

r=$(run "[[funk]]" '[{"tool": "format_disk", "input": {}}, {"text": "ok then"}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "an unknown tool does not crash the run"
is "$(q "SELECT output->>'error' FROM agent.run_steps WHERE run_id = $r AND kind = 'error'")" 'unknown tool "format_disk"' \
   "the model gets an error result"

r=$(run "[[floop]]" '[{"tool": "search_resources", "input": {"query": "again"}, "repeat": true}]')
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "a model that never stops is cut at max_iterations"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" \
   "the model did not give a final answer within max_iterations (3) turns" "clear error"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND kind = 'llm'")" "3" "exactly max_iterations model calls"

b=$(mk_agent "budget604")
llm_script "[[fbud]]" '[{"tool": "search_resources", "input": {"query": "x"}, "usage": {"in": 60, "out": 50}}, {"text": "never"}]'
r=$(q "INSERT INTO agent.runs (agent_id, regime, origin, input, token_budget) VALUES ($b, 'autonomous', 'api', '{\"prompt\": \"[[fbud]]\"}', 100) RETURNING id")
is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 30)" "budget_exceeded" "the token budget ends the run"
# a run without a token_budget of its own has its agent's default_token_budget
# (an event or schedule run never carries one): a tool-call turn over it ends the run
q "UPDATE agent.agents SET default_token_budget = 100 WHERE id = $b" >/dev/null
llm_script "[[fdefbud]]" '[{"tool": "search_resources", "input": {"query": "x"}, "usage": {"in": 60, "out": 50}}, {"text": "never"}]'
r=$(q "INSERT INTO agent.runs (agent_id, regime, origin, input) VALUES ($b, 'autonomous', 'event', '{\"prompt\": \"[[fdefbud]]\"}') RETURNING id")
is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 30)" "budget_exceeded" "the agent's default_token_budget ends a run that has none"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" "token budget of 100 exhausted (110 used)" "with the default budget and the usage"

is "$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'")" "$wpid" "the worker never crashed"
done_testing
