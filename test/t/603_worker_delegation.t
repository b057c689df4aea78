#!/usr/bin/env bash
# Worker: delegation to a child that succeeds and to one that fails; the
# parent waits for the child's result and gets a motivated failure result.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

c1=$(mk_agent "child603ok")
c2=$(mk_agent "child603bad")
c3=$(mk_agent "stranger603")
p=$(mk_agent "parent603" '{}' none "[$c1, $c2]")

# the delegate tool is offered only when the delegation list is not empty
llm_script "[[t603-solo]]" '[{"text": "alone"}]'
r=$(start_run "$c3" '{"prompt": "x [[t603-solo]]"}')
wait_status "$r" "succeeded|failed" 30 >/dev/null
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t603-solo]]"]
print(",".join(sorted(t["function"]["name"] for t in rs[0]["body"]["tools"])))' "$reqs")" \
   "add_comment,add_row,read_resource,search_resources,update_row,write_resource" "no delegate_to_agent without a delegation list"

llm_script "[[c603ok]]" '[{"text": "child says 42"}]'
llm_script "[[c603bad]]" '[{"malformed": true}]'
llm_script "[[t603-parent-run]]" "[{\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $c1, \"task\": \"compute [[c603ok]]\"}},
                                   {\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $c2, \"task\": \"try [[c603bad]]\"}},
                                   {\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $c3, \"task\": \"nope\"}},
                                   {\"text\": \"parent done\"}]"
r=$(start_run "$p" '{"prompt": "Coordinate [[t603-parent-run]]"}')
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the parent run succeeds"
is "$(q "SELECT string_agg(status, ',' ORDER BY id) FROM agent.runs WHERE parent_run_id = $r")" "succeeded,failed" \
   "two child runs: one succeeded, one failed"
is "$(q "SELECT count(*) FROM agent.runs WHERE parent_run_id = $r AND origin = 'delegation' AND input->>'task' LIKE 'compute%'")" "1" \
   "the child got the task as input"
reqs=$(llm_requests)
tools=$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t603-parent-run]]"]
for m in rs[-1]["body"]["messages"]:
    if m["role"]=="tool": print(m["content"])' "$reqs")
ok "$(echo "$tools" | sed -n 1p | grep -q '"status":"succeeded".*child says 42' && echo 0 || echo 1)" "the parent receives the child's answer"
ok "$(echo "$tools" | sed -n 2p | grep -q '"error":"the delegated run failed: malformed response' && echo 0 || echo 1)" \
   "the parent receives a motivated failure result"
ok "$(echo "$tools" | sed -n 3p | grep -q 'delegation refused' && echo 0 || echo 1)" "delegating outside the list is refused"
is "$(q "SELECT string_agg(kind || ':' || status, ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind IN ('delegate', 'denied')")" \
   "delegate:ok,delegate:error,denied:denied" "delegate steps (with the child's outcome) and the refused delegation recorded"
ok "$(q "SELECT tokens_total > tokens_in + tokens_out FROM agent.runs WHERE id = $r")" "child tokens roll up to the parent"
done_testing
