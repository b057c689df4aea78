#!/usr/bin/env bash
# Worker: the whole reply vocabulary.  Every stop reason of both providers
# (pause_turn continues, refusal and content_filter end the run, max_tokens
# and length fail clearly, a full context window fails clearly), the error
# shapes (429 with Retry-After retried, 429 insufficient_quota failing at
# once, 529 overloaded retried, request ids kept), cached-token usage summed
# into agent.runs.tokens_cached and shown by run_metrics and insights, and
# Anthropic prompt caching breakpoints for a long prompt only.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "DROP ROLE IF EXISTS s631_app; DROP ROLE IF EXISTS s631_nobody;
   CREATE ROLE s631_app LOGIN IN ROLE agents_app; CREATE ROLE s631_nobody LOGIN" >/dev/null

oa=$(mk_agent "gpt631")
an=$(mk_agent "claude631" '{"llm_provider": "anthropic"}')
run() {  # run AGENT KEY SCRIPT: prints the run id once it ended
    llm_script "$2" "$3"
    local r
    r=$(start_run "$1" "{\"prompt\": \"go $2\"}")
    wait_status "$r" "succeeded|failed|cancelled|budget_exceeded" 40 >/dev/null
    echo "$r"
}
res() { q "SELECT status || '|' || coalesce(output->>'text', '') || '|' || coalesce(error, '') FROM agent.runs WHERE id = $1"; }
retries() { q "SELECT count(*) FROM agent.run_steps WHERE run_id = $1 AND kind = 'error' AND status = 'retry'"; }

# --- normal endings
r=$(run "$an" "[[s1]]" '[{"text": "done here", "finish_reason": "stop_sequence"}]')
is "$(res "$r")" "succeeded|done here|" "Anthropic stop_sequence ends the turn like end_turn"
r=$(run "$oa" "[[s2]]" '[{"text": "plain"}]')
is "$(res "$r")|$(q "SELECT output->>'stop' FROM agent.run_steps WHERE run_id = $r AND kind = 'llm'")" "succeeded|plain||stop" \
   "OpenAI stop: the answer, stop recorded in the step"

# --- pause_turn: the content goes back as the assistant turn, then a new request
r=$(run "$an" "[[s3]]" '[{"text": "first half, ", "finish_reason": "pause_turn"}, {"text": "second half"}]')
is "$(res "$r")" "succeeded|second half|" "pause_turn continues the run to its answer"
is "$(llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]=="[[s3]]"]
m=rs[1]["body"]["messages"]; print(len(rs), m[-1]["role"], m[-1]["content"][0]["text"])')" \
   "2 assistant first half, " "the paused content was sent back as the last (assistant) message"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND kind = 'llm'")" "2" "two llm steps"

# --- refusals end the run with that reason
r=$(run "$an" "[[s4]]" '[{"text": "I cannot help with that.", "finish_reason": "refusal"}]')
is "$(res "$r")" "failed|I cannot help with that.|the model refused to answer (stop reason refusal)" "Anthropic refusal ends the run"
is "$(q "SELECT output->>'stop' || '|' || (output->>'text') FROM agent.runs WHERE id = $r")" "refusal|I cannot help with that." \
   "the refused reply is kept in the output"
r=$(run "$oa" "[[s5]]" '[{"text": "filtered", "finish_reason": "content_filter"}]')
is "$(res "$r")" "failed|filtered|the model refused to answer (stop reason content_filter)" "OpenAI content_filter ends the run"
r=$(run "$oa" "[[s6]]" '[{"refusal": "I will not do this."}]')
is "$(res "$r")" "failed||the model refused to answer (stop reason stop): I will not do this." \
   "OpenAI message.refusal ends the run with the refusal"
is "$(q "SELECT output->>'refusal' FROM agent.run_steps WHERE run_id = $r AND kind = 'llm'")" "I will not do this." \
   "the refusal is recorded in the llm step"

# --- cut replies and full context windows fail clearly
r=$(run "$an" "[[s7]]" '[{"text": "the beginning of a long", "finish_reason": "max_tokens", "usage": {"in": 10, "out": 4096}}]')
is "$(res "$r")" "failed||the reply was cut at max_tokens (stop reason max_tokens, 4096 tokens out): the model's answer is incomplete" \
   "Anthropic max_tokens fails clearly"
is "$(q "SELECT tokens_out FROM agent.runs WHERE id = $r")" "4096" "the tokens of the cut reply are counted"
r=$(run "$oa" "[[s8]]" '[{"text": "cut", "finish_reason": "length", "usage": {"in": 10, "out": 77}}]')
is "$(res "$r")" "failed||the reply was cut at max_tokens (stop reason length, 77 tokens out): the model's answer is incomplete" \
   "OpenAI length fails clearly"
# (200,000 tokens are past the agent's default_token_budget of 100,000, which
# would end the run budget_exceeded first: this agent may spend more)
q "UPDATE agent.agents SET default_token_budget = 1000000 WHERE id = $an" >/dev/null
r=$(run "$an" "[[s9]]" '[{"text": "x", "finish_reason": "model_context_window_exceeded", "usage": {"in": 200000, "out": 1}}]')
is "$(res "$r")" "failed||the conversation no longer fits the model's context window (stop reason model_context_window_exceeded, 200000 tokens in)" \
   "model_context_window_exceeded fails clearly"

