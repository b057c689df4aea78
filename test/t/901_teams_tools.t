#!/usr/bin/env bash
# Teams tools: a lead spawns a child with agent_teams (without waiting),
# lists it; the child asks its parent with ask_parent and waits in
# waiting_input; the question reaches the lead as a message; the lead looks
# at the child's status, answers with send, waits for it and reads its result.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

c=$(mk_agent "researcher901")
p=$(mk_agent "lead901" '{}' none "[$c]")

reqs_of() {  # the requests of KEY, as JSON
    llm_requests | python3 -c '
import json,sys; print(json.dumps([r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]))' "$1"
}
tools_of() {  # tool names offered in the first request of KEY (the teams tools and the readers: the row tools update_row, add_row and add_comment left out)
    reqs_of "$1" | python3 -c 'import json,sys; print(",".join(sorted(t["function"]["name"] for t in json.load(sys.stdin)[0]["body"]["tools"] if t["function"]["name"] not in ("update_row", "add_row", "add_comment"))))'
}
results_of() {  # tool results in the last request of KEY, one a line
    reqs_of "$1" | python3 -c '
import json,sys
for m in json.load(sys.stdin)[-1]["body"]["messages"]:
    if m["role"]=="tool": print(m["content"])'
}
wait_sql() {  # waits until the SQL returns t
    local i
    for i in $(seq 1 400); do [ "$(q "$1")" = t ] && return 0; sleep 0.05; done
    return 1
}

