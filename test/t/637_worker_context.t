#!/usr/bin/env bash
# Context assembly through the worker (docs/worker.md, "Context assembly"),
# as the recorded requests show it: the instruction page read with the run's
# access, link tokens rendered as titles or as the no-access token (the
# unreadable page's title and body absent from every request), skills listed
# and loaded only when granted (autonomous) or readable by the user
# (manual), and the delegation tool: its list, attachments checked against
# the child's access, the depth line, and its absence at the depth limit.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
cleanup() {
    llm_stop
    q "ALTER SYSTEM RESET pg_agents.max_delegation_depth" >/dev/null 2>&1
    q "SELECT pg_reload_conf()" >/dev/null 2>&1
}
trap cleanup EXIT
# req KEY N FIELD: a part of the Nth request (0-based, -1 last) whose body holds KEY
#   FIELD: system | last (the last message) | tools (names) | tool:NAME (its definition) | results (tool messages)
req() {
    python3 -c '
import json,sys; key,n,f=sys.argv[2],int(sys.argv[3]),sys.argv[4]
rs=[r for r in json.loads(sys.argv[1]) if r["key"]==key]
b=rs[n]["body"]; m=b["messages"]
if f=="system": print(m[0]["content"])
elif f=="last": print(m[-1]["content"])
elif f=="tools": print(",".join(t["function"]["name"] for t in b.get("tools",[])))
elif f.startswith("tool:"): print(json.dumps([t["function"] for t in b["tools"] if t["function"]["name"]==f[5:]]))
elif f=="results": print("\n".join(x["content"] for x in m if x["role"]=="tool"))' "$(llm_requests)" "$1" "$2" "$3"
}

q "CREATE TABLE IF NOT EXISTS public.w631_pages (id text PRIMARY KEY, title text, body text);
   CREATE TABLE IF NOT EXISTS public.w631_skills (id text PRIMARY KEY, name text, body text);
   INSERT INTO public.w631_pages VALUES
     ('p631-instr', 'Instr page 631', 'Follow the page rules k631. See [[page:p631-ok]] and [[fdpage:p631-secret]].'),
     ('p631-ok', 'Readable Title 631', 'ok body'),
     ('p631-secret', 'SecretTitle631', 'SecretBody631')
   ON CONFLICT DO NOTHING;
   INSERT INTO public.w631_skills VALUES
     ('s631-a', 'Summarise 631', E'  Summarise things briefly.\nStep 1: read. SKILLBODY-A631'),
     ('s631-b', 'Translate 631', E'Translate text.\nStep 1: translate. SKILLBODY-B631')
   ON CONFLICT DO NOTHING;
   SELECT agent.register_resource_table('page', 'public.w631_pages', 'id', 'title', 'body');
   SELECT agent.register_resource_table('skill', 'public.w631_skills', 'id', 'name', 'body');
   GRANT SELECT, UPDATE ON public.w631_pages, public.w631_skills TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access) VALUES
     ('page', 'p631-instr', 'user:owner6', 'read'), ('page', 'p631-ok', 'user:owner6', 'read'),
     ('page', 'p631-secret', 'user:owner6', 'read'),
     ('skill', 's631-a', 'user:owner6', 'read'), ('skill', 's631-b', 'user:owner6', 'read'),
     ('page', 'p631-instr', 'user:u631', 'read'), ('skill', 's631-b', 'user:u631', 'read')
   ON CONFLICT DO NOTHING" >/dev/null

# 1. the instruction page and links, autonomous: grants within the owner's ACL
a=$(mk_agent "instr631")
q "UPDATE agent.agents SET instruction_page_id = 'p631-instr',
          instructions = 'Base instructions. Links [[page:p631-secret]] and [[page:p631-ok]] and [[page:p631-none]].'
    WHERE id = $a;
   INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES
     ($a, 'page', 'p631-instr'), ($a, 'page', 'p631-ok');
   INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by) VALUES ('w6', $a, 'u631', 'interact', 'owner6')" >/dev/null
