#!/usr/bin/env bash
# Attack (issue 36 #2, #3, #5): the LLM endpoint as the attacker.
#  #2 an Anthropic stream whose content_block_start names index 300000 (737
#     bytes) made the worker append 300,000 placeholder blocks (53 -> 275 MB)
#     and the run succeeded; a delta naming a block never started was
#     dropped in silence.
#  #3 one OpenAI chunk listing 40,000 tool-call fragments {"index": 0..N-1}
#     was matched in quadratic time inside curl's write callback (49 s, every
#     other run waiting), never tripped pg_agents.max_tool_calls_per_turn,
#     and the run succeeded with no calls (calls without id nor name were
#     dropped in silence).
#  #5 usage trusted: prompt_tokens = -100 failed as an "internal error of
#     the worker", -4294967296 wrapped to 0 through an int32 cast, a count
#     beyond 64 bits or Anthropic's input + cache read + cache write summed
#     without a check.
# Now: the block index is at most the blocks seen, fragments are found by
# position and counted against the cap as they arrive, a usage count is an
# integer from 0 to 2147483647 (sums saturate) or the run fails with "the
# provider reported invalid usage: ..." (code llm_invalid_usage); every one
# of these fails the run at once, without a retry, while a bystander run of
# another workspace completes.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
cleanup() {
    llm_stop
    q "ALTER SYSTEM RESET pg_agents.llm_stream" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
    q "DROP ROLE IF EXISTS s715_app; DROP ROLE IF EXISTS s715_nobody" >/dev/null
}
trap cleanup EXIT
reload() { q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5; }
err() { q "SELECT error FROM agent.runs WHERE id = $1"; }
code() { q "SELECT agent.run_error_code(error) FROM agent.runs WHERE id = $1"; }
retries() { q "SELECT count(*) FROM agent.run_steps WHERE run_id = $1 AND kind = 'error' AND status = 'retry'"; }
steps() { q "SELECT count(*) FROM agent.run_steps WHERE run_id = $1 AND kind = 'tool'"; }

q "DROP ROLE IF EXISTS s715_app; DROP ROLE IF EXISTS s715_nobody;
   CREATE ROLE s715_app LOGIN IN ROLE agents_app; CREATE ROLE s715_nobody LOGIN" >/dev/null
oa=$(mk_agent "hostile715" '{}' none '[]' 10 w715 owner715)
an=$(mk_agent "hostile715c" '{"llm_provider": "anthropic"}' none '[]' 10 w715 owner715)
by=$(mk_agent "bystander715" '{}' none '[]' 10 w715b owner715b)

# usage_run AGENT KEY RAW_USAGE: a final answer whose usage is RAW_USAGE, as sent
usage_run() {
    llm_script "$2" "[{\"text\": \"fine\", \"raw_usage\": $3}]"
    start_run "$1" "{\"prompt\": \"count $2\"}" autonomous owner715
}

# ---- #5 usage, not streamed -------------------------------------------------
declare -A want=(
  [u1]='{"prompt_tokens": -100, "completion_tokens": 5}|prompt_tokens is -100, a negative count'
  [u2]='{"prompt_tokens": -4294967296, "completion_tokens": 5}|prompt_tokens is -4294967296, a negative count'
  [u3]='{"prompt_tokens": 1e30, "completion_tokens": 5}|prompt_tokens is not an integer (1e30)'
  [u4]='{"prompt_tokens": "12", "completion_tokens": 5}|prompt_tokens is not an integer ("12")'
  [u5]='{"prompt_tokens": 9223372036854775808, "completion_tokens": 5}|prompt_tokens is 9223372036854775808, beyond any count'
  [u6]='{"prompt_tokens": 10, "completion_tokens": 4294967296}|completion_tokens is 4294967296, more than 2147483647 tokens'
  [u7]='{"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": -1}}|prompt_tokens_details.cached_tokens is -1, a negative count'
)
for k in u1 u2 u3 u4 u5 u6 u7; do
    r=$(usage_run "$oa" "[[t715$k]]" "${want[$k]%%|*}")
    is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 60)" "failed" "usage ${want[$k]%%|*}: the run fails"
    is "$(err "$r")" "the provider reported invalid usage: ${want[$k]#*|}" "  with the reason, not an internal error"
    is "$(code "$r")|$(retries "$r")|$(q "SELECT tokens_in || '/' || tokens_out FROM agent.runs WHERE id = $r")" \
       "llm_invalid_usage|0|0/0" "  its own code, no retry, nothing counted"