# the agent's scope max_tokens bounds the reply (Anthropic max_tokens, OpenAI max_completion_tokens)
llm_reset
r=$(run "$an" "[[m1]]" '[{"text": "default"}]')
an2=$(mk_agent "claude631b" '{"llm_provider": "anthropic", "max_tokens": 16000}')
oa2=$(mk_agent "gpt631b" '{"max_tokens": 900}')
r=$(run "$an2" "[[m2]]" '[{"text": "more room"}]')
r=$(run "$oa2" "[[m3]]" '[{"text": "bounded"}]')
r=$(run "$oa" "[[m4]]" '[{"text": "unbounded"}]')
is "$(llm_requests | python3 -c '
import json,sys; rs=json.load(sys.stdin)
for k in ("[[m1]]", "[[m2]]", "[[m3]]", "[[m4]]"):
    b=[r for r in rs if r["key"]==k][0]["body"]
    print(b.get("max_tokens"), b.get("max_completion_tokens"), end=" ")')" "4096 None 16000 None None 900 None None " \
   "scope max_tokens: Anthropic 4096 by default, OpenAI unbounded by default"

# one tool call per turn: the providers are told not to ask for parallel calls
q "ALTER SYSTEM SET pg_agents.max_tool_calls_per_turn = 1" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
r=$(run "$an" "[[p1]]" '[{"text": "one"}]')
r=$(run "$oa" "[[p2]]" '[{"text": "one"}]')
q "ALTER SYSTEM RESET pg_agents.max_tool_calls_per_turn" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
r=$(run "$oa" "[[p3]]" '[{"text": "many"}]')
is "$(llm_requests | python3 -c '
import json,sys; rs=json.load(sys.stdin)
for k in ("[[p1]]", "[[p2]]", "[[p3]]"):
    b=[r for r in rs if r["key"]==k][0]["body"]
    print(b.get("tool_choice"), b.get("parallel_tool_calls"), end=" ")')" \
   "{'type': 'auto', 'disable_parallel_tool_use': True} None None False None None " \
   "max_tool_calls_per_turn = 1: disable_parallel_tool_use / parallel_tool_calls false; else the defaults"

# --- errors: 429 with Retry-After retried, quota 429 fails at once, 529 retried, request ids kept
r=$(run "$oa" "[[e1]]" '[{"status": 429, "retry_after": "0", "error_type": "requests", "error_code": "rate_limit_exceeded",
                          "error_message": "Rate limit reached", "request_id": "req_e1",
                          "headers": {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"}},
                         {"text": "after the limit"}]')
is "$(res "$r")|$(retries "$r")" "succeeded|after the limit||1" "a 429 with Retry-After is retried"
is "$(q "SELECT (output->>'retry_after') || '|' || (output->>'request_id') || '|' || (output->>'error') FROM agent.run_steps WHERE run_id = $r AND kind = 'error'")" \
   "true|req_e1|LLM endpoint returned HTTP 429: Rate limit reached (request id req_e1)" \
   "the retry step keeps the provider's message and request id"
r=$(run "$oa" "[[e2]]" '[{"status": 429, "error_type": "insufficient_quota", "error_code": "insufficient_quota",
                          "error_message": "You exceeded your current quota, please check your plan and billing details.",
                          "request_id": "req_e2", "repeat": true}]')
is "$(res "$r")|$(retries "$r")" \
   "failed||LLM endpoint returned HTTP 429: You exceeded your current quota, please check your plan and billing details. (request id req_e2): the provider's quota or spend limit is exhausted, retrying cannot help|0" \
   "a 429 for an exhausted quota fails at once with the provider's message"
r=$(run "$an" "[[e3]]" '[{"status": 529, "error_type": "overloaded_error", "error_message": "Overloaded", "request_id": "req_e3"},
                         {"status": 529, "error_type": "overloaded_error", "error_message": "Overloaded"},
                         {"text": "back"}]')