llm_script "k631-auto" '[{"text": "ok"}]'
r=$(start_run "$a" '{"prompt": "go k631-auto"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "autonomous run with an instruction page succeeds"
sys=$(req k631-auto 0 system)
contains "$sys" "Base instructions. Links [no access] and Readable Title 631 and [no access]." \
   "instructions: a readable link becomes its title, an ungranted or unknown one the no-access token"
contains "$sys" 'Instruction page "Instr page 631":
Follow the page rules k631. See Readable Title 631 and [no access].' "the instruction page's body follows, its links rendered the same way"
is "$(q "SELECT string_agg(kind || ':' || name || ':' || (output->>'resource_id'), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND name = 'instruction_page'")" \
   "read:instruction_page:p631-instr" "the read of the instruction page is a step of the run"

# manual: the user's ACL (the page yes, the linked pages no)
llm_script "k631-man" '[{"text": "ok"}]'
r=$(start_run "$a" '{"message": "hello k631-man"}' manual u631)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "manual run succeeds"
sys=$(req k631-man 0 system)
contains "$sys" "Base instructions. Links [no access] and [no access] and [no access]." "manual: links checked against the user's ACL"
contains "$sys" "Follow the page rules k631. See [no access] and [no access]." "manual: the page the user may read is read"

# an instruction page the run may not read: neither its title nor its body
b=$(mk_agent "secret631")
q "UPDATE agent.agents SET instruction_page_id = 'p631-secret', instructions = 'Plain.' WHERE id = $b" >/dev/null
llm_script "k631-sec" '[{"text": "ok"}]'
r=$(start_run "$b" '{"prompt": "go k631-sec"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a run whose instruction page is not granted still runs"
contains "$(req k631-sec 0 system)" "Instruction page: [no access]" "the unreadable instruction page is the no-access token"
is "$(q "SELECT kind || ':' || status FROM agent.run_steps WHERE run_id = $r AND name = 'instruction_page'")" "denied:denied" \
   "its refusal is a step of the run"

# 2. skills: autonomous, only the granted ones (within the owner's ACL)
c=$(mk_agent "skills631")
q "INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES ($c, 'skill', 's631-a');
   INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by) VALUES ('w6', $c, 'u631', 'interact', 'owner6')" >/dev/null
llm_script "k631-sk" '[{"tool": "use_skill", "input": {"skill_id": "s631-a"}},
                       {"tool": "use_skill", "input": {"skill_id": "s631-b"}}, {"text": "done"}]'
r=$(start_run "$c" '{"prompt": "go k631-sk"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "autonomous run with skills succeeds"
sys=$(req k631-sk 0 system)
contains "$sys" "Skills you may use (load one with use_skill before following it):
- s631-a: Summarise 631 - Summarise things briefly." "the granted skill is listed with its one-line description"
lacks "$sys" "s631-b" "a skill the owner may read but the agent was not granted is not listed"
contains "$(req k631-sk 0 tools)" "use_skill" "use_skill is offered"
res=$(req k631-sk -1 results)
contains "$(echo "$res" | sed -n 1p)" "SKILLBODY-A631" "use_skill loads the granted skill's body"
is "$(echo "$res" | sed -n 2p)" '{"error":"access denied"}' "use_skill on an ungranted skill is refused"
is "$(q "SELECT string_agg(kind || ':' || name || ':' || coalesce(input->>'resource_type', ''), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind IN ('read', 'denied')")" \
   "read:read_resource:skill,denied:read_resource:skill" "loading a skill is a read (gated, recorded) like every read"
is "$(q "SELECT array_to_string(skills, ',') FROM agent.activity($c, 'owner6') WHERE run_id = $r")" "s631-a" \
   "activity shows the skill the run used"

# manual: the user's skills, whatever the grants
llm_script "k631-skm" '[{"tool": "use_skill", "input": {"skill_id": "s631-b"}},
                        {"tool": "use_skill", "input": {"skill_id": "s631-a"}}, {"text": "done"}]'
r=$(start_run "$c" '{"message": "go k631-skm"}' manual u631)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "manual run with skills succeeds"
sys=$(req k631-skm 0 system)
contains "$sys" "- s631-b: Translate 631 - Translate text." "manual: the skill the user may read is listed"
lacks "$sys" "s631-a" "manual: the granted skill the user may not read is not"
res=$(req k631-skm -1 results)
contains "$(echo "$res" | sed -n 1p)" "SKILLBODY-B631" "manual: use_skill loads the user's skill"
is "$(echo "$res" | sed -n 2p)" '{"error":"access denied"}' "manual: and refuses the other"

# no skill: no section, no tool
llm_script "k631-nosk" '[{"text": "ok"}]'
r=$(start_run "$b" '{"prompt": "go k631-nosk"}')
wait_status "$r" "succeeded|failed" 30 >/dev/null
lacks "$(req k631-nosk 0 system)" "Skills" "an agent without usable skills gets no skills section"
is "$(req k631-nosk 0 tools)" "read_resource,search_resources,write_resource,update_row,add_row,add_comment" "and no use_skill tool"

# 3. delegation: the list, attachments, the depth line, the limit
w=$(mk_agent "Writer631")
q "UPDATE agent.agents SET scope = scope || '{\"description\": \"Drafts replies.\\nSecond line.\"}' WHERE id = $w;
   INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES ($w, 'page', 'p631-ok')" >/dev/null
h=$(mk_agent "Hidden631" '{}' none '[]' 10 w6 stranger631)   # owned by someone the owner6 cannot see
w2=$(mk_agent "Middle631" '{}' none "[$w]")
x=$(mk_agent "Foreign631" '{}' none '[]' 10 w6x owner6)   # the owner's agent in another workspace
p=$(mk_agent "Lead631" '{}' none "[$w, $h, $w2, $x]")
llm_script "k631-lead-run" "[{\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $w, \"task\": \"write k631-child\",
                           \"attachments\": [{\"resource_type\": \"page\", \"resource_id\": \"p631-ok\"},
                                             {\"resource_type\": \"page\", \"resource_id\": \"p631-secret\"}]}},
                         {\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $h, \"task\": \"nope\"}},
                         {\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $x, \"task\": \"nope\"}},
                         {\"text\": \"lead done\"}]"
llm_script "k631-child" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p631-secret"}},
                          {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p631-ok"}}, {"text": "child done"}]'
r=$(start_run "$p" '{"prompt": "lead k631-lead-run"}')
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the delegating run succeeds"
def=$(req k631-lead-run 0 tool:delegate_to_agent)
contains "$def" "You may delegate to:\\n- $w Writer631: Drafts replies.\\n- $w2 Middle631\"" \
   "delegate_to_agent lists the delegable agents with their ids, names and one-line descriptions"
lacks "$def" "Hidden631" "an agent the run's identity cannot see is not listed"
lacks "$def" "Foreign631" "nor an agent of another workspace"
contains "$def" '"attachments": {"type": "array"' "delegate_to_agent takes attachments"
lacks "$(req k631-lead-run 0 system)" "delegated run" "a root run gets no depth line"
child=$(q "SELECT id FROM agent.runs WHERE parent_run_id = $r AND agent_id = $w")
is "$(q "SELECT input->'attachments' FROM agent.runs WHERE id = ${child:-0}")" \
   '[{"resource_id": "p631-ok", "resource_type": "page"}, {"withheld": "not_granted", "resource_id": "p631-secret", "resource_type": "page"}]' \
   "the child gets the attachment it may read; the other is withheld"
contains "$(req k631-child 0 last)" '"resource_id":"p631-ok"' "the child's prompt carries the attachments"
contains "$(req k631-child 0 system)" "You are a delegated run at depth 1 (the limit is 3): you may not delegate further." \
   "the child is told its depth and that it may not delegate (no list)"
res=$(req k631-child -1 results)
is "$(echo "$res" | sed -n 1p)" '{"error":"access denied"}' "the child reading the withheld attachment is refused (its own access)"
contains "$(echo "$res" | sed -n 2p)" "ok body" "and reads the one granted to it"
contains "$(req k631-lead-run -1 results | sed -n 2p)" "is not one you may delegate to" "delegating to the hidden agent anyway is refused"
contains "$(req k631-lead-run -1 results | sed -n 3p)" "delegation refused" "and to the agent of another workspace"
is "$(q "SELECT count(*) FROM agent.runs WHERE parent_run_id = $r AND agent_id IN ($h, $x)")" "0" "neither got a run"

# a child with a list, below the limit, then at the limit
llm_script "k631-mid" '[{"text": "mid done"}]'
llm_script "k631-lead2" "[{\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $w2, \"task\": \"plan k631-mid\"}}, {\"text\": \"ok\"}]"
r=$(start_run "$p" '{"prompt": "lead k631-lead2"}')
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "delegation to an agent that may delegate further"
contains "$(req k631-mid 0 system)" "depth 1 (the limit is 3): you may delegate further." "below the limit: it may delegate further"
contains "$(req k631-mid 0 tools)" "delegate_to_agent" "and is offered delegate_to_agent"
q "ALTER SYSTEM SET pg_agents.max_delegation_depth = 1" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
llm_script "k631-mid3" '[{"text": "mid done"}]'
llm_script "k631-lead3" "[{\"tool\": \"delegate_to_agent\", \"input\": {\"agent_id\": $w2, \"task\": \"plan k631-mid3\"}}, {\"text\": \"ok\"}]"
r=$(start_run "$p" '{"prompt": "lead k631-lead3"}')
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "delegation with the limit at 1"
contains "$(req k631-mid3 0 system)" "depth 1 (the limit is 1): you may not delegate further." "at the limit: it may not delegate further"
tools=$(req k631-mid3 0 tools)
lacks "$tools" "delegate_to_agent" "at the limit delegate_to_agent is not offered"
lacks "$tools" "agent_teams" "nor agent_teams"
q "ALTER SYSTEM RESET pg_agents.max_delegation_depth" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null

# the unreadable page's title and body reached no request at all
all=$(llm_requests)
lacks "$all" "SecretTitle631" "the title of the page the runs may not read is absent from every request"
lacks "$all" "SecretBody631" "and so is its body"
ok "$(python3 -c 'import json,sys; print(0 if len(json.loads(sys.argv[1])) >= 15 else 1)' "$all")" "the requests were recorded"
done_testing
