#!/usr/bin/env bash
# Worker: a write pauses for approval, resumes after approve and executes once;
# a denied approval is reported to the model.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "CREATE TABLE IF NOT EXISTS public.w602_pages (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w602_pages;
   INSERT INTO public.w602_pages VALUES ('p602', 'Status', 'old body'), ('p602b', 'Status B', 'old body b');
   SELECT agent.register_resource_table('page', 'public.w602_pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON public.w602_pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p602', 'user:owner6', 'edit'), ('page', 'p602b', 'user:owner6', 'edit') ON CONFLICT DO NOTHING;" >/dev/null
a=$(mk_agent "writer602" '{}' writes)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($a, 'page', 'p602', 'edit'), ($a, 'page', 'p602b', 'edit')" >/dev/null

llm_script "[[t602a]]" '[{"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p602", "body": "new body"}},
                          {"text": "written"}]'
r=$(start_run "$a" '{"prompt": "Update the status [[t602a]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "the write pauses the run"
is "$(q "SELECT body FROM public.w602_pages WHERE id = 'p602'")" "old body" "nothing written before approval"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
ok "$([ -n "$key" ] && echo 0 || echo 1)" "a pending approval exists"
is "$(q "SELECT status FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")" "pending" "an approval step records the request"
ok "$(q "SELECT state->'pending' IS NOT NULL FROM agent.run_state WHERE run_id = $r")" "the conversation is saved for the resume"
q "SELECT agent.approve('$key', 'owner6')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "after approve the run resumes and finishes"
is "$(q "SELECT body FROM public.w602_pages WHERE id = 'p602'")" "new body" "the approved write happened"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND kind = 'write'")" "1" "exactly one write step"
ok "$(q "SELECT consumed_at IS NOT NULL FROM agent.approvals WHERE approval_key = '$key'")" "the approval is consumed"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t602a]]"]
print(len(rs), json.loads([m["content"] for m in rs[1]["body"]["messages"] if m["role"]=="tool"][0]))' "$reqs")" \
   "2 {'updated': 1}" "two model calls; the second sees the write result"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE run_id = $r AND target_id = 'p602' AND status = 'denied'")" "0" "no refusal audited"

# denial
llm_script "[[t602b]]" '[{"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p602b", "body": "nope"}},
                          {"text": "understood"}]'
r=$(start_run "$a" '{"prompt": "Update B [[t602b]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "second write pauses"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.deny('$key', 'owner6')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "a denied approval ends the run"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" "denied by owner6" "with who denied it"
is "$(q "SELECT body FROM public.w602_pages WHERE id = 'p602b'")" "old body b" "the denied write never happened"
for i in $(seq 1 100); do [ "$(q "SELECT count(*) FROM agent.run_state WHERE run_id = $r")" = 0 ] && break; sleep 0.1; done
is "$(q "SELECT count(*) FROM agent.run_state WHERE run_id = $r")" "0" "the saved conversation is dropped once the run has ended"

# approval_mode all: even a read pauses; scope.needs_approval marks one tool
b=$(mk_agent "careful602" '{"needs_approval": ["search_resources"]}' none)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($b, 'page', 'p602', 'read')" >/dev/null
llm_script "[[t602c]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p602"}},
                          {"tool": "search_resources", "input": {"query": "status"}}, {"text": "ok"}]'
r=$(start_run "$b" '{"prompt": "Look [[t602c]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "a tool listed in scope.needs_approval pauses"
is "$(q "SELECT tool FROM agent.approvals WHERE run_id = $r")" "search_resources" "for that tool only (the read went through)"
done_testing