llm_script "[[t901c]]" '[{"tool": "ask_parent", "input": {"question": "In which unit?"}}, {"text": "42 meters"}]'
llm_script "[[t901-lead-run]]" "[{\"tool\": \"agent_teams\", \"input\": {\"action\": \"spawn\", \"agent_id\": $c, \"task\": \"measure it [[t901c]]\"}},
                         {\"latency\": 5, \"tool\": \"agent_teams\", \"input\": {\"action\": \"list\"}}]"
r=$(start_run "$p" '{"prompt": "lead the team [[t901-lead-run]]"}')
wait_sql "SELECT EXISTS (SELECT 1 FROM agent.runs WHERE parent_run_id = $r)"
child=$(q "SELECT id FROM agent.runs WHERE parent_run_id = $r")
wait_sql "SELECT status = 'waiting_input' FROM agent.runs WHERE id = $child"
is "$(q "SELECT status FROM agent.runs WHERE id = $child")" "waiting_input" "the child waits for an answer in waiting_input"
is "$(q "SELECT status FROM agent.runs WHERE id = $r")" "running" "the lead went on without waiting for its child"
is "$(q "SELECT sender || ' ' || kind || ' ' || body FROM agent.run_messages WHERE run_id = $r")" \
   "run:$child question In which unit?" "the question is a message to the lead"
# the rest of the lead's script, now that the child's id is known
llm_script "[[t901-lead-run]]" "[{\"tool\": \"agent_teams\", \"input\": {\"action\": \"status\", \"run_id\": $child}},
                         {\"tool\": \"agent_teams\", \"input\": {\"action\": \"send\", \"run_id\": $child, \"message\": \"in meters\"}},
                         {\"tool\": \"agent_teams\", \"input\": {\"action\": \"wait\", \"run_id\": $child}},
                         {\"tool\": \"agent_teams\", \"input\": {\"action\": \"read_result\", \"run_id\": $child}},
                         {\"tool\": \"agent_teams\", \"input\": {\"action\": \"status\", \"run_id\": 999999}},
                         {\"text\": \"team done\"}]"
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the lead succeeds"
is "$(q "SELECT status || ' ' || (output->>'text') FROM agent.runs WHERE id = $child")" "succeeded 42 meters" \
   "the child got its answer and succeeded"

is "$(tools_of "[[t901-lead-run]]")" "agent_teams,delegate_to_agent,read_resource,search_resources,write_resource" \
   "a delegating root run is offered agent_teams, not ask_parent"
is "$(tools_of "[[t901c]]")" "ask_parent,read_resource,search_resources,write_resource" \
   "a child run is offered ask_parent"

res=$(results_of "[[t901-lead-run]]")
ok "$(echo "$res" | sed -n 1p | grep -q "\"child_run_id\":$child" && echo 0 || echo 1)" "spawn returns the child run id"
ok "$(echo "$res" | sed -n 2p | grep -q "\"agent\":\"researcher901\".*\"run_id\":$child" && echo 0 || echo 1)" "list shows the child"
ok "$(reqs_of "[[t901-lead-run]]" | python3 -c "
import json,sys; rs=json.load(sys.stdin)
print(0 if any('Question from your child run $child' in (m.get('content') or '') and 'In which unit?' in m['content']
               for m in rs[2]['body']['messages'] if m['role']=='user') else 1)")" \
   "the lead's next turn carries the child's question"
ok "$(echo "$res" | sed -n 3p | grep '"current_step":"message:ask_parent"' | grep -q '"status":"waiting_input' && echo 0 || echo 1)" \
   "status shows the child's status and current step"
ok "$(echo "$res" | sed -n 4p | grep -q '"sent":true' && echo 0 || echo 1)" "send delivers the answer"
ok "$(echo "$res" | sed -n 5p | grep -q '"status":"succeeded".*42 meters' && echo 0 || echo 1)" "wait returns the child's result"
ok "$(echo "$res" | sed -n 6p | grep '"finished":true' | grep -q '42 meters' && echo 0 || echo 1)" "read_result reads it"
ok "$(echo "$res" | sed -n 7p | grep -q 'is not one of your child runs' && echo 0 || echo 1)" "another run is refused"

ok "$(reqs_of "[[t901c]]" | python3 -c '
import json,sys; rs=json.load(sys.stdin)
print(0 if len(rs)==2 and any(m["role"]=="tool" and "in meters" in m["content"] for m in rs[1]["body"]["messages"]) else 1)')" \
   "the child resumes with the answer as the result of ask_parent"
is "$(q "SELECT string_agg(kind || ':' || name || ':' || status, ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $child AND kind = 'message'")" \
   "message:ask_parent:waiting_input,message:ask_parent:answered" "the child's steps show the question and the answer"
is "$(q "SELECT string_agg(kind || ':' || sender, ',' ORDER BY seq) FROM agent.run_messages WHERE run_id = $child")" \
   "answer:run:$r" "the answer came from the lead"
is "$(q "SELECT string_agg(depth || ':' || agent_name || ':' || status, ',') FROM agent.run_tree($r)")" \
   "0:lead901:succeeded,1:researcher901:succeeded" "run_tree shows the team"
# 2. a lead blocked in delegate_to_agent gets the child's question as the result of its wait
llm_script "[[t901d]]" '[{"latency": 3, "tool": "ask_parent", "input": {"question": "Metric or imperial?"}}, {"text": "12 feet"}]'
llm_script "[[t901-blocked-lead]]" "[{\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $c, \"task\": \"measure [[t901d]]\"}}]"
r2=$(start_run "$p" '{"prompt": "lead blocked [[t901-blocked-lead]]"}')
wait_sql "SELECT EXISTS (SELECT 1 FROM agent.runs WHERE parent_run_id = $r2)"
child2=$(q "SELECT id FROM agent.runs WHERE parent_run_id = $r2")
llm_script "[[t901-blocked-lead]]" "[{\"tool\": \"agent_teams\", \"input\": {\"action\": \"send\", \"run_id\": $child2, \"message\": \"imperial\"}},
                                     {\"tool\": \"agent_teams\", \"input\": {\"action\": \"wait\", \"run_id\": $child2}},
                                     {\"text\": \"blocked lead done\"}]"
is "$(wait_status "$r2" "succeeded|failed" 60)" "succeeded" "the blocked lead succeeds"
res=$(results_of "[[t901-blocked-lead]]")
ok "$(echo "$res" | sed -n 1p | grep '"status":"waiting_input"' | grep -q 'Metric or imperial?' && echo 0 || echo 1)" \
   "the child's question ends the parent's delegate_to_agent wait"
ok "$(echo "$res" | sed -n 3p | grep -q '12 feet' && echo 0 || echo 1)" "after the answer the parent waits again and gets the result"
is "$(q "SELECT count(*) FROM agent.run_messages WHERE run_id = $r2 AND kind = 'question' AND delivered_at IS NOT NULL")" "1" \
   "the question was delivered once, through the wait"
# 3. spawn keeps to the agents the run's identity may see, as delegate_to_agent
#    does: a user's manual run of a lead whose list names an agent hidden from
#    that user cannot start it through agent_teams (the attack: a user with
#    interact on the lead runs an agent of the owner's it was never shared)
h=$(mk_agent "hidden901")
p3=$(mk_agent "lead901b" '{}' none "[$c, $h]")
q "INSERT INTO agent.shares (agent_id, user_id, level) VALUES ($p3, 'u901', 'interact'), ($c, 'u901', 'interact')" >/dev/null
llm_script "[[t901-spawn-hidden]]" "[{\"tool\": \"agent_teams\", \"input\": {\"action\": \"spawn\", \"agent_id\": $h, \"task\": \"do it [[t901h]]\"}},
                                     {\"text\": \"spawn tried\"}]"
llm_script "[[t901h]]" '[{"text": "hidden agent ran"}]'
r3=$(start_run "$p3" '{"prompt": "spawn the hidden one [[t901-spawn-hidden]]"}' manual u901)
is "$(wait_status "$r3" "succeeded|failed" 60)" "succeeded" "the user's lead run ends"
is "$(q "SELECT count(*) FROM agent.runs WHERE parent_run_id = $r3 OR agent_id = $h")" "0" \
   "no run of the hidden agent was started by the spawn"
contains "$(results_of "[[t901-spawn-hidden]]" | sed -n 1p)" "is not one you may delegate to" "the spawn is refused with the reason"
done_testing
