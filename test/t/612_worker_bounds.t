#!/usr/bin/env bash
# Attack (issue 14 #11): unbounded replies.  A model (or whoever answers at
# the agent's endpoint) asks for 5,000 tool calls in one turn, or sends a
# reply of 32 MB.  Now: past pg_agents.max_tool_calls_per_turn (64) the run
# fails before any call is executed; past pg_agents.max_reply_bytes (4MB)
# the worker stops reading (the Content-Length, or the body as it comes)
# and the run fails with the reason.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
cleanup() {
    llm_stop
    q "ALTER SYSTEM RESET pg_agents.max_tool_calls_per_turn" >/dev/null
    q "ALTER SYSTEM RESET pg_agents.max_reply_bytes" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
}
trap cleanup EXIT
reload() { q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5; }
sent() {  # bytes of the body the server could send for the last request of a key
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
print(rs[-1].get("sent", "none") if rs else "no request")' "$1"
}
tool_steps() { q "SELECT count(*) FROM agent.run_steps WHERE run_id = $1 AND name = 'read_resource'"; }

q "CREATE TABLE IF NOT EXISTS public.w622_pages (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w622_pages; INSERT INTO public.w622_pages VALUES ('p622', 'Note', 'Short.');
   SELECT agent.register_resource_table('page', 'public.w622_pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON public.w622_pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p622', 'user:owner622', 'read') ON CONFLICT DO NOTHING;" >/dev/null
a=$(mk_agent "bounded622" '{}' none '[]' 10 w622 owner622)
b=$(mk_agent "other622" '{}' none '[]' 10 w622b owner622b)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($a, 'page', 'p622', 'read')" >/dev/null
call='{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p622"}'

# 1. 5,000 tool calls in one reply: refused before any is executed
llm_script "[[t622a]]" "[$call, \"tool_count\": 5000}]"
r=$(start_run "$a" '{"prompt": "go [[t622a]]"}' autonomous owner622)
is "$(wait_status "$r" "succeeded|failed" 60)" "failed" "a reply with 5,000 tool calls fails the run"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" \
   "the model asked for 5000 tool calls in one reply, more than pg_agents.max_tool_calls_per_turn (64)" "with the reason"
is "$(tool_steps "$r")" 0 "and none of the calls was executed"

# 2. at the cap the calls run; one past it, they do not
q "ALTER SYSTEM SET pg_agents.max_tool_calls_per_turn = 3" >/dev/null; reload
llm_script "[[t622b]]" "[$call, \"tool_count\": 3}, {\"text\": \"read thrice\"}]"
r=$(start_run "$a" '{"prompt": "go [[t622b]]"}' autonomous owner622)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "3 calls with pg_agents.max_tool_calls_per_turn = 3: the run goes on"
is "$(tool_steps "$r")" 3 "the 3 calls were executed"
llm_script "[[t622c]]" "[$call, \"tool_count\": 4}]"
r=$(start_run "$b" '{"prompt": "go [[t622c]]"}' autonomous owner622b)
is "$(wait_status "$r" "succeeded|failed" 60)" "failed" "4 calls: the run fails (another workspace, same bound)"
is "$(tool_steps "$r")" 0 "nothing executed"
q "ALTER SYSTEM RESET pg_agents.max_tool_calls_per_turn" >/dev/null

# 3. a 32 MB reply with pg_agents.max_reply_bytes = 1MB
q "ALTER SYSTEM SET pg_agents.max_reply_bytes = '1MB'" >/dev/null; reload
llm_script "[[t622d]]" '[{"huge": 33554432, "chunked": true}]'
r=$(start_run "$a" '{"prompt": "huge [[t622d]]"}' autonomous owner622)
is "$(wait_status "$r" "succeeded|failed" 60)" "failed" "a 32 MB reply (chunked, no Content-Length) fails the run"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" \
   "the LLM reply is larger than pg_agents.max_reply_bytes (1048576 bytes): the worker stopped reading it" "with the reason"
s=$(sent "[[t622d]]")
ok "$([ "$s" -lt 33554432 ] 2>/dev/null && echo 0)" "the worker stopped reading: the server could not send it all ($s bytes went out)"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND kind = 'error' AND status = 'retry'")" 0 "and it is not retried"
llm_script "[[t622e]]" '[{"huge": 33554432}]'
r=$(start_run "$a" '{"prompt": "huge [[t622e]]"}' autonomous owner622)
is "$(wait_status "$r" "succeeded|failed" 60)" "failed" "announced by Content-Length: refused too"
s=$(sent "[[t622e]]")
ok "$([ "$s" -lt 33554432 ] 2>/dev/null && echo 0)" "without reading the body ($s bytes went out)"
llm_script "[[t622f]]" '[{"huge": 500000}]'
r=$(start_run "$a" '{"prompt": "big but fine [[t622f]]"}' autonomous owner622)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "a reply under the cap (500 kB) is read"
is "$(q "SELECT length(output->>'text') FROM agent.runs WHERE id = $r")" 500000 "whole"

# 4. the default, 4MB
q "ALTER SYSTEM RESET pg_agents.max_reply_bytes" >/dev/null; reload
llm_script "[[t622g]]" '[{"huge": 5000000, "chunked": true}]'
r=$(start_run "$a" '{"prompt": "default [[t622g]]"}' autonomous owner622)
is "$(wait_status "$r" "succeeded|failed" 60)" "failed" "5 MB with the default pg_agents.max_reply_bytes fails"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" \
   "the LLM reply is larger than pg_agents.max_reply_bytes (4194304 bytes): the worker stopped reading it" "at 4MB"
done_testing
