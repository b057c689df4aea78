#!/usr/bin/env bash
# Worker: streamed replies (pg_agents.llm_stream).  OpenAI SSE chunks (text,
# tool-call argument fragments joined by index, the usage chunk, [DONE]) and
# Anthropic events (message_start ... message_stop, ping, input_json_delta,
# an unknown event, an error event mid-stream); text deltas announced on
# NOTIFY agent_run_deltas by their ids, read through agent.run_deltas, equal
# to the recorded answer; the llm step identical to
# the non-streamed one; a cut stream retried like a failed request.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

LISTEN_OUT=$(mktemp /tmp/pg_agents_630.XXXXXX)
LISTEN_STOP=$LISTEN_OUT.stop
LISTEN_PID=
listen_stop() {
    touch "$LISTEN_STOP"
    if [ -n "$LISTEN_PID" ]; then wait "$LISTEN_PID" 2>/dev/null || true; LISTEN_PID=; fi
}
cleanup() { listen_stop; llm_stop; rm -f "$LISTEN_OUT" "$LISTEN_STOP"; }
trap cleanup EXIT

q "DROP ROLE IF EXISTS s630_app; DROP ROLE IF EXISTS s630_nobody;
   CREATE ROLE s630_app LOGIN IN ROLE agents_app; CREATE ROLE s630_nobody LOGIN" >/dev/null

# the application's session listens (any role that may connect may LISTEN:
# the payload holds ids only, the text is read through agent.run_deltas,
# docs/worker.md)
( echo "LISTEN agent_run_deltas;"
  while [ ! -e "$LISTEN_STOP" ]; do echo "SELECT 1;"; sleep 0.1; done ) |
    psql -XAtq -U s630_app >"$LISTEN_OUT" 2>&1 &
LISTEN_PID=$!
sleep 0.3

q "ALTER SYSTEM SET pg_agents.llm_stream = on" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5

# deltas RUN STEP: the text of the last attempt of that step, joined in offset
# order: the notifications name each delta by its ids, the application reads
# its text through agent.run_deltas (bound to the run's workspace, as the
# user who asked for the run)
deltas() {
    local wu rows
    wu=$(q "SELECT workspace_id || '|' || coalesce(requested_by, '') FROM agent.runs WHERE id = $1")
    rows=$(psql -XAtq -U s630_app -c "SET pg_agents.workspace = '${wu%%|*}'" \
              -c "SELECT coalesce(json_agg(json_build_object('step', d.step, 'attempt', d.attempt, 'offset', d.\"offset\", 'text', d.text)), '[]')
                    FROM agent.run_deltas($1, '${wu#*|}') d" 2>&1)
    python3 - "$LISTEN_OUT" "$1" "$2" "$rows" <<'PY'
import json, re, sys
path, run, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
texts = {(d["step"], d["attempt"], d["offset"]): d["text"] for d in json.loads(sys.argv[4])}
got = []
for line in open(path, encoding="utf-8"):
    m = re.match(r'Asynchronous notification "agent_run_deltas" with payload "(.*)" received from server process', line)
    if m:
        got.append(json.loads(m.group(1)))
mine = [d for d in got if d["run_id"] == run and d["step"] == step]
if not mine:
    print("<none>"); sys.exit()
last = max(d["attempt"] for d in mine)
mine = sorted((d for d in mine if d["attempt"] == last), key=lambda d: d["offset"])
text, at = "", 0
for d in mine:
    assert d["offset"] == at, "gap at %d (%d)" % (at, d["offset"])
    t = texts[(d["step"], d["attempt"], d["offset"])]
    assert len(t.encode()) == d["length"], "length of the delta at %d" % at
    text += t; at += d["length"]
print(text)
PY
}
# payload_keys: the keys of every payload seen, and the largest payload
payload_info() {
    python3 - "$LISTEN_OUT" <<'PY'
import json, re, sys
keys, big, n = set(), 0, 0
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r'Asynchronous notification "agent_run_deltas" with payload "(.*)" received from server process', line)
    if m:
        n += 1; keys |= set(json.loads(m.group(1))); big = max(big, len(m.group(1).encode()))
print(",".join(sorted(keys)), big < 8000, n > 0)
PY
}
wait_deltas() {  # wait_deltas RUN STEP WANT
    local i
    for i in $(seq 1 50); do [ "$(deltas "$1" "$2")" = "$3" ] && break; sleep 0.1; done
    deltas "$1" "$2"
}
step_out() { q "SELECT regexp_replace(output::text, '(call|toolu)_[0-9]+_', '\\1_N_', 'g') FROM agent.run_steps WHERE run_id = $1 AND kind = 'llm' ORDER BY seq"; }

