#!/usr/bin/env bash
# What goes back to the model is bounded (issue 36, finding 4): an MCP tool
# answering 12 MB, and a built-in read of a large page, reach the next LLM
# request cut at pg_agents.max_tool_result_bytes with the cut said in the
# text; past pg_agents.max_request_bytes the oldest tool results of the
# conversation are elided, and the elision is said.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/mcp_server.py" --big-tools --port-file "$tmp/py.port" >/dev/null 2>&1 & pypid=$!
trap 'llm_stop; kill $pypid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/py.port" ] && break; sleep 0.05; done
PY="http://127.0.0.1:$(cat "$tmp/py.port")"
WS=ws714
OWNER=owner714
q "SELECT agent.mcp_add_server('big', '$PY/mcp', workspace_id => '$WS')" >/dev/null
a=$(mk_agent "caps714" '{"mcp_tools": ["mcp__big__big", "mcp__big__flood"]}' none '[]' 10 "$WS" "$OWNER")

# sizes of request N (0-based) of a key: the whole body, and its tool messages
req_info() {
    llm_requests | python3 -c '
import json,sys; rs=[r for r in json.load(sys.stdin) if r["key"]==sys.argv[1]]
n=int(sys.argv[2])
if len(rs)<=n: print("no request %d" % n); sys.exit()
b=rs[n]["body"]; tools=[m["content"] for m in b["messages"] if m["role"]=="tool"]
print(len(json.dumps(b)), " | ".join(t[-120:] if len(t)>120 else t for t in tools))' "$1" "$2"
}

# 1. an MCP tool answering 12 MB
llm_script "[[t714a]]" '[{"tool": "mcp__big__big", "input": {"bytes": 12000000}}, {"text": "read it"}]'
r=$(start_run "$a" '{"prompt": "Fetch it all [[t714a]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 90)" succeeded "the run with a 12 MB MCP result succeeds"
info=$(req_info "[[t714a]]" 1)
size=${info%% *}
ok "$([ "$size" -lt 200000 ] 2>/dev/null && echo 0 || echo 1)" "the next request is under 200 kB (got ${size} bytes)"
ok "$(echo "$info" | grep -qE '\[truncated: [0-9]+ bytes of [0-9]+; pg_agents.max_tool_result_bytes\]' && echo 0 || echo 1)" \
   "the model is told the result was cut, and of how much"

# 2. a built-in tool alike: read_resource of a 1 MB page
q "CREATE TABLE IF NOT EXISTS public.w714_pages (id text PRIMARY KEY, title text, body text);
   TRUNCATE public.w714_pages;
   INSERT INTO public.w714_pages VALUES ('big714', 'Big', repeat('y', 1000000));
   SELECT agent.register_resource_table('page', 'public.w714_pages', 'id', 'title', 'body');
   GRANT SELECT ON public.w714_pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'big714', 'user:$OWNER', 'read') ON CONFLICT DO NOTHING" >/dev/null
q "INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access) VALUES ('$WS', $a, 'page', 'big714', 'read')" >/dev/null
llm_script "[[t714b]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "big714"}}, {"text": "read"}]'
r=$(start_run "$a" '{"prompt": "Read the big page [[t714b]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run reading a 1 MB page succeeds"
info=$(req_info "[[t714b]]" 1)
size=${info%% *}
ok "$([ "$size" -lt 200000 ] 2>/dev/null && echo 0 || echo 1)" "the next request is under 200 kB (got ${size} bytes)"
ok "$(echo "$info" | grep -q '\[truncated: ' && echo 0 || echo 1)" "and says the cut"

# 3. the per-request cap: three 60 kB results, the request capped at 100 kB
q "ALTER SYSTEM SET pg_agents.max_request_bytes = '100kB'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
sleep 2   # the worker reloads its configuration on its next loop
llm_script "[[t714c]]" '[{"tool": "mcp__big__big", "input": {"bytes": 60000}}, {"tool": "mcp__big__big", "input": {"bytes": 60000}},
                         {"tool": "mcp__big__big", "input": {"bytes": 60000}}, {"text": "all read"}]'
r=$(start_run "$a" '{"prompt": "Three times [[t714c]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run with three 60 kB results succeeds"
info=$(req_info "[[t714c]]" 3)
size=${info%% *}
ok "$([ "$size" -le 102400 ] 2>/dev/null && echo 0 || echo 1)" "the last request is within pg_agents.max_request_bytes (got ${size} bytes)"
ok "$(echo "$info" | grep -q '\[elided: an older tool result of [0-9]* bytes, to keep the request under pg_agents.max_request_bytes\]' && echo 0 || echo 1)" \
   "older results are elided, and the model is told"
ok "$(echo "$info" | grep -q 'xxxxxxxx"}$' && echo 0 || echo 1)" "the newest result is kept"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND name = 'mcp__big__big' AND status = 'ok'")" 3 "the three calls are recorded as steps"
q "ALTER SYSTEM RESET pg_agents.max_request_bytes" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
# 4. an MCP server whose SSE event never ends (data lines, no blank line,
# 40 MB): the event is cut at the body's bound, not gathered until the call's
# time-out, and the model sees the reason
llm_script "[[t714d]]" '[{"tool": "mcp__big__flood", "input": {"bytes": 40000000}}, {"text": "flooded"}]'
r=$(start_run "$a" '{"prompt": "Flood [[t714d]]"}' autonomous "$OWNER")
is "$(wait_status "$r" "succeeded|failed" 90)" succeeded "the run whose MCP event never ends still ends"
like "$(q "SELECT output::text FROM agent.run_steps WHERE run_id = $r AND name = 'mcp__big__flood'")" \
     "larger than 16777216 bytes" "the call fails with the bound, not with the end of the stream or a time-out"
done_testing
