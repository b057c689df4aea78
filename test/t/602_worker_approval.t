#!/usr/bin/env bash
# Worker: a write pauses for approval, resumes after approve and executes once;
# a denied call is refused to the model and the run goes on (deny_ends_run:
# the run fails, as in 0.3.0); one decision never decides another call.
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

# denial: the model is told that the person declined (with the reason), the run goes on
llm_script "[[t602b]]" '[{"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p602b", "body": "nope"}},
                          {"text": "understood"}]'
r=$(start_run "$a" '{"prompt": "Update B [[t602b]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "second write pauses"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.deny('$key', 'owner6', NULL, 'not before the review on Monday')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a denied call does not end the run: it resumes and finishes"
is "$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "understood" "with the model's answer to the refusal"
is "$(q "SELECT body FROM public.w602_pages WHERE id = 'p602b'")" "old body b" "the denied write never happened"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND kind = 'write'")" "0" "no write step"
is "$(q "SELECT string_agg(status, ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")" "pending,denied" \
   "approval steps: the request, then the refusal delivered"
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t602b]]"]
t=[m["content"] for m in rs[-1]["body"]["messages"] if m["role"]=="tool"]
print(len(rs), json.loads(t[0]))' "$(llm_requests)")" \
   "2 {'error': 'the person declined this call', 'reason': 'not before the review on Monday'}" \
   "the next request carries the refusal as the call's result, with the reason"
ok "$(q "SELECT consumed_at IS NOT NULL AND reason = 'not before the review on Monday' FROM agent.approvals WHERE approval_key = '$key'")" \
   "the refusal was delivered once (consumed), the reason kept"
for i in $(seq 1 100); do [ "$(q "SELECT count(*) FROM agent.run_state WHERE run_id = $r")" = 0 ] && break; sleep 0.1; done
is "$(q "SELECT count(*) FROM agent.run_state WHERE run_id = $r")" "0" "the saved conversation is dropped once the run has ended"

# the same call asked again later is a new call: it asks again (a denial decides one call)
llm_script "[[t602d]]" '[{"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p602b", "body": "nope"}},
                          {"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p602b", "body": "nope"}},
                          {"text": "done"}]'
r=$(start_run "$a" '{"prompt": "Twice [[t602d]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "first attempt pauses"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.deny('$key', 'owner6')" >/dev/null
for i in $(seq 1 200); do [ "$(q "SELECT count(*) FROM agent.approvals WHERE run_id = $r")" = 2 ] && break; sleep 0.05; done
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "the identical second attempt asks again"
is "$(q "SELECT string_agg(status, ',' ORDER BY id) FROM agent.approvals WHERE run_id = $r")" "denied,pending" "a new pending approval"
q "SELECT agent.approve('$key', 'owner6')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "approved, the run finishes"
is "$(q "SELECT body FROM public.w602_pages WHERE id = 'p602b'")" "nope" "only the approved call wrote"
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t602d]]"]
t=[m["content"] for m in rs[1]["body"]["messages"] if m["role"]=="tool"]
print(json.loads(t[0]))' "$(llm_requests)")" "{'error': 'the person declined this call'}" "without a reason, the refusal alone"
q "UPDATE public.w602_pages SET body = 'old body b' WHERE id = 'p602b'" >/dev/null

# deny_ends_run: the agent keeps the 0.3.0 behaviour (the run fails)
e=$(mk_agent "strict602" '{"deny_ends_run": true}' writes)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($e, 'page', 'p602b', 'edit')" >/dev/null
llm_script "[[t602e]]" '[{"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p602b", "body": "nope"}},
                          {"text": "understood"}]'
r=$(start_run "$e" '{"prompt": "Update B [[t602e]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "deny_ends_run: the write pauses"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.deny('$key', 'owner6')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "deny_ends_run: a denied approval ends the run"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" "denied by owner6" "with who denied it"
is "$(q "SELECT body FROM public.w602_pages WHERE id = 'p602b'")" "old body b" "the denied write never happened"
is "$(python3 -c '
import json,sys; print(len([r for r in json.loads(sys.argv[1]) if r["key"]=="[[t602e]]"]))' "$(llm_requests)")" "1" \
   "the model was not called again"
for i in $(seq 1 100); do [ "$(q "SELECT count(*) FROM agent.run_state WHERE run_id = $r")" = 0 ] && break; sleep 0.1; done
is "$(q "SELECT count(*) FROM agent.run_state WHERE run_id = $r")" "0" "deny_ends_run: the saved conversation is dropped once the run has ended"

# two gated calls in one reply: denying the first decides nothing about the second
llm_script "[[t602f]]" '[{"tool_calls": [{"name": "write_resource", "input": {"resource_type": "page", "resource_id": "p602", "body": "first"}},
                                     {"name": "write_resource", "input": {"resource_type": "page", "resource_id": "p602b", "body": "second"}}]},
                          {"text": "both handled"}]'
r=$(start_run "$a" '{"prompt": "Two [[t602f]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "the first call pauses"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.deny('$key', 'owner6', $r, 'wrong page')" >/dev/null
for i in $(seq 1 200); do [ "$(q "SELECT count(*) FROM agent.approvals WHERE run_id = $r")" = 2 ] && break; sleep 0.05; done
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "the second call still asks"
is "$(q "SELECT input->>'resource_id' FROM agent.approvals WHERE run_id = $r AND status = 'pending'")" "p602b" "for itself"
key2=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.approve('$key2', 'owner6')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the run finishes"
is "$(q "SELECT string_agg(id || '=' || body, ',' ORDER BY id) FROM public.w602_pages")" "p602=new body,p602b=second" \
   "the denied call did not write, the approved one did"

# approval_mode all: even a read pauses; scope.needs_approval marks one tool
b=$(mk_agent "careful602" '{"needs_approval": ["search_resources"]}' none)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($b, 'page', 'p602', 'read')" >/dev/null
llm_script "[[t602c]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p602"}},
                          {"tool": "search_resources", "input": {"query": "status"}}, {"text": "ok"}]'
r=$(start_run "$b" '{"prompt": "Look [[t602c]]"}')
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "a tool listed in scope.needs_approval pauses"
is "$(q "SELECT tool FROM agent.approvals WHERE run_id = $r")" "search_resources" "for that tool only (the read went through)"
done_testing
