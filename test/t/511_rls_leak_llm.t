#!/usr/bin/env bash
# T-02 through the worker: whatever an autonomous agent does (read, search,
# mentions), the recorded LLM requests never contain a page it was not
# granted.  The secret is in an allowlisted table (RLS) that the worker reads
# as agents_tool.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
MARK=MANTARAY9X

a=$(mk_agent "leak511")
q "DROP TABLE IF EXISTS public.rls511_pages;
   CREATE TABLE public.rls511_pages (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL);
   INSERT INTO public.rls511_pages VALUES
     (1, 'Budget notes', 'The acquisition budget plan is on the board page. Ask [[agent:$a]].'),
     (2, 'Hiring', 'Two engineers for the budget tool.'),
     (9, 'Project $MARK acquisition budget plan', 'Confidential: the $MARK acquisition budget plan is 40M. [[agent:$a]]');
   SELECT agent.register_resource_table('page', 'public.rls511_pages', 'id', 'title', 'body');
   SELECT agent.enable_allowlist('public.rls511_pages', 'page', 'id');
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     SELECT 'page', g::text, 'user:owner6', 'edit' FROM generate_series(1, 20) g ON CONFLICT DO NOTHING;
   INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($a, 'page', '1', 'read'), ($a, 'page', '2', 'read');" >/dev/null

has_mark() {  # key: 1 when a recorded request with that key (or any, for "") holds the marker
    python3 -c '
import json,sys; rs=json.loads(sys.argv[1]); k=sys.argv[2]
s=json.dumps([r for r in rs if not k or r["key"]==k])
print(1 if sys.argv[3] in s else 0)' "$(llm_requests)" "$1" "$MARK"
}

# 1. read the secret, search its words, read a granted page that mentions the agent
llm_script "[[t511a]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "9"}},
                          {"tool": "search_resources", "input": {"query": "acquisition budget plan", "limit": 10}},
                          {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "1"}},
                          {"text": "done"}]'
r=$(start_run "$a" '{"prompt": "Find the acquisition budget [[t511a]]"}')
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "an autonomous run reads, searches and reads again"
is "$(q "SELECT string_agg(kind || ':' || name, ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind <> 'llm'")" \
   "denied:read_resource,tool:search_resources,read:read_resource" "the secret read is denied; search and the granted read run"
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t511a]]"]
res=json.loads([m["content"] for m in rs[2]["body"]["messages"] if m["role"]=="tool"][-1])["results"]
print(",".join(sorted(x["resource_id"] for x in res)))' "$(llm_requests)")" "1" "search finds the granted page, not the secret that shares its words"
is "$(has_mark "[[t511a]]")" "0" "no recorded LLM request of that run contains the secret"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND (input::text || coalesce(output::text, '')) LIKE '%$MARK%'")" "0" \
   "no step of that run contains the secret"

# 2. a mention inside a secret page wakes the agent (trigger with a prompt)
q "INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, prompt)
     VALUES ($a, 'mention', 'agent.mentioned', 'page', 'You were mentioned [[t511b]]; read the page.');
   SELECT agent.watch_table('public.rls511_pages', 'page', 'id', ARRAY['body']);" >/dev/null
llm_script "[[t511b]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "10"}}, {"text": "cannot"}]'
q "SET pg_agents.workspace = 'w6'; INSERT INTO public.rls511_pages VALUES (10, '$MARK follow-up', 'Second secret: [[agent:$a]] summarise $MARK.')" >/dev/null
r=$(q "SELECT max(id) FROM agent.runs WHERE agent_id = $a AND origin = 'mention'")
ok "$([ -n "$r" ] && echo 0 || echo 1)" "the mention queues a run ($r)"
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the mention run ends"
is "$(q "SELECT string_agg(kind || ':' || coalesce(output->>'reason', status), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind <> 'llm'")" \
   "denied:not_granted" "the mention run cannot read the page it was mentioned in"
is "$(has_mark "[[t511b]]")" "0" "no recorded LLM request of the mention run contains the secret"

# 3. the same without a trigger prompt: the worker then builds the prompt from
#    the event payload, which carries the row (events module); a row the agent
#    cannot read must be withheld
q "UPDATE agent.triggers SET prompt = NULL WHERE agent_id = $a AND kind = 'mention'" >/dev/null
llm_reset
llm_script "" '[{"text": "noted"}]'
q "SET pg_agents.workspace = 'w6'; INSERT INTO public.rls511_pages VALUES (11, '$MARK third', 'Third secret: [[agent:$a]] about $MARK.')" >/dev/null
r=$(q "SELECT max(id) FROM agent.runs WHERE agent_id = $a AND origin = 'mention'")
wait_status "$r" "succeeded|failed" 60 >/dev/null
is "$(has_mark "")" "0" "a mention run without prompt does not show the model the secret row (the worker withholds payload rows the agent cannot read)"
done_testing
