#!/usr/bin/env bash
# Assisted creation through the real worker and the scripted LLM (T-12): the
# draft run searches as the user; a described collection that exists and is
# readable is proposed exactly; one that does not exist, or that the user
# cannot read, gives an empty proposal even when the model proposes it.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "CREATE TABLE IF NOT EXISTS public.w810_collections (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w810_collections;
   INSERT INTO public.w810_collections VALUES
     ('c810support', 'Support tickets', 'Tickets opened by customers of the support desk.'),
     ('c810hr', 'HR salaries', 'Salaries and reviews of every employee.');
   SELECT agent.register_resource_table('collection', 'public.w810_collections', 'id', 'title', 'body');
   GRANT SELECT ON public.w810_collections TO agents_tool;
   DELETE FROM agent.resource_acl WHERE resource_id LIKE 'c810%';
   INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
     ('w810', 'collection', 'c810support', 'user:u810', 'read'),
     ('w810', 'collection', 'c810hr', 'user:boss810', 'read');
   DELETE FROM agent.agents WHERE owner_id = 'u810';" >/dev/null

# the workspace's assistant talks to the scripted server
q "SELECT agent._assistant_for('w810');
   UPDATE agent.agents SET scope = jsonb_build_object('llm_url', '$LLM_URL')
    WHERE id = (SELECT agent_id FROM agent.assistants WHERE workspace_id = 'w810')" >/dev/null

draft_json() {  # name access-json
    python3 -c 'import json,sys; print(json.dumps({"text": json.dumps({"name": sys.argv[1], "instructions": "Triage each new ticket.",
        "triggers": [{"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": None, "prompt": "triage"}],
        "access": json.loads(sys.argv[2])})}))' "$1" "$2"
}

# 1. an existing, readable collection is proposed exactly
llm_script "[[t810a]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"support tickets\", \"resource_type\": \"collection\"}},
                         $(draft_json "Support triage" '[{"resource_type": "collection", "resource_id": "c810support", "access": "read"}]')]"
r=$(q "SELECT agent.generate_draft('Triage the tickets of the Support tickets collection [[t810a]]', 'u810', 'w810')")
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the draft run goes through the worker and succeeds"
is "$(q "SELECT string_agg(kind || ':' || coalesce(name, ''), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r")" \
   "llm:default,tool:search_resources,llm:default" "it searched, under the user's ACL"
is "$(q "SELECT agent.draft($r, 'u810') -> 'draft' -> 'access'")" \
   '[{"access": "read", "resource_id": "c810support", "resource_type": "collection"}]' "proposed access is exactly the described collection"
is "$(q "SELECT count(*) FROM agent.agents WHERE owner_id = 'u810'")" "0" "nothing saved by drafting"
a=$(q "SELECT agent.create_from_draft(agent.draft($r) -> 'draft', 'u810')")
is "$(q "SELECT string_agg(resource_type || ':' || resource_id || ':' || access, ',') FROM agent.access WHERE agent_id = $a")" \
   "collection:c810support:read" "the created agent holds exactly that grant"
is "$(q "SELECT count(*) || '/' || count(*) FILTER (WHERE enabled) FROM agent.triggers WHERE agent_id = $a")" "1/0" \
   "its trigger is created disabled"

# 2. a collection that does not exist: empty proposal although the model proposes one
llm_script "[[t810b]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"finance ledger\", \"resource_type\": \"collection\"}},
                         $(draft_json "Finance" '[{"resource_type": "collection", "resource_id": "c810finance", "access": "read"}]')]"
r=$(q "SELECT agent.generate_draft('Watch the Finance ledger collection [[t810b]]', 'u810', 'w810')")
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "draft run for an unknown collection succeeds"
is "$(q "SELECT agent.draft($r) -> 'draft' -> 'access'")" "[]" "unknown collection: empty proposal"
is "$(q "SELECT agent.draft($r) -> 'dropped' -> 0 ->> 'reason'")" "not_found_by_search" "the model's guess is reported as dropped"

# 3. a collection that exists but the user cannot read: empty proposal, never leaked to the model
llm_script "[[t810c]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"HR salaries\", \"resource_type\": \"collection\"}},
                         $(draft_json "HR" '[{"resource_type": "collection", "resource_id": "c810hr", "access": "read"}]')]"
r=$(q "SELECT agent.generate_draft('Summarize the HR salaries collection [[t810c]]', 'u810', 'w810')")
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "draft run for an unreadable collection succeeds"
is "$(q "SELECT output->'results' FROM agent.run_steps WHERE run_id = $r AND name = 'search_resources'")" "[]" \
   "the user's search found nothing"
is "$(q "SELECT agent.draft($r) -> 'draft' -> 'access'")" "[]" "unreadable collection: empty proposal"
ok "$(python3 -c '
import json,sys; s=json.dumps([x for x in json.loads(sys.argv[1]) if x["key"]=="[[t810c]]"])
print(1 if ("Salaries and reviews" in s) else 0)' "$(llm_requests)")" "the unreadable collection never reached the model"
is "$(q "SELECT count(*) FROM agent.agents WHERE owner_id = 'u810'")" "1" "still only the agent created from the first draft"
done_testing
