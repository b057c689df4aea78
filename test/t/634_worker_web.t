#!/usr/bin/env bash
# The web switch (issue 31): web_fetch(url) through the worker, with the
# scripted LLM and a real web site on 127.0.0.1 (test/fixtures/web_server.py).
# Off (web_access false, the default): the tool is not offered and a call is
# refused.  On: a page is read as text (HTML reduced by libxml2), a long one
# is cut and the cut is said; a scheme other than http(s), credentials in
# the URL, a host outside the lists, a loopback, private or link-local
# address (also behind a DNS name or a redirect) and plain http to a public
# address are refused before any connection; every call is a step and an
# audit row, and approval applies.  No network beyond loopback is used: a
# refused address is never connected to.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/web_server.py" --port-file "$tmp/web.port" >/dev/null 2>&1 & webpid=$!
settings_reset() {
    q "ALTER SYSTEM RESET pg_agents.web_fetch_allowed_networks" >/dev/null
    q "ALTER SYSTEM RESET pg_agents.web_fetch_allowed_hosts" >/dev/null
    q "ALTER SYSTEM RESET pg_agents.web_fetch_max_bytes" >/dev/null
    q "SELECT pg_reload_conf()" >/dev/null
}
trap 'settings_reset; llm_stop; kill $webpid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/web.port" ] && break; sleep 0.05; done
P=$(cat "$tmp/web.port")
W="http://127.0.0.1:$P"
WS=ws634
OWNER=owner634

# sets web_fetch settings for the worker (it reloads its configuration on its next loop)
set_web() {
    settings_reset
    local kv
    for kv in "$@"; do q "ALTER SYSTEM SET pg_agents.${kv%%=*} = '${kv#*=}'" >/dev/null; done
    q "SELECT pg_reload_conf()" >/dev/null
    sleep 2
}
# the web_fetch steps of a run, in order: kind, status, and a field of the output
steps() { q "SELECT string_agg(kind || ' ' || coalesce(output ->> '$2', output ->> 'error', output ->> 'reason', ''), E'\n' ORDER BY seq) FROM agent.run_steps WHERE run_id = $1 AND name = 'web_fetch'"; }
step_n() { q "SELECT kind || ' ' || coalesce(output ->> '$3', '') FROM agent.run_steps WHERE run_id = $1 AND name = 'web_fetch' ORDER BY seq OFFSET $2 LIMIT 1"; }
offered() { q "SELECT coalesce(input -> 'tools' ? 'web_fetch', false) FROM agent.run_steps WHERE run_id = $1 AND kind = 'llm' ORDER BY seq LIMIT 1"; }
# one run of agent $1 calling web_fetch on each URL; prints the run id
fetch_run() {
    local a=$1 key=$2 script="[" u
    shift 2
    for u in "$@"; do script="$script{\"tool\": \"web_fetch\", \"input\": {\"url\": \"$u\"}}, "; done
    llm_script "[[$key]]" "$script{\"text\": \"done\"}]"
    start_run "$a" "{\"prompt\": \"Read the web [[$key]]\"}" autonomous "$OWNER"
}

set_web "web_fetch_allowed_networks=127.0.0.1/32" "web_fetch_max_bytes=16kB"

# 1. off: not offered, and a call is refused (a denied step and an audit row)
off=$(mk_agent "web634off" '{}' none '[]' 10 "$WS" "$OWNER")
is "$(q "SELECT web_access FROM agent.agents WHERE id = $off")" f "web_access is off by default"
r=$(fetch_run "$off" t634off "$W/page.html")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run of the agent without web access succeeds"
is "$(offered "$r")" f "web_fetch is not offered when web_access is off"
is "$(step_n "$r" 0 reason)" "denied web_access_off" "a web_fetch call is refused: a denied step"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'tool.web_fetch' AND status = 'denied' AND actor_id = '$off' AND error_code = 'web_access_off'")" 1 \
   "and an audit row"

# 2. on: offered; the page read as text, its script and style left out
on=$(mk_agent "web634on" '{}' none '[]' 20 "$WS" "$OWNER")
q "UPDATE agent.agents SET web_access = true WHERE id = $on" >/dev/null
r=$(fetch_run "$on" t634page "$W/page.html" "$W/plain.txt" "$W/big.html" "$W/binary" "$W/missing" "$W/loop")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run of the agent with web access succeeds"
is "$(offered "$r")" t "web_fetch is offered when web_access is on"
text=$(step_n "$r" 0 text)
is "$(step_n "$r" 0 title)" "tool Release notes 634" "the page's title"
like "$text" "Version 6.3.4" "the heading is in the text"
like "$text" "The quick fix for & bug 634." "inline markup and entities become plain text"
like "$text" "- first item" "list items are lines"
unlike "$text" "script text 634|color: red|noscript text 634|<p>" "no script, style, noscript or tag"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'tool.web_fetch' AND status = 'success' AND actor_id = '$on' AND target_id = '$W/page.html'")" 1 \
   "the fetch is audited, as agent:$on"