is "$(res "$r")|$(retries "$r")" "succeeded|back||2" "529 overloaded_error is retried with backoff"
is "$(q "SELECT string_agg((output->>'http_status') || ':' || coalesce(output->>'request_id', '-') || ':' || (output->>'retry_in_ms' ~ '^[0-9]+$'), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind = 'error'")" \
   "529:req_e3:true,529:-:true" "each retry step has its status, the request id when sent, and a delay"
r=$(run "$an" "[[e4]]" '[{"status": 400, "error_type": "invalid_request_error", "error_message": "Your credit balance is too low to access the Anthropic API.", "request_id": "req_e4"}]')
is "$(res "$r")|$(retries "$r")" "failed||LLM endpoint returned HTTP 400: Your credit balance is too low to access the Anthropic API. (request id req_e4)|0" \
   "an error body's message and request id end up in the run's error"

# --- usage: cached and reasoning tokens per step, summed per run
r=$(run "$an" "[[u1]]" '[{"text": "cached", "usage": {"in": 100, "out": 5, "cached": 900, "cache_write": 50}}]')
is "$(q "SELECT tokens_in || '|' || tokens_out || '|' || tokens_cached FROM agent.runs WHERE id = $r")" "1050|5|900" \
   "Anthropic: input_tokens + cache reads + cache writes in, cache reads cached"
is "$(q "SELECT output->'usage' FROM agent.run_steps WHERE run_id = $r AND kind = 'llm'")" \
   '{"in": 1050, "out": 5, "cached": 900, "cache_write": 50}' "the step's usage shows the cache"
r=$(run "$oa" "[[u2]]" '[{"tool": "search_resources", "input": {"query": "x"}, "usage": {"in": 300, "out": 20, "cached": 256, "reasoning": 12}},
                         {"text": "two calls", "usage": {"in": 400, "out": 9, "cached": 300}}]')
is "$(q "SELECT status || '|' || tokens_in || '|' || tokens_cached FROM agent.runs WHERE id = $r")" "succeeded|700|556" \
   "OpenAI: cached_tokens of every call summed into runs.tokens_cached"
is "$(q "SELECT string_agg(output->'usage'->>'reasoning', ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind = 'llm'")" "12" \
   "reasoning tokens recorded in the step"
is "$(q "SELECT tokens_cached FROM agent.run_metrics WHERE run_id = $r")" "556" "agent.run_metrics shows them"
# the other workspace's agent, with its own cache
w7=$(mk_agent "other631" '{}' none '[]' 10 w7 owner7)
r7=$(run "$w7" "[[u3]]" '[{"text": "w7", "usage": {"in": 50, "out": 1, "cached": 40}}]')
want=$(q "SELECT sum(tokens_cached) FROM agent.runs WHERE workspace_id = 'w6'")
is "$(psql -XAtq -U s631_app -c "SET pg_agents.workspace = 'w6'" -c "SELECT sum(tokens_cached) FROM agent.insights")" "$want" \
   "agent.insights sums tokens_cached, only of the session's workspace, for the application role"
is "$(psql -XAtq -U s631_app -c "SET pg_agents.workspace = 'w7'" -c "SELECT sum(tokens_cached) FROM agent.insights")" "40" \
   "and the other workspace its own"
is "$(psql -XAtq -U s631_nobody -c "SET pg_agents.workspace = 'w6'" -c "SELECT sum(tokens_cached) FROM agent.insights" 2>&1 | grep -c 'permission denied')" "1" \
   "a role with no grants reads no insights"
is "$(q "SELECT (detail->>'tokens_cached') FROM agent.insights($oa, 'owner6') WHERE section = 'total'" 2>&1)" \
   "$(q "SELECT sum(tokens_cached) FROM agent.runs WHERE agent_id = $oa")" "agent.insights() shows tokens_cached in its detail"

# --- prompt caching: breakpoints for a long system prompt and tools, not for a short one
q "UPDATE agent.agents SET instructions = repeat('Be careful and thorough. ', 200) WHERE id = $an" >/dev/null
llm_reset
r=$(run "$an" "[[c1]]" '[{"text": "long prompt"}]')
is "$(llm_requests | python3 -c '
import json,sys; b=[r for r in json.load(sys.stdin) if r["key"]=="[[c1]]"][0]["body"]
s=b["system"]; t=b["tools"]
n=sum(1 for x in (s if isinstance(s, list) else []) if "cache_control" in x) + sum(1 for x in t if "cache_control" in x)
print(type(s).__name__, s[0]["cache_control"], t[-1]["cache_control"], "cache_control" in t[0], n)')" \
   "list {'type': 'ephemeral'} {'type': 'ephemeral'} False 2" \
   "a long prompt: system prompt and last tool marked ephemeral (2 of the 4 breakpoints)"
r=$(run "$oa" "[[c2]]" '[{"text": "short"}]')
q "UPDATE agent.agents SET instructions = 'Short.' WHERE id = $an" >/dev/null
r=$(run "$an" "[[c3]]" '[{"text": "short prompt"}]')
is "$(llm_requests | python3 -c '
import json,sys; rs=json.load(sys.stdin)
for k in ("[[c2]]", "[[c3]]"):
    b=[r for r in rs if r["key"]==k][0]["body"]
    print(k, "cache_control" in json.dumps(b), end=" ")')" "[[c2]] False [[c3]] False " \
   "a short prompt (and the OpenAI format) carries no cache_control"
q "UPDATE agent.agents SET instructions = repeat('Be careful and thorough. ', 200) WHERE id = $an" >/dev/null
q "ALTER SYSTEM SET pg_agents.llm_prompt_cache = off" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
r=$(run "$an" "[[c4]]" '[{"text": "off"}]')
is "$(llm_requests | python3 -c '
import json,sys; b=[r for r in json.load(sys.stdin) if r["key"]=="[[c4]]"][0]["body"]; print("cache_control" in json.dumps(b))')" "False" \
   "pg_agents.llm_prompt_cache = off: no breakpoints"
q "ALTER SYSTEM RESET pg_agents.llm_prompt_cache" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null

q "DROP ROLE s631_app; DROP ROLE s631_nobody" >/dev/null
done_testing