LONG=$(python3 -c 'print(" ".join("word%d é✓" % i for i in range(1200)))')

# --- OpenAI: a long answer in many chunks (and a 3-byte character cut anywhere)
a=$(mk_agent "gpt630")
llm_script "[[t630a]]" "[{\"text\": \"$LONG\", \"stream_chunk\": 5, \"usage\": {\"in\": 40, \"out\": 900, \"cached\": 16, \"reasoning\": 7}}]"
r=$(start_run "$a" '{"prompt": "long please [[t630a]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a streamed OpenAI run succeeds"
is "$(q "SELECT output->>'text' = '$LONG' FROM agent.runs WHERE id = $r")" "t" "the answer is the whole streamed text"
is "$(wait_deltas "$r" 1 "$LONG")" "$LONG" "the deltas on agent_run_deltas, in offset order, are the answer"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t630a]]"]
b=rs[0]["body"]; print(b.get("stream"), b.get("stream_options"), rs[0].get("streamed"), "text/event-stream" in rs[0]["headers"].get("accept",""))' "$reqs")" \
   "True {'include_usage': True} True True" "the request asks for a stream with the usage chunk"
is "$(q "SELECT tokens_in || '|' || tokens_out || '|' || tokens_cached FROM agent.runs WHERE id = $r")" "40|900|16" \
   "usage from the final usage chunk, cached tokens included"
streamed_step=$(step_out "$r")

# the same script without streaming records the same llm step
q "ALTER SYSTEM SET pg_agents.llm_stream = off" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
llm_script "[[t630b]]" "[{\"text\": \"$LONG\", \"usage\": {\"in\": 40, \"out\": 900, \"cached\": 16, \"reasoning\": 7}}]"
r2=$(start_run "$a" '{"prompt": "long please [[t630b]]"}')
is "$(wait_status "$r2" "succeeded|failed" 30)" "succeeded" "the same reply without streaming"
is "$(step_out "$r2")" "$streamed_step" "the llm step of the streamed reply is identical to the non-streamed one"
is "$(deltas "$r2" 1)" "<none>" "no deltas without streaming"
q "ALTER SYSTEM SET pg_agents.llm_stream = on" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5

# --- slow streams, several at once: text published while it arrives, each byte once
for k in 1 2 3 4; do
    llm_script "[[t630s$k]]" "[{\"text\": \"slow answer number $k, told in many small pieces over about a second\", \"stream_chunk\": 2, \"stream_delay\": 0.02}]"
done
rs=""
for k in 1 2 3 4; do rs="$rs $(start_run "$a" "{\"prompt\": \"slow [[t630s$k]]\"}")"; done
k=0; all=""
for r in $rs; do
    k=$((k+1)); wait_status "$r" "succeeded|failed" 30 >/dev/null
    all="$all|$(wait_deltas "$r" 1 "slow answer number $k, told in many small pieces over about a second")"
done
is "$all" "|slow answer number 1, told in many small pieces over about a second|slow answer number 2, told in many small pieces over about a second|slow answer number 3, told in many small pieces over about a second|slow answer number 4, told in many small pieces over about a second" \
   "slow concurrent streams: every byte of each answer notified exactly once, in order"
is "$(python3 - "$LISTEN_OUT" $rs <<'PY'
import json, re, sys
runs = set(int(x) for x in sys.argv[2:])
n = {}
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r'Asynchronous notification "agent_run_deltas" with payload "(.*)" received from server process', line)
    if m:
        d = json.loads(m.group(1))
        if d["run_id"] in runs:
            n[d["run_id"]] = n.get(d["run_id"], 0) + 1
