#!/usr/bin/env bash
# Teams: follow-ups sent to a running run reach the model at the next safe
# point, in order and exactly once, across a worker crash; a follow-up that
# arrives during a final answer makes the run go on; NOTIFY agent_run_steps
# is received by a listening session; sending to a finished run is refused.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
a=$(mk_agent "team900")

wait_requests() {  # waits until the scripted server received N requests carrying KEY
    local i
    for i in $(seq 1 300); do
        [ "$(llm_requests | python3 -c '
import json,sys; print(sum(1 for r in json.load(sys.stdin) if r["key"]==sys.argv[1]))' "$1")" -ge "$2" ] && return 0
        sleep 0.05
    done
    return 1
}
worker_pid() { q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'"; }
# user messages of the last request of KEY that carry a follow-up, one a line
followups() {
    llm_requests | python3 -c '
import json,sys
rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
for m in rs[-1]["body"]["messages"]:
    if m["role"]=="user" and "Follow-up" in (m["content"] or ""): print(m["content"].splitlines()[-1])' "$1"
}

# 1. two follow-ups during the first call, one during the second, then the worker dies
llm_script "[[t900a]]" '[{"latency": 4, "tool": "lookup_weather", "input": {"city": "Lyon"}},
                         {"latency": 8, "text": "lost"}, {"text": "final answer"}]'
r=$(start_run "$a" '{"prompt": "work [[t900a]]"}' manual owner6)
wait_requests "[[t900a]]" 1
q "SELECT agent.send_to_run($r, 'first follow-up', 'owner6')" >/dev/null
q "SELECT agent.send_to_run($r, 'second follow-up', 'owner6')" >/dev/null
wait_requests "[[t900a]]" 2
is "$(followups "[[t900a]]" | tr '\n' ',')" "first follow-up,second follow-up," \
   "the follow-ups reach the next model turn, in order"
is "$(q "SELECT count(*) FROM agent.run_messages WHERE run_id = $r AND delivered_at IS NOT NULL")" "2" \
   "they are marked delivered with the turn"
# (the test cluster runs with synchronous_commit off: make this commit survive the crash)
q "SET synchronous_commit = on; SELECT agent.send_to_run($r, 'third follow-up', 'owner6')" >/dev/null
old=$(worker_pid)
is "$(q "SELECT status FROM agent.runs WHERE id = $r")" "running" "the run is still running when the worker dies"
kill -9 "$old"
for i in $(seq 1 200); do psql -XAtqc "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the run completes after the worker crash"
is "$(followups "[[t900a]]" | tr '\n' ',')" "first follow-up,second follow-up,third follow-up," \
   "after the restart every follow-up is in the conversation exactly once, in order"
is "$(q "SELECT count(*) FROM agent.run_messages WHERE run_id = $r AND delivered_at IS NULL")" "0" \
   "nothing is left undelivered"
is "$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "final answer" "with the final answer"

# 2. refused once finished
is "$(psql -XAtq -c "SELECT agent.send_to_run($r, 'too late', 'owner6')" 2>&1 | grep -o 'ERROR: .*')" \
   "ERROR:  run $r has already ended" "sending to a finished run is refused"

# 3. a follow-up arriving while the model gives its final answer: the run goes on
llm_script "[[t900b]]" '[{"latency": 4, "text": "first answer"}, {"text": "second answer"}]'
out=$(mktemp)
psql -XAtq -c "LISTEN agent_run_steps" -c "SELECT pg_sleep(10)" -c "SELECT 'listener done'" >"$out" 2>&1 &
lpid=$!
sleep 0.5
r=$(start_run "$a" '{"prompt": "answer [[t900b]]"}' manual owner6)
wait_requests "[[t900b]]" 1
q "SELECT agent.send_to_run($r, 'one more thing', 'owner6')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the run succeeds"
is "$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "second answer" \
   "a follow-up received during the final call gets its own turn"
is "$(followups "[[t900b]]")" "one more thing" "the second call carries the follow-up"
ok "$(q "SELECT current_step = 'run' OR current_step LIKE 'llm:%' FROM agent.runs WHERE id = $r")" "current_step is kept"
wait "$lpid"
n=$(grep -c "Asynchronous notification \"agent_run_steps\" with payload \"{\\\"run_id\\\" : $r," "$out")
ok "$([ "$n" -ge 3 ] && echo 0 || echo 1)" "a listening session receives NOTIFY agent_run_steps for the run's steps ($n)"
mseq=$(q "SELECT min(seq) FROM agent.run_steps WHERE run_id = $r AND kind = 'message' AND name = 'delivered'")
ok "$(grep "agent_run_steps" "$out" | grep "\"run_id\" : $r," | grep -q "\"seq\" : $mseq," && echo 0 || echo 1)" \
   "the payload carries the step's seq (its label is read through agent.run_detail)"
ok "$(grep "agent_run_steps" "$out" | grep -q '"step"' && echo 1 || echo 0)" \
   "and no step label (ids and a status code only)"
ok "$(grep "agent_run_steps" "$out" | grep "\"run_id\" : $r," | grep -q "\"root_run_id\" : $r" && echo 0 || echo 1)" \
   "and the root run id"
rm -f "$out"
done_testing
