#!/usr/bin/env bash
# Ids in tool arguments are read strictly (issue 36, finding 6): "1abc",
# "1.0", " 1", "", 1.0, 0 and an out-of-range number given as agent_id to
# delegate_to_agent and agent_teams, or as job_id to manage_jobs, are a tool
# error the model sees -- never read as agent 1 -- and the run goes on (a
# number past bigint already makes the arguments unreadable JSON: the tool
# error says so).
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

c=$(mk_agent "child903")
p=$(mk_agent "lead903" '{"manage_jobs": true}' none "[$c]" 40)

results_of() {  # tool results in the last request of KEY, one a line
    llm_requests | python3 -c '
import json,sys
rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
for m in rs[-1]["body"]["messages"]:
    if m["role"]=="tool": print(m["content"])' "$1"
}

calls=$(python3 -c '
import json,sys
c=sys.argv[1]
bad=[c+"abc", c+".0", " "+c, "", float(c), 0, -int(c), "99999999999999999999", 99999999999999999999]
out=[]
for b in bad:
    out.append({"tool": "delegate_to_agent", "input": {"agent_id": b, "task": "t"}})
    out.append({"tool": "agent_teams", "input": {"action": "spawn", "agent_id": b, "task": "t"}})
out.append({"tool": "agent_teams", "input": {"action": "status", "run_id": "1abc"}})
out.append({"tool": "manage_jobs", "input": {"action": "update", "job_id": "1abc", "prompt": "x"}})
out.append({"tool": "manage_jobs", "input": {"action": "delete", "job_id": "1.0"}})
out.append({"text": "none of them worked"})
print(json.dumps(out))' "$c")
llm_script "[[t903a]]" "$calls"
r=$(start_run "$p" '{"prompt": "delegate with odd ids [[t903a]]"}')
is "$(wait_status "$r" "succeeded|failed|waiting_children" 60)" "succeeded" "the run goes on and ends normally"
is "$(q "SELECT count(*) FROM agent.runs WHERE parent_run_id = $r")" "0" "no child run was started from a malformed id"
res=$(results_of "[[t903a]]")
n=$(echo "$res" | grep -c .)
is "$n" "21" "every call got a result"
ok "$(echo "$res" | grep -v 'must be a JSON object\|needs an integer agent_id\|agent_id must be a positive integer\|run_id must be a positive integer\|job_id must be a positive integer\|spawn needs an integer agent_id' | grep -q . && echo 1 || echo 0)" \
   "each result is the tool error naming the malformed id"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND status = 'error'")" "$n" "each is recorded as an error step"

# a well-formed string id still works
llm_script "[[t903b]]" "[{\"tool\": \"agent_teams\", \"input\": {\"action\": \"spawn\", \"agent_id\": \"$c\", \"task\": \"fine [[t903c]]\"}}, {\"text\": \"spawned\"}]"
llm_script "[[t903c]]" '[{"text": "child done"}]'
r=$(start_run "$p" '{"prompt": "delegate properly [[t903b]]"}')
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "a run spawning with a digits-only string id succeeds"
is "$(q "SELECT count(*) FROM agent.runs WHERE parent_run_id = $r AND agent_id = $c")" "1" "and its child runs"
done_testing
