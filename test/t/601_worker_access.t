#!/usr/bin/env bash
# Worker: tools go through can_access under the run's regime; a refused
# resource never reaches the model; search is filtered before ranking.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "CREATE TABLE IF NOT EXISTS public.w601_pages (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w601_pages;
   INSERT INTO public.w601_pages VALUES
     ('p601ok', 'Pump maintenance', 'The pump needs oil once a month.'),
     ('p601secret', 'Zebra merger plan', 'Acquire Quokka Corp before Friday.');
   INSERT INTO public.w601_pages SELECT 'p601noise' || g, 'pump pump pump ' || g, 'pump pump pump pump Quokka' FROM generate_series(1, 20) g;
   SELECT agent.register_resource_table('page', 'public.w601_pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON public.w601_pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     SELECT 'page', id, 'user:owner6', 'edit' FROM public.w601_pages ON CONFLICT DO NOTHING;" >/dev/null

a=$(mk_agent "reader601")
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($a, 'page', 'p601ok', 'read')" >/dev/null

# 1. a denied read
llm_script "[[t601a]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p601secret"}},
                          {"text": "I could not read it."}]'
r=$(start_run "$a" '{"prompt": "Read the merger page [[t601a]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a run with a refused read still ends normally"
is "$(q "SELECT kind || '|' || name || '|' || (output->>'reason') FROM agent.run_steps WHERE run_id = $r AND kind = 'denied'")" \
   "denied|read_resource|not_granted" "the refusal is a denied step with its reason"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE run_id = $r AND status = 'denied' AND action = 'tool.read_resource'
          AND target_id = 'p601secret' AND actor_kind = 'agent' AND actor_id = '$a' AND error_code = 'not_granted'")" "1" \
   "the refusal is audited with the agent as actor"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t601a]]"]
print([m["content"] for m in rs[1]["body"]["messages"] if m["role"]=="tool"][0])' "$reqs")" '{"error":"access denied"}' \
   "the model only learns: access denied"
ok "$(python3 -c '
import json,sys; s=json.dumps([r for r in json.loads(sys.argv[1]) if r["key"]=="[[t601a]]"])
print(1 if ("Zebra" in s or "Quokka" in s or "Friday" in s) else 0)' "$reqs")" \
   "no recorded LLM request contains the refused title or body"
ok "$(q "SELECT count(*) = 0 FROM agent.run_steps WHERE run_id = $r AND (input::text ~ 'Zebra|Quokka' OR output::text ~ 'Zebra|Quokka')")" \
   "no step contains the refused title or body"

# 2. a denied write (read-only grant) and a granted read
llm_script "[[t601b]]" '[{"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p601ok", "body": "x"}},
                          {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p601ok"}},
                          {"text": "done"}]'
