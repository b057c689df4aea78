#!/usr/bin/env bash
# MCP: a remote tool server next to a broken one; tools listed, one called.
. "$PG_AGENTS_ENV"
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/mcp_server.py" --port-file "$tmp/port" 2>/dev/null & pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$tmp/port")"
echo "MCP — a small MCP server on $url, and a URL where nothing listens"
psql -XAtq -v ON_ERROR_STOP=1 <<SQL | sed 's/^/  /'
SET pg_agents.workspace = 'demo_mcp';
SELECT 'added ' || string_agg(name, ', ') FROM (
  SELECT 'tools' AS name, agent.mcp_add_server('tools', '$url/mcp', '{"Authorization": "Bearer demo-secret"}')
  UNION ALL SELECT 'down', agent.mcp_add_server('down', 'http://127.0.0.1:9/mcp')) s;
SELECT format('%-6s connected=%s tools=%s %s', name, connected, tool_count, coalesce('error: ' || last_error, ''))
  FROM agent.mcp_status WHERE workspace_id = 'demo_mcp' ORDER BY name;
SELECT 'call mcp__tools__echo -> ' || (agent.mcp_call('tools', 'echo', '{"message": "hello from SQL"}')->'content'->0->>'text');
SELECT 'http://example.com refused: ' || (SELECT agent._mcp_url_problem('http://example.com/mcp'));
SELECT 'status: ' || (agent.mcp_status() - 'tools')::text;
SELECT 'removed both: ' || (agent.mcp_remove_server('tools') AND agent.mcp_remove_server('down'));
SQL
