-- pg_agents: periodic refresh of MCP tool lists (docs/mcp.md, "In the worker").
--
-- The worker calls agent.mcp_refresh_due() every 30 seconds: servers whose
-- tools were listed longer ago than max_age, longer ago than the ttlMs the
-- server gave with its list (2026-07-28; a shorter one counts as five
-- minutes: a pass lists a few servers synchronously), or that said their list changed
-- (notifications/tools/list_changed in a stream the worker had open) are
-- listed again (a few per call), so that a server's new or removed tools
-- reach agents without an admin's agent.mcp_refresh.  Servers whose last
-- refresh failed are left to the admin (their error stays visible in
-- agent.mcp_status).

ALTER TABLE agent.mcp_servers ADD COLUMN tools_ttl_ms integer;
ALTER TABLE agent.mcp_servers ADD COLUMN tools_stale boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN agent.mcp_servers.tools_ttl_ms IS 'ttlMs the server gave with its last tools/list (how long the list may be cached), NULL when it gave none; the worker lists again once it passed.';
COMMENT ON COLUMN agent.mcp_servers.tools_stale IS 'The server said its tool list changed (notifications/tools/list_changed during a worker''s call): listed again at the worker''s next refresh pass.';

\ir ../functions/agent.mcp_refresh_due.sql
