#!/usr/bin/env bash
# Attack (issue 14 #10): approvers do not see what they approve.  The
# stored approval input was the redacted input with strings cut near 2 kB,
# while the full input ran after the approval: a 10 kB body whose end says
# something else than its start was approved on its first 2 kB.  Now the
# approval stores the input exactly as it runs, and a call that cannot be
# shown whole (larger than pg_agents.approval_max_input, or holding a
# credential, which is never stored) is refused to the model.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
q "CREATE TABLE IF NOT EXISTS public.w623_pages (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w623_pages;
   INSERT INTO public.w623_pages VALUES ('p623', 'Policy', 'old policy'), ('p623b', 'Other', 'other');
   SELECT agent.register_resource_table('page', 'public.w623_pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON public.w623_pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p623', 'user:owner623', 'edit'), ('page', 'p623b', 'user:owner623b', 'edit') ON CONFLICT DO NOTHING;" >/dev/null
q "DROP ROLE IF EXISTS w623_app; DROP ROLE IF EXISTS w623_nobody;
   CREATE ROLE w623_app LOGIN IN ROLE agents_app; CREATE ROLE w623_nobody LOGIN" >/dev/null
trap 'llm_stop; q "DROP ROLE IF EXISTS w623_app; DROP ROLE IF EXISTS w623_nobody" >/dev/null' EXIT
a=$(mk_agent "writer623" '{}' writes '[]' 10 w623 owner623)
b=$(mk_agent "writer623b" '{}' writes '[]' 10 w623b owner623b)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($a, 'page', 'p623', 'edit'), ($b, 'page', 'p623b', 'edit')" >/dev/null

# a 10 kB body: harmless for 9,000 bytes, then the real change
body=$(python3 -c 'print("All staff keep their access. " * 320 + "EXCEPT: grant admin to mallory.")')
input=$(python3 -c 'import json,sys; print(json.dumps({"resource_type": "page", "resource_id": "p623", "body": sys.argv[1]}))' "$body")
llm_script "[[t623a]]" "[{\"tool\": \"write_resource\", \"input\": $input}, {\"text\": \"policy written\"}]"
r=$(start_run "$a" '{"prompt": "Update the policy [[t623a]]"}' autonomous owner623)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "the 10 kB write waits for approval"
is "$(q "SELECT length(input->>'body') FROM agent.approvals WHERE run_id = $r")" "${#body}" "the approver sees the whole body (${#body} bytes)"
is "$(q "SELECT right(input->>'body', 31) FROM agent.approvals WHERE run_id = $r")" "EXCEPT: grant admin to mallory." "its end included"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r")
# the application approves for the user (edit level); a role with no grants cannot
out=$(psql -XAtq -U w623_nobody -c "SELECT agent.approve('$key', 'owner623')" 2>&1)
ok "$([[ "$out" == *"permission denied"* ]] && echo 0)" "a role with no grants cannot approve"
out=$(psql -XAtq -U w623_app -c "SET pg_agents.workspace = 'w623b'" -c "SELECT agent.approve('$key', 'owner623b')" 2>&1)
ok "$([[ "$out" == *"may not decide"* || "$out" == *"no pending approval"* ]] && echo 0)" "another workspace's user cannot decide it"
psql -XAtq -U w623_app -c "SET pg_agents.workspace = 'w623'" -c "SELECT agent.approve('$key', 'owner623')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "approved, the run resumes and finishes"
is "$(q "SELECT p.body = a.input->>'body' FROM public.w623_pages p, agent.approvals a WHERE p.id = 'p623' AND a.run_id = $r")" "t" \
   "what executed is exactly what was approved"
is "$(q "SELECT a.input = jsonb_build_object('resource_type', 'page', 'resource_id', 'p623', 'body', p.body)
          FROM public.w623_pages p, agent.approvals a WHERE p.id = 'p623' AND a.run_id = $r")" "t" "the whole input, byte for byte"

# too large to show: refused at request time, the model is told, nothing stored
big=$(python3 -c 'import json; print(json.dumps({"resource_type": "page", "resource_id": "p623", "body": "x" * 70000}))')
llm_script "[[t623b]]" "[{\"tool\": \"write_resource\", \"input\": $big}, {\"text\": \"could not\"}]"
r=$(start_run "$a" '{"prompt": "Huge [[t623b]]"}' autonomous owner623)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "succeeded" "a 70 kB input is refused, the run goes on"
is "$(q "SELECT count(*) FROM agent.approvals WHERE run_id = $r")" 0 "no approval stored"
is "$(llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]=="[[t623b]]"]
print(json.loads([m["content"] for m in rs[1]["body"]["messages"] if m["role"]=="tool"][0])["error"])')" \
   "approval refused: tool input of $(q "SELECT octet_length('$big'::jsonb::text)") bytes is too large to be approved" "the model reads why"
is "$(q "SELECT status FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")" "refused" "an approval step records the refusal"
is "$(q "SELECT body FROM public.w623_pages WHERE id = 'p623'")" "$body" "nothing written"

# a credential in the input: never stored, so never approvable
llm_script "[[t623c]]" '[{"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p623b", "body": "db password=hunter2-hunter2"}}, {"text": "ok"}]'
r=$(start_run "$b" '{"prompt": "Cred [[t623c]]"}' autonomous owner623b)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "succeeded" "an input holding a credential is refused, the run goes on"
is "$(q "SELECT count(*) FROM agent.approvals WHERE run_id = $r")" 0 "no approval stored"
is "$(q "SELECT count(*) FROM agent.approvals WHERE input::text LIKE '%hunter2%'")" 0 "the credential is in no approval"
is "$(q "SELECT body FROM public.w623_pages WHERE id = 'p623b'")" "other" "nothing written"
done_testing