done
# Anthropic: input + cache read + cache write beyond 64 bits (the sum wrapped)
r=$(usage_run "$an" "[[t715u8]]" '{"input_tokens": 9000000000000000000, "cache_read_input_tokens": 9000000000000000000, "output_tokens": 5}')
is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 60)|$(err "$r")" \
   "failed|the provider reported invalid usage: input_tokens is 9000000000000000000, more than 2147483647 tokens" \
   "Anthropic counts whose sum overflows 64 bits: invalid usage, not wrapped"
# three valid counts whose sum exceeds what a step records: saturated
r=$(usage_run "$an" "[[t715u9]]" '{"input_tokens": 2000000000, "cache_read_input_tokens": 2000000000, "cache_creation_input_tokens": 2000000000, "output_tokens": 5}')
is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 60)" "budget_exceeded" \
   "input + cache read + cache write of 6e9: counted (saturated), the budget is used up"
is "$(q "SELECT tokens_in || '|' || tokens_cached || '|' || (SELECT output->'usage'->>'in' FROM agent.run_steps WHERE run_id = $r AND kind = 'llm') FROM agent.runs WHERE id = $r")" \
   "2147483647|2000000000|2147483647" "  the sum saturates at 2147483647 (run and step alike)"

# the application sees the reason in its workspace only; a role without grants sees nothing
r=$(q "SELECT id FROM agent.runs WHERE agent_id = $oa AND error LIKE '%-100,%'")
is "$(psql -XAtq -U s715_app -c "SET pg_agents.workspace = 'w715'" -c "SELECT agent.run_error_code(error) FROM agent.runs WHERE id = $r" 2>&1)" \
   "llm_invalid_usage" "the application role reads the run's error code in its workspace"
is "$(psql -XAtq -U s715_app -c "SET pg_agents.workspace = 'w715b'" -c "SELECT count(*) FROM agent.runs WHERE id = $r" 2>&1)" \
   "0" "  not from another workspace"
is "$(psql -XAtq -U s715_nobody -c "SET pg_agents.workspace = 'w715'" -c "SELECT count(*) FROM agent.runs WHERE id = $r" 2>&1 | grep -c 'permission denied')" \
   "1" "  a role without grants is refused"

# ---- streamed ---------------------------------------------------------------
q "ALTER SYSTEM SET pg_agents.llm_stream = on" >/dev/null; reload

# #5 usage in a stream: the usage chunk, Anthropic's message_start
r=$(usage_run "$oa" "[[t715s1]]" '{"prompt_tokens": -4294967296, "completion_tokens": 5}')
is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 60)|$(err "$r")" \
   "failed|the provider reported invalid usage: prompt_tokens is -4294967296, a negative count" \
   "streamed: a negative prompt_tokens in the usage chunk fails the run (it wrapped to 0)"
r=$(usage_run "$an" "[[t715s2]]" '{"input_tokens": 9223372036854775808, "output_tokens": 1}')
is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 60)|$(err "$r")|$(retries "$r")" \
   "failed|the provider reported invalid usage: input_tokens is 9223372036854775808, beyond any count|0" \
   "streamed: a count beyond 64 bits in message_start fails the run at once"

# #2 Anthropic: a block index far past the blocks seen (the 737-byte stream of the issue)
ms='{"type": "message_start", "message": {"id": "msg_715", "type": "message", "role": "assistant", "model": "scripted", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}'
tail_ev='["content_block_stop", {"type": "content_block_stop", "index": 0}],
         ["message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}],
         ["message_stop", {"type": "message_stop"}]'
llm_script "[[t715a1]]" "[{\"sse\": [[\"message_start\", $ms],
  [\"content_block_start\", {\"type\": \"content_block_start\", \"index\": 300000, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}],
  [\"content_block_delta\", {\"type\": \"content_block_delta\", \"index\": 300000, \"delta\": {\"type\": \"text_delta\", \"text\": \"hello\"}}],
  $tail_ev]}]"
r=$(start_run "$an" '{"prompt": "blocks [[t715a1]]"}' autonomous owner715)
# the bystander: a trivial run of another workspace while the hostile stream is parsed
llm_script "[[t715by1]]" '[{"text": "all quiet"}]'
b1=$(start_run "$by" '{"prompt": "hello [[t715by1]]"}' autonomous owner715b)
is "$(wait_status "$r" "succeeded|failed" 60)" "failed" "Anthropic content_block_start at index 300000: the run fails (it succeeded)"
is "$(err "$r")|$(code "$r")|$(retries "$r")" \
   "the provider sent an invalid stream: content_block_start has index 300000 where 0 to 0 was expected|llm_malformed|0" \
   "  with the reason, no retry"
is "$(wait_status "$b1" "succeeded|failed" 60)|$(q "SELECT output->>'text' FROM agent.runs WHERE id = $b1")" \
   "succeeded|all quiet" "  meanwhile a bystander run of another workspace completes"
