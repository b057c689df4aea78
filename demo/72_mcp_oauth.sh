#!/usr/bin/env bash
# MCP with OAuth 2.1: a server behind a local authorization server, authorized
# through SQL (the user's consent is a redirect the application receives),
# then called with the user's token; the token itself is never shown.
. "$PG_AGENTS_ENV"
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/oauth_server.py" --port-file "$tmp/port" 2>/dev/null & pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$tmp/port")"
echo "MCP OAuth — an MCP server on $url/mcp protected by the authorization server $url/as"
sql() { psql -XAtq -v ON_ERROR_STOP=1 -c "SET pg_agents.workspace = 'demo_oauth'" -c "$1" | sed 's/^/  /'; }
sid=$(psql -XAtq -v ON_ERROR_STOP=1 -c "SELECT agent.mcp_add_server('secure', '$url/mcp', workspace_id => 'demo_oauth')")
sql "SELECT 'before: connected=' || connected || ', ' || last_error FROM agent.mcp_status WHERE server_id = $sid"
sql "SELECT 'agent.mcp_set_oauth: OAuth on, the client will register itself' FROM (SELECT agent.mcp_set_oauth($sid)) s"
auth=$(psql -XAtq -v ON_ERROR_STOP=1 -c "SET pg_agents.workspace = 'demo_oauth'" \
            -c "SELECT agent.mcp_authorize($sid, 'alice', 'https://app.example.com/oauth/callback')")
echo "  agent.mcp_authorize -> ${auth:0:110}…"
redirect=$(curl -s -o /dev/null -w '%{redirect_url}' "$auth")
echo "  the user consents; the application receives ${redirect:0:90}…"
p() { python3 -c 'import sys,urllib.parse; print(dict(urllib.parse.parse_qsl(urllib.parse.urlparse(sys.argv[1]).query))[sys.argv[2]])' "$redirect" "$1"; }
sql "SELECT 'agent.mcp_authorization_callback -> ' || agent.mcp_authorization_callback('$(p state)', '$(p code)', '$(p iss)', 'alice')"
sql "SELECT format('status=%s by %s, expires in about %s min', status, authorized_by, round(extract(epoch FROM expires_at - now()) / 60)) FROM agent.mcp_oauth_status WHERE server_id = $sid"
sql "SELECT 'after: connected=' || connected || ', tools=' || tool_count FROM agent.mcp_status WHERE server_id = $sid"
sql "SELECT 'call mcp__secure__whoami -> ' || (agent.mcp_call($sid, 'whoami', '{}')->'content'->0->>'text')"
sql "SELECT 'removed: ' || agent.mcp_remove_server($sid)"
