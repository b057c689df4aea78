-- MCP tools an agent may use (agent.mcp_agent_tools), no network: servers are
-- added with refresh => false and their tools written directly, as a refresh
-- would.  Matrix: server scope (workspace / own personal / another user's
-- personal / another workspace) x enabled x the agent's scope keys
-- (none, mcp_servers, mcp_tools, patterns) x approval flags; then exposed
-- names (mapping, overlength, collisions) and the catalogue privileges.
BEGIN;
SELECT plan(28);

-- (set up by a superuser session bound to no workspace, so that it may add to both)
SET LOCAL pg_agents.workspace = '';
CREATE TEMP TABLE s AS
SELECT agent.mcp_add_server('shared', 'https://mcp.example.com/a', workspace_id => 'mcp_tap_ws', refresh => false) AS shared,
       agent.mcp_add_server('mine', 'https://mcp.example.com/b', scope => 'user', owner_id => 'u1', workspace_id => 'mcp_tap_ws', refresh => false) AS mine,
       agent.mcp_add_server('theirs', 'https://mcp.example.com/c', scope => 'user', owner_id => 'u2', workspace_id => 'mcp_tap_ws', refresh => false) AS theirs,
       agent.mcp_add_server('off', 'https://mcp.example.com/d', workspace_id => 'mcp_tap_ws', refresh => false) AS off,
       agent.mcp_add_server('shared', 'https://mcp.example.com/e', workspace_id => 'mcp_tap_other', refresh => false) AS other;
SET LOCAL pg_agents.workspace = 'mcp_tap_ws';
SELECT agent.mcp_set_enabled((SELECT off FROM s), false);

-- what a refresh stores: exposed names computed by the same function
INSERT INTO agent.mcp_tools (workspace_id, server_id, name, exposed_name, description, annotations)
SELECT m.workspace_id, m.id, t, agent._mcp_exposed_name(m.id, t), 'tool ' || t,
       CASE WHEN t = 'read' THEN '{"readOnlyHint": true}'::jsonb END
  FROM agent.mcp_servers m, unnest(ARRAY['read', 'write']) t
 WHERE m.workspace_id IN ('mcp_tap_ws', 'mcp_tap_other');

INSERT INTO agent.agents (workspace_id, owner_id, name, scope) VALUES
  ('mcp_tap_ws', 'u1', 'none', '{}'),
  ('mcp_tap_ws', 'u1', 'all', '{"mcp_servers": ["*"]}'),
  ('mcp_tap_ws', 'u1', 'shared-only', '{"mcp_servers": ["shared"]}'),
  ('mcp_tap_ws', 'u1', 'tools', '{"mcp_tools": ["mcp__mine__read", "mcp__shared__w*"]}'),
  ('mcp_tap_ws', 'u1', 'approval', '{"mcp_servers": ["*"], "needs_approval": ["mcp__shared__*"]}'),
  ('mcp_tap_ws', 'u2', 'other-owner', '{"mcp_servers": ["*"]}');
CREATE TEMP TABLE ag AS SELECT name, id FROM agent.agents WHERE workspace_id = 'mcp_tap_ws';
CREATE FUNCTION pg_temp.tools(p_agent text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(exposed_name, ',' ORDER BY exposed_name), '')
    FROM agent.mcp_agent_tools((SELECT id FROM ag WHERE name = p_agent)) $$;

SELECT is(pg_temp.tools('none'), '', 'no scope key: no MCP tool');
SELECT is(pg_temp.tools('all'), 'mcp__mine__read,mcp__mine__write,mcp__shared__read,mcp__shared__write',
          'all: workspace and own personal servers; not another user''s, not disabled, not another workspace''s');
SELECT is(pg_temp.tools('shared-only'), 'mcp__shared__read,mcp__shared__write', 'mcp_servers by name');
SELECT is(pg_temp.tools('tools'), 'mcp__mine__read,mcp__shared__write', 'mcp_tools by exposed name and pattern');
SELECT is(pg_temp.tools('other-owner'), 'mcp__shared__read,mcp__shared__write,mcp__theirs__read,mcp__theirs__write',
          'another owner sees its own personal servers only');
SELECT is((SELECT string_agg(exposed_name || '=' || needs_approval, ',' ORDER BY exposed_name)
             FROM agent.mcp_agent_tools((SELECT id FROM ag WHERE name = 'approval'))),
          'mcp__mine__read=false,mcp__mine__write=false,mcp__shared__read=true,mcp__shared__write=true',
          'scope.needs_approval patterns');
SELECT agent.mcp_set_tool_approval((SELECT mine FROM s), 'write');
SELECT is((SELECT needs_approval FROM agent.mcp_agent_tools((SELECT id FROM ag WHERE name = 'all'))
            WHERE exposed_name = 'mcp__mine__write'), true, 'mcp_set_tool_approval flags a tool');
