#!/usr/bin/env bash
# manage_jobs: an agent creates, lists and updates its own schedules; an
# invalid schedule is refused; a deletion pauses for approval and runs once
# approved.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
a=$(mk_agent "jobs902" '{"manage_jobs": true}')

results_of() {  # tool results in the last request of KEY, one a line
    llm_requests | python3 -c '
import json,sys
rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
for m in rs[-1]["body"]["messages"]:
    if m["role"]=="tool": print(m["content"])' "$1"
}

llm_script "[[t902a]]" '[{"tool": "manage_jobs", "input": {"action": "create", "schedule": "0 9 * * 1-5", "prompt": "daily digest"}},
                         {"tool": "manage_jobs", "input": {"action": "create", "schedule": "99 * * * *", "prompt": "never"}},
                         {"text": "scheduled"}]'
r=$(start_run "$a" '{"prompt": "schedule it [[t902a]]"}' manual owner6)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the run succeeds"
job=$(q "SELECT id FROM agent.triggers WHERE agent_id = $a")
is "$(q "SELECT kind || ' ' || schedule || ' ' || prompt || ' ' || run_as || ' ' || created_by || ' ' || (next_run_at > now()) FROM agent.triggers WHERE agent_id = $a")" \
   "schedule 0 9 * * 1-5 daily digest creator owner6 true" "create made one personal schedule trigger, run as its creator, with its next run"
res=$(results_of "[[t902a]]")
ok "$(echo "$res" | sed -n 1p | grep -q "\"job_id\":$job" && echo 0 || echo 1)" "the model gets the job id"
ok "$(echo "$res" | sed -n 2p | grep -q 'invalid schedule \\"99 \* \* \* \*\\"' && echo 0 || echo 1)" "an invalid schedule is refused"

llm_script "[[t902b]]" "[{\"tool\": \"manage_jobs\", \"input\": {\"action\": \"update\", \"job_id\": $job, \"schedule\": \"30 8 * * *\", \"scope\": \"shared\"}},
                         {\"tool\": \"manage_jobs\", \"input\": {\"action\": \"list\"}},
                         {\"tool\": \"manage_jobs\", \"input\": {\"action\": \"delete\", \"job_id\": $job}},
                         {\"text\": \"cleaned up\"}]"
r=$(start_run "$a" '{"prompt": "change it [[t902b]]"}' manual owner6)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "delete pauses the run for approval"
is "$(q "SELECT schedule || ' ' || run_as FROM agent.triggers WHERE id = $job")" "30 8 * * * shared" "update changed the schedule and the scope"
is "$(q "SELECT count(*) FROM agent.triggers WHERE id = $job")" "1" "the job is still there while the deletion waits"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending' AND tool = 'manage_jobs'")
ok "$([ -n "$key" ] && echo 0 || echo 1)" "a pending approval for manage_jobs"
q "SELECT agent.approve('$key', 'owner6')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "once approved the run goes on"
is "$(q "SELECT count(*) FROM agent.triggers WHERE id = $job")" "0" "and the job is deleted"
res=$(results_of "[[t902b]]")
ok "$(echo "$res" | sed -n 2p | grep -q "\"jobs\":\[{.*\"job_id\":$job" && echo 0 || echo 1)" "list shows the job"
ok "$(echo "$res" | sed -n 3p | grep -q '"deleted":true' && echo 0 || echo 1)" "the model is told it was deleted"
is "$(q "SELECT string_agg(action, ',' ORDER BY id) FROM agent.audit_log WHERE action LIKE 'job.%' AND target_id = '$job'")" \
   "job.create,job.update,job.delete" "create, update and delete are audited"
done_testing