r=$(start_run "$a" '{"prompt": "Edit the pump page [[t601b]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "write refusal run ends"
is "$(q "SELECT string_agg(kind || ':' || coalesce(output->>'reason', status), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND kind <> 'llm'")" \
   "denied:grant_read_only,read:ok" "write refused (grant_read_only), read allowed"
is "$(q "SELECT body FROM public.w601_pages WHERE id = 'p601ok'")" "The pump needs oil once a month." "the page is unchanged"

# 3. search filtered before ranking: 20 better-ranked rows are not granted
llm_script "[[t601c]]" '[{"tool": "search_resources", "input": {"query": "pump", "limit": 1}}, {"text": "found"}]'
r=$(start_run "$a" '{"prompt": "Search pumps [[t601c]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "search run succeeds"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t601c]]"]
res=json.loads([m["content"] for m in rs[1]["body"]["messages"] if m["role"]=="tool"][0])["results"]
print(",".join(x["resource_id"] for x in res))' "$reqs")" "p601ok" "with limit 1 the granted row is found: filtering happened before ranking"
ok "$(python3 -c '
import json,sys; s=json.dumps([r for r in json.loads(sys.argv[1]) if r["key"]=="[[t601c]]"])
print(1 if ("Quokka" in s or "p601noise" in s or "Zebra" in s) else 0)' "$reqs")" "no refused row (title, snippet, id) reaches the model"
is "$(q "SELECT output->'results' FROM agent.run_steps WHERE run_id = $r AND name = 'search_resources'")" \
   '[{"resource_id": "p601ok", "resource_type": "page"}]' "the search step records ids only"

# 4. manual regime: the user's ACL decides, not the agent's grants
q "INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access) VALUES ('page', 'p601secret', 'user:ana601', 'read') ON CONFLICT DO NOTHING" >/dev/null
llm_script "[[t601d]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p601secret"}}, {"text": "ok"}]'
r=$(start_run "$a" '{"prompt": "Read it for me [[t601d]]"}' manual ana601)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "manual run succeeds"
is "$(q "SELECT string_agg(kind, ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r")" "llm,read,llm" \
   "a manual run reads what the user may read"

# 5. an event payload reaches the prompt only when the run may read its resource
llm_script "[[t601e]]" '[{"text": "noted"}]'
r=$(start_run "$a" '{"event": "page.comment_added", "resource_type": "page", "resource_id": "p601secret", "prompt": "Handle it [[t601e]]",
                     "payload": {"row_id": "p601secret", "row": {"title": "Zebra merger plan", "body": "Acquire Quokka Corp"}}}')
wait_status "$r" "succeeded|failed" 30 >/dev/null
llm_script "[[t601f]]" '[{"text": "noted"}]'
r=$(start_run "$a" '{"event": "page.comment_added", "resource_type": "page", "resource_id": "p601ok", "prompt": "Handle it [[t601f]]",
                     "payload": {"row_id": "p601ok", "row": {"title": "Pump maintenance", "body": "oil"}}}')
wait_status "$r" "succeeded|failed" 30 >/dev/null
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=json.loads(sys.argv[1])
e=[r for r in rs if r["key"]=="[[t601e]]"][0]["body"]["messages"][-1]["content"]
f=[r for r in rs if r["key"]=="[[t601f]]"][0]["body"]["messages"][-1]["content"]
print("Quokka" in e, "Zebra" in e, "withheld" in e, "Pump maintenance" in f, "page.comment_added" in f)' "$reqs")" \
   "False False True True True" "an unreadable event row is withheld from the prompt; a readable one is shown"
# 6. ids in the id column's type (issue 30): a table keyed by bigint and one by
# uuid are read through their index; an id is its canonical text form, as the
# grants and the allowlist read it, so '07', ' 7', '+7' or an upper-case uuid
# name no row (the same answer as a missing one) and never another row
q "CREATE TABLE IF NOT EXISTS public.w601_nums (id bigint PRIMARY KEY, title text, body text);
   CREATE TABLE IF NOT EXISTS public.w601_uuids (id uuid PRIMARY KEY, title text, body text);
   TRUNCATE public.w601_nums, public.w601_uuids;
   INSERT INTO public.w601_nums VALUES (7, 'Seven', 'The seventh note.'), (70, 'Seventy', 'Not granted.');
   INSERT INTO public.w601_uuids VALUES ('0e6a3c2e-6c1b-4f57-9d2a-3f1c8f0b9a11', 'Uuid page', 'Keyed by uuid.');
   SELECT agent.register_resource_table('page', 'public.w601_nums', 'id', 'title', 'body');
   SELECT agent.register_resource_table('page', 'public.w601_uuids', 'id', 'title', 'body');
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access) VALUES
     ('page', '7', 'user:owner6', 'read'), ('page', '07', 'user:owner6', 'read'),
     ('page', '0e6a3c2e-6c1b-4f57-9d2a-3f1c8f0b9a11', 'user:owner6', 'read') ON CONFLICT DO NOTHING;" >/dev/null
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
     ($a, 'page', '7', 'read'), ($a, 'page', '07', 'read'), ($a, 'page', '0e6a3c2e-6c1b-4f57-9d2a-3f1c8f0b9a11', 'read')" >/dev/null
llm_script "[[t601f]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "7"}},
                          {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "07"}},
                          {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "0e6a3c2e-6c1b-4f57-9d2a-3f1c8f0b9a11"}},
                          {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "0E6A3C2E-6C1B-4F57-9D2A-3F1C8F0B9A11"}},
                          {"text": "done"}]'
r=$(start_run "$a" '{"prompt": "Read the numbered pages [[t601f]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "reads by typed ids end normally"
is "$(q "SELECT string_agg(kind || ':' || (input->>'resource_id') || ':' || coalesce(output->>'title', output->>'error', output->>'reason', '-'), ',' ORDER BY seq)
          FROM agent.run_steps WHERE run_id = $r AND name = 'read_resource'")" \
   "read:7:-,error:07:resource page 07 not found,read:0e6a3c2e-6c1b-4f57-9d2a-3f1c8f0b9a11:-,denied:0E6A3C2E-6C1B-4F57-9D2A-3F1C8F0B9A11:not_granted" \
   "'7' reads row 7; '07', even granted, names no row (not row 7); the uuid in its canonical form reads its row, an upper-case form is not granted"
reqs=$(llm_requests)
ok "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t601f]]"]
tools=[m["content"] for m in rs[-1]["body"]["messages"] if m["role"]=="tool"]
s=json.dumps(rs)
print(0 if (len(tools) == 4 and sum("seventh note" in t for t in tools) == 1 and "Keyed by uuid" in tools[2]
            and "Not granted" not in s) else 1)' "$reqs")" \
   "the model saw row 7 once (for '7', not for '07') and the uuid row, never row 70"
q "SELECT agent.unregister_resource_table('public.w601_nums'); SELECT agent.unregister_resource_table('public.w601_uuids')" >/dev/null

done_testing