# a delta naming a block never started (dropped in silence before)
llm_script "[[t715a2]]" "[{\"sse\": [[\"message_start\", $ms],
  [\"content_block_start\", {\"type\": \"content_block_start\", \"index\": 0, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}],
  [\"content_block_delta\", {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"shown \"}}],
  [\"content_block_delta\", {\"type\": \"content_block_delta\", \"index\": 7, \"delta\": {\"type\": \"text_delta\", \"text\": \"hidden\"}}],
  $tail_ev]}]"
r=$(start_run "$an" '{"prompt": "blocks [[t715a2]]"}' autonomous owner715)
is "$(wait_status "$r" "succeeded|failed" 60)|$(err "$r")" \
   "failed|the provider sent an invalid stream: content_block_delta has index 7 where 0 to 0 was expected" \
   "Anthropic content_block_delta for a block never started: the run fails (it was dropped, the run succeeded)"
# the same events, well formed, still make a run
llm_script "[[t715a3]]" "[{\"sse\": [[\"message_start\", $ms],
  [\"content_block_start\", {\"type\": \"content_block_start\", \"index\": 0, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}],
  [\"content_block_delta\", {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"well formed\"}}],
  $tail_ev]}]"
r=$(start_run "$an" '{"prompt": "blocks [[t715a3]]"}' autonomous owner715)
is "$(wait_status "$r" "succeeded|failed" 60)|$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" \
   "succeeded|well formed" "a well-formed scripted stream succeeds"

# #3 OpenAI: one chunk of 40,000 tool-call fragments (629 kB, far below max_reply_bytes)
llm_script "[[t715f1]]" '[{"sse_fragments": 40000}]'
r=$(start_run "$oa" '{"prompt": "fragments [[t715f1]]"}' autonomous owner715)
llm_script "[[t715by2]]" '[{"text": "still quiet"}]'
b2=$(start_run "$by" '{"prompt": "hello [[t715by2]]"}' autonomous owner715b)
is "$(wait_status "$r" "succeeded|failed" 120)" "failed" "40,000 tool-call fragments in one chunk: the run fails (it succeeded with no calls)"
is "$(err "$r")|$(retries "$r")|$(steps "$r")" \
   "the model asked for 65 or more tool calls in one reply, more than pg_agents.max_tool_calls_per_turn (64)|0|0" \
   "  counted on the fragments as they arrive: the cap's reason, no retry, no call executed"
is "$(wait_status "$b2" "succeeded|failed" 120)|$(q "SELECT output->>'text' FROM agent.runs WHERE id = $b2")" \
   "succeeded|still quiet" "  meanwhile a bystander run of another workspace completes"
# under the cap, fragments without id or name are refused, not dropped
llm_script "[[t715f2]]" '[{"sse_fragments": 3}]'
r=$(start_run "$oa" '{"prompt": "fragments [[t715f2]]"}' autonomous owner715)
is "$(wait_status "$r" "succeeded|failed" 60)|$(err "$r")" \
   "failed|malformed response from the LLM: a tool call without an id or a name" \
   "3 fragments without id or name: the run fails (the calls were dropped, the run succeeded)"
# a fragment index past the calls seen
base='{"id": "chatcmpl-715", "object": "chat.completion.chunk", "created": 1, "model": "scripted"'
llm_script "[[t715f3]]" "[{\"sse\": [[\"\", $base, \"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\", \"content\": null}, \"finish_reason\": null}]}],
  [\"\", $base, \"choices\": [{\"index\": 0, \"delta\": {\"tool_calls\": [{\"index\": 1000000, \"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"read_resource\", \"arguments\": \"{}\"}}]}, \"finish_reason\": null}]}],
  [\"\", $base, \"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"tool_calls\"}]}], [\"\", \"[DONE]\"]]}]"
r=$(start_run "$oa" '{"prompt": "fragments [[t715f3]]"}' autonomous owner715)
is "$(wait_status "$r" "succeeded|failed" 60)|$(err "$r")" \
   "failed|the provider sent an invalid stream: a tool call fragment has index 1000000 where 0 to 0 was expected" \
   "a tool-call fragment index past the calls seen fails the run"
# an event that is not JSON is no longer skipped in silence
llm_script "[[t715f4]]" "[{\"sse\": [[\"\", $base, \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"half\"}, \"finish_reason\": null}]}],
  [\"\", \"{not json\"], [\"\", $base, \"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}], [\"\", \"[DONE]\"]]}]"
r=$(start_run "$oa" '{"prompt": "garbage [[t715f4]]"}' autonomous owner715)
is "$(wait_status "$r" "succeeded|failed" 60)|$(err "$r" | sed 's/: .*//')" \
   "failed|the provider sent an invalid stream" "an event that is not JSON fails the run (it was skipped)"
done_testing
