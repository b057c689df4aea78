-- MCP catalogue: argument checks and their exact messages (no network:
-- every server is added with refresh => false, every call fails before HTTP).
\set VERBOSITY default
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
-- URL policy
SELECT agent._mcp_url_problem('https://mcp.example.com/mcp') IS NULL AS https_ok;
SELECT agent._mcp_url_problem('http://127.0.0.1:8080/mcp') IS NULL AS loopback_ok,
       agent._mcp_url_problem('http://127.9.9.9/mcp') IS NULL AS loopback8_ok,
       agent._mcp_url_problem('http://[::1]:8080/mcp') IS NULL AS ipv6_loopback_ok,
       agent._mcp_url_problem('http://LOCALHOST/mcp') IS NULL AS localhost_ok;
SELECT u, agent._mcp_url_problem(u) AS problem
  FROM unnest(ARRAY['http://example.com/mcp', 'http://127.0.0.1@example.com/',
                    'http://127.0.0.1.nip.io/', 'http://10.0.0.1/', 'ftp://127.0.0.1/',
                    'file:///etc/passwd', 'mcp.example.com', '']) AS u;
SELECT agent.mcp_add_server('ext', 'http://example.com/mcp', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('bad name', 'https://mcp.example.com/mcp', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', scope => 'org', refresh => false);
ROLLBACK;
BEGIN;
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', scope => 'user', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', owner_id => 'u1', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', '{"Authorization": 42}', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', '["Authorization"]', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', refresh => false) > 0 AS added;
SELECT agent.mcp_add_server('x', 'https://other.example.com/mcp', refresh => false);
ROLLBACK;
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
-- the same name is fine in another scope
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', refresh => false) > 0 AS added,
       agent.mcp_add_server('x', 'https://mcp.example.com/mcp', scope => 'user', owner_id => 'u1', refresh => false) > 0 AS personal_added;
SELECT name, scope, owner_id, enabled, connected, tool_count, last_error
  FROM agent.mcp_status WHERE workspace_id = 'mcp_regress_ws' ORDER BY scope, name;
SELECT agent.mcp_status() - 'tools';
SELECT agent.mcp_remove_server('x') AS removed, agent.mcp_remove_server('x', owner_id => 'u1') AS personal_removed;
SELECT agent.mcp_remove_server(-1) AS removed_nothing;
SELECT agent.mcp_remove_server('x');
ROLLBACK;
-- unknown servers and bad calls
SELECT agent.mcp_refresh('nosuch', 'mcp_regress_ws');
SELECT agent.mcp_refresh(-1::bigint);
SELECT agent.mcp_call('nosuch', 'echo', '{}', 'mcp_regress_ws');
SELECT agent.mcp_call(-1::bigint, 'echo');
BEGIN;
SET LOCAL pg_agents.workspace = 'mcp_regress_ws';
SELECT agent.mcp_add_server('x', 'https://mcp.example.com/mcp', refresh => false) > 0 AS added;
SELECT agent.mcp_call('x', 'echo', '[1]');
ROLLBACK;
SELECT agent.mcp_set_tool_approval(-1, 'echo');
SELECT agent.mcp_set_enabled(-1, false);
-- exposed-name matching
SELECT agent._mcp_match('mcp__gh__create_issue', '["mcp__gh__*"]') AS glob,
       agent._mcp_match('mcp__gh__create_issue', '["mcp__gh__create_issue"]') AS exact,
       agent._mcp_match('mcp__ghx__create_issue', '["mcp__gh__*"]') AS other_server,
       agent._mcp_match('mcpXXgh__a', '["mcp__gh__*"]') AS underscore_is_literal,
       agent._mcp_match('x', NULL) AS no_list, agent._mcp_match('x', '"x"') AS not_an_array;