print(all(v >= 2 for v in n.values()) and len(n) == len(runs))
PY
)" "True" "each slow answer came in several notifications while it streamed"

# --- OpenAI: parallel tool calls, arguments in fragments joined by index
q "CREATE TABLE IF NOT EXISTS public.w630_pages (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w630_pages;
   INSERT INTO public.w630_pages VALUES ('p630a', 'One', 'First page.'), ('p630b', 'Two', 'Second page.');
   SELECT agent.register_resource_table('page', 'public.w630_pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON public.w630_pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p630a', 'user:owner6', 'read'), ('page', 'p630b', 'user:owner6', 'read') ON CONFLICT DO NOTHING;" >/dev/null
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
   VALUES ($a, 'page', 'p630a', 'read'), ($a, 'page', 'p630b', 'read')" >/dev/null
script_tools='[{"tool_calls": [{"name": "read_resource", "input": {"resource_type": "page", "resource_id": "p630a"}},
                                {"name": "read_resource", "input": {"resource_type": "page", "resource_id": "p630b"}}],
                 "stream_chunk": 4},
               {"text": "Both read.", "stream_chunk": 3}]'
llm_script "[[t630c]]" "$script_tools"
r=$(start_run "$a" '{"prompt": "read both [[t630c]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "parallel tool calls in a stream"
is "$(q "SELECT string_agg(output->>'resource_id', ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind = 'read'")" \
   "p630a,p630b" "both calls executed with their whole arguments"
is "$(wait_deltas "$r" 2 "Both read.")" "Both read." "deltas of the second model call are step 2"
streamed_tools=$(step_out "$r")
q "ALTER SYSTEM SET pg_agents.llm_stream = off" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
llm_script "[[t630d]]" "$script_tools"
r2=$(start_run "$a" '{"prompt": "read both [[t630d]]"}')
wait_status "$r2" "succeeded|failed" 30 >/dev/null
is "$(step_out "$r2")" "$streamed_tools" "tool-call steps identical streamed and not (ids aside)"
q "ALTER SYSTEM SET pg_agents.llm_stream = on" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5

# --- Anthropic: tool_use through input_json_delta, pings, an unknown event
c=$(mk_agent "claude630" '{"llm_provider": "anthropic"}')
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($c, 'page', 'p630b', 'read')" >/dev/null
llm_script "[[t630e]]" '[{"text": "Looking.", "tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p630b"}, "stream_chunk": 3},
                          {"text": "It says: Second page.", "stream_chunk": 2, "usage": {"in": 12, "out": 6, "cached": 1000, "cache_write": 20}}]'
r=$(start_run "$c" '{"prompt": "what is p2 [[t630e]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a streamed Anthropic run with a tool call succeeds"
is "$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "It says: Second page." "its answer"
is "$(wait_deltas "$r" 1 "Looking.")|$(wait_deltas "$r" 2 "It says: Second page.")" "Looking.|It says: Second page." \
   "deltas of both model calls"
is "$(q "SELECT output->>'resource_id' FROM agent.run_steps WHERE run_id = $r AND kind = 'read'")" "p630b" \
   "the tool input assembled from input_json_delta"
is "$(q "SELECT tokens_in || '|' || tokens_cached FROM agent.runs WHERE id = $r")" "1042|1000" \
   "Anthropic usage: input + cache read + cache write tokens in (both calls), cache reads as cached"
streamed_a=$(step_out "$r")
q "ALTER SYSTEM SET pg_agents.llm_stream = off" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
llm_script "[[t630f]]" '[{"text": "Looking.", "tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p630b"}},
                          {"text": "It says: Second page.", "usage": {"in": 12, "out": 6, "cached": 1000, "cache_write": 20}}]'
r2=$(start_run "$c" '{"prompt": "what is p2 [[t630f]]"}')
wait_status "$r2" "succeeded|failed" 30 >/dev/null
is "$(step_out "$r2")" "$streamed_a" "Anthropic llm steps identical streamed and not (ids aside)"
q "ALTER SYSTEM SET pg_agents.llm_stream = on" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5

# --- a cut stream is retried like a failed request, for both formats
llm_script "[[t630g]]" '[{"text": "this stream breaks off in the middle", "stream_chunk": 3, "cut": 5},
                          {"text": "second try"}]'