is "$(step_n "$r" 1 text)" "tool plain text 634 été" "text/plain is returned as it is"
is "$(step_n "$r" 2 truncated)" "tool true" "a page over pg_agents.web_fetch_max_bytes is cut"
like "$(step_n "$r" 2 note)" "cut at 16384 bytes \\(pg_agents.web_fetch_max_bytes\\)" "and the result says so"
unlike "$(step_n "$r" 2 text)" "THE END 634" "the rest of the page is not read"
like "$(step_n "$r" 3 error)" "application/octet-stream, not text" "a binary answer is an error the model reads"
like "$(step_n "$r" 4 status)" "tool 404" "a 404 page is returned with its status"
like "$(step_n "$r" 5 error)" "more than 5 redirects" "a redirect loop stops at pg_agents.web_fetch_max_redirects"

# 3. refused before any connection: schemes, credentials, addresses, plain http to a public address
r=$(fetch_run "$on" t634deny "file:///etc/passwd" "ftp://127.0.0.1:$P/" "http://u:pw@127.0.0.1:$P/page.html" \
    "http://127.0.0.2:$P/page.html" "http://169.254.169.254/latest/meta-data/" "http://10.1.2.3/" "http://[::1]:$P/" \
    "http://93.184.216.34/" "$W/redirect?to=http://169.254.169.254/latest/meta-data/" \
    "$W/redirect?to=http://127.0.0.2:$P/page.html" "$W/redirect?to=file:///etc/passwd" "not a url")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run with refused fetches succeeds"
is "$(steps "$r" reason)" "denied scheme_not_allowed
denied scheme_not_allowed
denied credentials_in_url
denied address_not_allowed
denied address_not_allowed
denied address_not_allowed
denied address_not_allowed
denied https_required
denied address_not_allowed
denied address_not_allowed
denied scheme_not_allowed
denied invalid_url" "each is refused with its reason"
is "$(q "SELECT output ->> 'reason' FROM agent.run_steps WHERE run_id = $r AND name = 'web_fetch' AND kind = 'denied' AND input ->> 'url' LIKE '%169.254%' ORDER BY seq LIMIT 1")" \
   address_not_allowed "the cloud metadata address is refused"
llm_requests | python3 -c '
import json,sys
rs=[r for r in json.load(sys.stdin) if r["key"]=="[[t634deny]]"]
msgs=[m["content"] for m in rs[-1]["body"]["messages"] if m["role"]=="tool"]
print("\n".join(msgs))' > "$tmp/deny.txt"
like "$(cat "$tmp/deny.txt")" "169.254.169.254, a link-local address" "the model is told why: a link-local address"
like "$(cat "$tmp/deny.txt")" "redirect to http://127.0.0.2:$P/page.html refused: the host resolves to 127.0.0.2, a loopback address" \
   "a redirect to a refused address is refused, and said so"
like "$(cat "$tmp/deny.txt")" "only https is fetched from public addresses" "plain http to a public address is refused"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'tool.web_fetch' AND status = 'denied' AND actor_id = '$on'")" 12 \
   "every refusal is audited"

# 4. the host lists: a DNS name outside pg_agents.web_fetch_allowed_hosts, also behind a redirect
set_web "web_fetch_allowed_networks=127.0.0.1/32" "web_fetch_allowed_hosts=127.0.0.1"
r=$(fetch_run "$on" t634hosts "http://localhost:$P/page.html" "$W/redirect?to=http://localhost:$P/page.html" "$W/plain.txt")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run under a host list succeeds"
is "$(steps "$r" reason)" "denied host_not_allowed
denied host_not_allowed
tool " "a host not listed is refused, directly or after a redirect; a listed one is fetched"

# 5. by default no loopback at all: a DNS name resolving to 127.0.0.1, and the address itself
set_web
r=$(fetch_run "$on" t634default "http://localhost:$P/page.html" "$W/page.html")
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "the run under the default settings succeeds"
is "$(steps "$r" reason)" "denied address_not_allowed
denied address_not_allowed" "by default a name resolving to loopback, and loopback itself, are refused"

# 6. approval: an agent whose every call needs approval waits before fetching
set_web "web_fetch_allowed_networks=127.0.0.1/32"
ask=$(mk_agent "web634ask" '{}' all '[]' 10 "$WS" "$OWNER")
q "UPDATE agent.agents SET web_access = true WHERE id = $ask" >/dev/null
r=$(fetch_run "$ask" t634ask "$W/page.html")
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 60)" waiting_approval "web_fetch goes through the approval gate"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'tool.web_fetch' AND actor_id = '$ask'")" 0 "nothing was fetched before the approval"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.approve('$key', '$OWNER')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 60)" succeeded "approved, the run goes on"
like "$(steps "$r" title)" "tool Release notes 634" "and the page is fetched once approved"
done_testing
