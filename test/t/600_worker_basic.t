#!/usr/bin/env bash
# Worker: a single-turn run and a multi-step tool loop (OpenAI wire format).
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "CREATE TABLE IF NOT EXISTS public.w600_pages (id text PRIMARY KEY, title text, body text);
   INSERT INTO public.w600_pages VALUES ('p600', 'Runbook 600', 'Restart the pump, then call Ada.')
     ON CONFLICT DO NOTHING;
   SELECT agent.register_resource_table('page', 'public.w600_pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON public.w600_pages TO agents_tool;" >/dev/null

# 1. single turn
a=$(mk_agent "single600")
llm_script "[[t600a]]" '[{"text": "Hello from the model", "usage": {"in": 12, "out": 7}}]'
r=$(start_run "$a" '{"prompt": "Say hello [[t600a]]"}')
st=$(wait_status "$r" "succeeded|failed" 30)
is "$st" "succeeded" "single-turn run succeeds"
is "$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "Hello from the model" "final answer stored in runs.output"
is "$(q "SELECT tokens_in || '/' || tokens_out FROM agent.runs WHERE id = $r")" "12/7" "usage recorded through add_usage"
is "$(q "SELECT string_agg(kind, ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r")" "llm" "one llm step"
is "$(q "SELECT tokens FROM agent.run_steps WHERE run_id = $r AND kind = 'llm'")" "19" "the llm step carries its tokens"
reqs=$(llm_requests)
ok "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t600a]]"]
b=rs[0]["body"]; m=b["messages"]
print(0 if rs[0]["path"]=="/v1/chat/completions" and m[0]["role"]=="system" and "Instructions of single600" in m[0]["content"]
      and m[-1]["role"]=="user" and "Say hello" in m[-1]["content"] and any(t["function"]["name"]=="read_resource" for t in b["tools"]) else 1)' "$reqs")" \
   "the model was shown the instructions, the prompt and the tools at /chat/completions"
is "$(q "SELECT count(*) FROM agent.run_state WHERE run_id = $r")" "0" "run state removed at the end"

# 2. tool loop: read a granted page, then answer
b=$(mk_agent "loop600")
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($b, 'page', 'p600', 'read');
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p600', 'user:owner6', 'edit') ON CONFLICT DO NOTHING" >/dev/null
llm_script "[[t600b]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p600"}},
                          {"tool": "search_resources", "input": {"query": "pump"}},
                          {"text": "The runbook says to restart the pump."}]'
r=$(start_run "$b" '{"prompt": "What does the runbook say? [[t600b]]"}')
st=$(wait_status "$r" "succeeded|failed" 30)
is "$st" "succeeded" "tool loop run succeeds"
is "$(q "SELECT string_agg(kind || ':' || coalesce(name, ''), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r")" \
   "llm:default,read:read_resource,llm:default,tool:search_resources,llm:default" "steps: llm, read, llm, search, llm"
reqs=$(llm_requests)
ok "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t600b]]"]
m2=rs[1]["body"]["messages"]; m3=rs[2]["body"]["messages"]
tool=[m for m in m2 if m["role"]=="tool"]
ok = len(rs)==3 and len(tool)==1 and "Restart the pump" in tool[0]["content"] and m2[-2]["tool_calls"][0]["id"]==tool[0]["tool_call_id"]
ok = ok and any(m["role"]=="tool" and "p600" in m["content"] for m in m3[len(m2):])
print(0 if ok else 1)' "$reqs")" "tool results fed back as role=tool messages with the right tool_call_id"
is "$(q "SELECT tokens_total FROM agent.runs WHERE id = $r")" "45" "three calls of 15 tokens"
# the worker's own audit rows name it (issue 32), not an empty human
is "$(q "SELECT string_agg(DISTINCT action || ':' || actor_kind || ':' || coalesce(actor_id, '-'), ',' ORDER BY action || ':' || actor_kind || ':' || coalesce(actor_id, '-'))
         FROM agent.audit_log WHERE target_type = 'run' AND target_id = '$r' AND action IN ('run.claim', 'run.finish')")" \
   "run.claim:system:worker,run.finish:system:worker" "run.claim and run.finish of the worker: actor_kind system, actor_id worker"
done_testing