r=$(start_run "$a" '{"prompt": "cut [[t630g]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "OpenAI: a cut stream is retried"
is "$(q "SELECT count(*) || '|' || bool_and(output->>'error' LIKE 'the LLM stream was cut after %') FROM agent.run_steps WHERE run_id = $r AND kind = 'error' AND status = 'retry'")" \
   "1|true" "one retry step says the stream was cut"
is "$(wait_deltas "$r" 1 "second try")" "second try" "the deltas of the last attempt are the answer"
llm_script "[[t630h]]" '[{"text": "cut here too", "stream_chunk": 2, "cut": 6}, {"text": "fine"}]'
r=$(start_run "$c" '{"prompt": "cut [[t630h]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)|$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "succeeded|fine" \
   "Anthropic: a cut stream is retried"

# --- an error event mid-stream (overloaded) is retried; one that persists fails the run
llm_script "[[t630i]]" '[{"text": "partial answer", "stream_error": {"type": "overloaded_error", "message": "Overloaded"}},
                          {"text": "recovered"}]'
r=$(start_run "$c" '{"prompt": "overload [[t630i]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)|$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "succeeded|recovered" \
   "an error event mid-stream is retried"
is "$(q "SELECT output->>'error' FROM agent.run_steps WHERE run_id = $r AND kind = 'error' AND status = 'retry'")" \
   "the LLM stream ended with an error event: overloaded_error: Overloaded" "the retry step keeps the event's type and message"
llm_script "[[t630l]]" '[{"text": "partial openai", "stream_error": {"type": "server_error", "message": "The server had an error"}},
                          {"text": "openai recovered"}]'
r=$(start_run "$a" '{"prompt": "oops [[t630l]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)|$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")|$(q "SELECT output->>'error' FROM agent.run_steps WHERE run_id = $r AND kind = 'error'")" \
   "succeeded|openai recovered|the LLM stream ended with an error event: server_error: The server had an error" \
   "OpenAI: an error chunk mid-stream is retried"
llm_script "[[t630m]]" '[{"text": "plain JSON after all", "no_stream": true}]'
r=$(start_run "$a" '{"prompt": "json [[t630m]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)|$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" \
   "succeeded|plain JSON after all" "a server that ignores \"stream\" and answers JSON is read as usual"
llm_script "[[t630j]]" '[{"text": "no", "repeat": true, "stream_error": {"type": "invalid_request_error", "message": "bad thing"}}]'
r=$(start_run "$c" '{"prompt": "bad [[t630j]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "an invalid_request_error event fails the run at once"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" "the LLM stream ended with an error event: invalid_request_error: bad thing" \
   "with the provider's message"

# --- an endless stream is bounded by pg_agents.max_reply_bytes like a body
q "ALTER SYSTEM SET pg_agents.max_reply_bytes = '8kB'" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
BIG=$(python3 -c 'print("z" * 30000)')
llm_script "[[t630n]]" "[{\"text\": \"$BIG\", \"stream_chunk\": 50}]"
r=$(start_run "$a" '{"prompt": "endless [[t630n]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)|$(q "SELECT error FROM agent.runs WHERE id = $r")|$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND status = 'retry'")" \
   "failed|the LLM reply is larger than pg_agents.max_reply_bytes (8192 bytes): the worker stopped reading it|0" \
   "a stream past pg_agents.max_reply_bytes is cut there and fails the run, without retries"
q "ALTER SYSTEM RESET pg_agents.max_reply_bytes" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5

# --- two workspaces: a run of w7 streams too; payloads carry only ids and text
b=$(mk_agent "other630" '{}' none '[]' 10 w7 owner7)
llm_script "[[t630k]]" '[{"text": "secret of w7"}]'
r7=$(start_run "$b" '{"prompt": "w7 [[t630k]]"}' autonomous owner7)
is "$(wait_status "$r7" "succeeded|failed" 30)" "succeeded" "a run of another workspace"
is "$(wait_deltas "$r7" 1 "secret of w7")" "secret of w7" \
   "its deltas are read through agent.run_deltas bound to its workspace"
# --- a chat run of agent.send_message: its deltas name the conversation
c=$(mk_agent "chat630")
q "INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by) VALUES ('w6', $c, 'u630', 'interact', 'owner6')" >/dev/null
llm_script "[[t630c]]" '[{"text": "hello from the chat", "stream_chunk": 4}]'
cr=$(psql -XAtq -U s630_app -c "SET pg_agents.workspace = 'w6'" \
        -c "SELECT conversation_id || '|' || run_id FROM agent.send_message($c, 'u630', 'hi [[t630c]]')" 2>&1)
conv=${cr%|*}; rc=${cr#*|}
is "$(wait_status "$rc" "succeeded|failed" 30)" "succeeded" "a chat run streams"
is "$(wait_deltas "$rc" 1 "hello from the chat")" "hello from the chat" "its deltas carry the answer"
is "$(python3 - "$LISTEN_OUT" "$rc" <<'PY'
import json, re, sys
ids = set()
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r'Asynchronous notification "agent_run_deltas" with payload "(.*)" received from server process', line)
    if m:
        d = json.loads(m.group(1))
        if d["run_id"] == int(sys.argv[2]):
            ids.add(d.get("conversation_id"))
print(",".join(str(i) for i in sorted(ids, key=str)))
PY
)" "$conv" "and the conversation id of agent.send_message"
is "$(python3 - "$LISTEN_OUT" "$r7" <<'PY'
import json, re, sys
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r'Asynchronous notification "agent_run_deltas" with payload "(.*)" received from server process', line)
    if m and json.loads(m.group(1))["run_id"] == int(sys.argv[2]) and "conversation_id" in json.loads(m.group(1)):
        print("has"); break
else:
    print("none")
PY
)" "none" "an autonomous run's deltas carry no conversation id"
is "$(payload_info)" "attempt,conversation_id,length,offset,run_id,step True True" \
   "payloads hold only ids: run id, conversation id (chat runs), step, attempt, offset and length"
# the application bound to w6 reads none of w7's text, nor does a user who may not see the run
is "$(psql -XAtq -U s630_app -c "SET pg_agents.workspace = 'w6'" -c "SELECT count(*) FROM agent.run_deltas($r7, 'owner7')" 2>&1)" "0" \
   "agent.run_deltas of another workspace's run gives nothing"
is "$(psql -XAtq -U s630_app -c "SET pg_agents.workspace = 'w7'" -c "SELECT count(*) FROM agent.run_deltas($r7, 'stranger630')" 2>&1)" "0" \
   "agent.run_deltas of a run the user may not see gives nothing"
is "$(psql -XAtq -U s630_app -c "SET pg_agents.workspace = 'w7'" -c "SELECT string_agg(text, '' ORDER BY step, attempt, \"offset\") FROM agent.run_deltas($r7, 'owner7')" 2>&1)" "secret of w7" \
   "and the text to the run's workspace and its user"
is "$(psql -XAtq -U s630_nobody -c "SELECT count(*) FROM agent.run_deltas($r7, 'owner7')" 2>&1 | grep -c 'permission denied')" "1" \
   "a role with no grants cannot call agent.run_deltas"
# a role with no grants receives nothing it could not have guessed: it cannot read the run
is "$(psql -XAtq -U s630_nobody -c "SET pg_agents.workspace = 'w7'" -c "SELECT count(*) FROM agent.runs WHERE id = $r7" 2>&1 | grep -c 'permission denied')" "1" \
   "a role with no grants cannot read the run behind a delta"

listen_stop
[ -n "${DEBUG630:-}" ] && q "SELECT run_id, kind, name, status, left(output::text, 300) FROM agent.run_steps WHERE run_id IN (SELECT id FROM agent.runs) ORDER BY run_id, seq" >&2
q "ALTER SYSTEM RESET pg_agents.llm_stream" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
q "DROP ROLE s630_app; DROP ROLE s630_nobody" >/dev/null
done_testing
