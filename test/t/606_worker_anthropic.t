#!/usr/bin/env bash
# Worker: the Anthropic Messages wire format (tool_use / tool_result), the
# API key headers of both providers, and the key never shown nor recorded.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "CREATE TABLE IF NOT EXISTS public.w606_pages (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w606_pages;
   INSERT INTO public.w606_pages VALUES ('p606', 'Menu', 'Soup of the day: pumpkin.');
   SELECT agent.register_resource_table('page', 'public.w606_pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON public.w606_pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p606', 'user:owner6', 'read') ON CONFLICT DO NOTHING;" >/dev/null
# the key is only ever sent to pg_agents.llm_url (an agent naming the same URL gets it)
q "ALTER SYSTEM SET pg_agents.llm_api_key = 'sk-test-606-secret'" >/dev/null
q "ALTER SYSTEM SET pg_agents.llm_url = '$LLM_URL'" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5

a=$(mk_agent "claude606" '{"llm_provider": "anthropic"}')
q "UPDATE agent.agents SET model = 'claude-test-1' WHERE id = $a;
   INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($a, 'page', 'p606', 'read')" >/dev/null
llm_script "[[t606a]]" '[{"text": "Let me look.", "tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p606"}, "usage": {"in": 30, "out": 8}},
                          {"text": "Pumpkin soup.", "usage": {"in": 50, "out": 4}}]'
r=$(start_run "$a" '{"prompt": "What soup? [[t606a]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "an Anthropic run succeeds"
is "$(q "SELECT output->>'text' || '|' || tokens_in || '|' || tokens_out || '|' || model FROM agent.runs WHERE id = $r")" \
   "Pumpkin soup.|80|12|claude-test-1" "answer, usage (input_tokens/output_tokens) and the agent's model"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t606a]]"]
b0=rs[0]["body"]; b1=rs[1]["body"]; h=rs[0]["headers"]
out=[rs[0]["path"], b0["model"], str("Instructions of claude606" in b0["system"]), str(b0["max_tokens"]>0),
     ",".join(sorted(t["name"] for t in b0["tools"])), str("input_schema" in b0["tools"][0]),
     h.get("anthropic-version",""), h.get("x-api-key",""), str("authorization" in h)]
res=b1["messages"][-1]; asst=b1["messages"][-2]
out += [asst["role"], asst["content"][1]["type"], res["role"], res["content"][0]["type"],
        str(res["content"][0]["tool_use_id"]==asst["content"][1]["id"]), str("pumpkin" in res["content"][0]["content"])]
print(" ".join(out))' "$reqs")" \
   "/v1/messages claude-test-1 True True add_comment,add_row,read_resource,search_resources,update_row,write_resource True 2023-06-01 sk-test-606-secret False assistant tool_use user tool_result True True" \
   "Messages format: system, tools with input_schema, headers, tool_use answered by tool_result"

b=$(mk_agent "gpt606")
llm_script "[[t606b]]" '[{"text": "hi"}]'
r=$(start_run "$b" '{"prompt": "hello [[t606b]]"}')
wait_status "$r" "succeeded|failed" 30 >/dev/null
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t606b]]"]
print(rs[0]["headers"].get("authorization",""))' "$reqs")" "Bearer sk-test-606-secret" "OpenAI format: Authorization: Bearer"

is "$(q "SELECT count(*) FROM agent.run_steps WHERE (input::text || output::text) LIKE '%sk-test-606%'")" "0" \
   "the API key is never recorded in a step"
is "$(q "SHOW pg_agents.llm_api_key")" "********" "SHOW masks the key, even for a superuser"
q "DROP ROLE IF EXISTS w606_reader; CREATE ROLE w606_reader LOGIN; GRANT pg_read_all_settings TO w606_reader" >/dev/null
is "$(psql -XAtq -U w606_reader -c "SELECT current_setting('pg_agents.llm_api_key')" 2>&1)" "********" \
   "a pg_read_all_settings member does not see it"
is "$(psql -XAtq -U w606_reader -c "SELECT count(*) FROM pg_settings WHERE setting LIKE '%sk-test-606%'" 2>&1)" "0" \
   "nor through pg_settings"
q "DROP ROLE w606_reader" >/dev/null
q "ALTER SYSTEM RESET pg_agents.llm_api_key" >/dev/null; q "ALTER SYSTEM RESET pg_agents.llm_url" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null

# provider from the GUC, URL from the GUC
q "ALTER SYSTEM SET pg_agents.llm_provider = 'anthropic'" >/dev/null
q "ALTER SYSTEM SET pg_agents.llm_url = '$LLM_URL/'" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
c=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name) VALUES ('w6', 'owner6', 'guc606') RETURNING id")
llm_script "[[t606c]]" '[{"text": "from settings"}]'
r=$(start_run "$c" '{"prompt": "x [[t606c]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "provider and URL from the settings"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; print([r["path"] for r in json.loads(sys.argv[1]) if r["key"]=="[[t606c]]"][0])' "$reqs")" "/v1/messages" \
   "the base URL (trailing slash trimmed) plus /messages"
q "ALTER SYSTEM RESET pg_agents.llm_provider" >/dev/null; q "ALTER SYSTEM RESET pg_agents.llm_url" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
done_testing