SELECT is((SELECT string_agg(exposed_name || '=' || read_only, ',' ORDER BY exposed_name)
             FROM agent.mcp_agent_tools((SELECT id FROM ag WHERE name = 'shared-only'))),
          'mcp__shared__read=true,mcp__shared__write=false', 'read_only from the readOnlyHint annotation');
SELECT is((SELECT count(*) FROM agent.mcp_agent_tools(-1))::int, 0, 'unknown agent: nothing');
UPDATE agent.agents SET deleted_at = now() WHERE id = (SELECT id FROM ag WHERE name = 'all');
SELECT is(pg_temp.tools('all'), '', 'deleted agent: nothing');
SELECT agent.mcp_set_enabled((SELECT off FROM s), true);
SELECT is(pg_temp.tools('shared-only') || '|' || pg_temp.tools('other-owner'),
          'mcp__shared__read,mcp__shared__write|mcp__off__read,mcp__off__write,mcp__shared__read,mcp__shared__write,mcp__theirs__read,mcp__theirs__write',
          'an enabled server is offered at once (no restart)');
SELECT agent.mcp_remove_server('theirs', owner_id => 'u2');
SELECT is(pg_temp.tools('other-owner'), 'mcp__off__read,mcp__off__write,mcp__shared__read,mcp__shared__write',
          'a removed server is gone at once');

-- exposed names
SELECT is(agent._mcp_exposed_name((SELECT shared FROM s), 'get.weather forecast'),
          'mcp__shared__get_weather_forecast', 'characters outside [a-zA-Z0-9_-] become _');
SELECT matches(agent._mcp_exposed_name((SELECT shared FROM s), repeat('x', 80)),
               '^mcp__shared__x{42}_[0-9a-f]{8}$', 'overlength: cut to 55 and hash-suffixed, 64 in all');
SELECT is(length(agent._mcp_exposed_name((SELECT shared FROM s), repeat('x', 80))), 64, 'at most 64 characters');
SELECT is(agent._mcp_exposed_name((SELECT shared FROM s), repeat('x', 80)),
          agent._mcp_exposed_name((SELECT shared FROM s), repeat('x', 80)), 'deterministic');
INSERT INTO agent.mcp_tools (workspace_id, server_id, name, exposed_name)
VALUES ('mcp_tap_ws', (SELECT shared FROM s), 'a.b', agent._mcp_exposed_name((SELECT shared FROM s), 'a.b'));
SELECT is(agent._mcp_exposed_name((SELECT shared FROM s), 'a.b'), 'mcp__shared__a_b', 'a stored tool keeps its name');
SELECT matches(agent._mcp_exposed_name((SELECT shared FROM s), 'a_b'), '^mcp__shared__a_b_[0-9a-f]{8}$',
               'a collision within one server gets a hash suffix');
SELECT agent.mcp_add_server('shared', 'https://mcp.example.com/f', scope => 'user', owner_id => 'u3', refresh => false);
SELECT matches(agent._mcp_exposed_name(agent._mcp_server_id('shared', 'mcp_tap_ws', 'u3'), 'read'),
               '^mcp__shared__read_[0-9a-f]{8}$', 'a personal server named like a workspace server gets hash suffixes');
SELECT is(agent._mcp_exposed_name((SELECT other FROM s), 'read'), 'mcp__shared__read',
          'no collision across workspaces');
SELECT is(agent._mcp_exposed_name((SELECT mine FROM s), 'read'), 'mcp__mine__read', 'unchanged when nothing collides');
SELECT ok((SELECT bool_and(exposed_name ~ '^[a-zA-Z0-9_-]{1,64}$') FROM agent.mcp_tools), 'every stored exposed name fits the provider alphabet');

-- privileges
SELECT ok(NOT has_table_privilege('public', 'agent.mcp_servers', 'SELECT'), 'mcp_servers not readable by PUBLIC');
SELECT ok(NOT has_column_privilege('public', 'agent.mcp_servers', 'headers', 'SELECT'), 'headers not readable by PUBLIC');
SELECT ok(NOT has_table_privilege('public', 'agent.mcp_status', 'SELECT'), 'agent.mcp_status not readable by PUBLIC (it trusts pg_agents.workspace)');
SELECT ok(has_table_privilege('agents_app', 'agent.mcp_status', 'SELECT'), 'agent.mcp_status readable by agents_app');
SELECT hasnt_column('agent', 'mcp_status', 'headers', 'the status view has no headers column');
SELECT ok(NOT has_function_privilege('public', 'agent.mcp_add_server(text, text, jsonb, text, text, text, text, boolean)', 'EXECUTE'),
          'mcp_add_server not executable by PUBLIC');

SELECT * FROM finish();
ROLLBACK;
