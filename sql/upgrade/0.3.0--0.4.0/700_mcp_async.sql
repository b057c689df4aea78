-- 0.3.0 -> 0.4.0, MCP calls of the worker made asynchronous
-- (sql/src/700_mcp.sql, 707_mcp_refresh.sql, 708_mcp_worker.sql): the tool
-- list's ttlMs and list_changed staleness, agent.mcp_refresh storing them,
-- agent.mcp_refresh_due honouring them, and the worker's prepare/finish
-- functions.

ALTER TABLE agent.mcp_servers ADD COLUMN tools_ttl_ms integer;
ALTER TABLE agent.mcp_servers ADD COLUMN tools_stale boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN agent.mcp_servers.tools_ttl_ms IS 'ttlMs the server gave with its last tools/list (how long the list may be cached), NULL when it gave none; the worker lists again once it passed.';
COMMENT ON COLUMN agent.mcp_servers.tools_stale IS 'The server said its tool list changed (notifications/tools/list_changed during a worker''s call): listed again at the worker''s next refresh pass.';

\ir ../../functions/agent.mcp_refresh_due.sql

COMMENT ON FUNCTION agent._mcp_list(bigint, text, jsonb) IS
  'Internal: initialize and tools/list (all pages) over HTTP from this backend; returns {"ok": true, "protocolVersion", "serverInfo", "tools", "ttlMs"?} or {"ok": false, "error"}; never raises for a remote failure.';

\ir ../../functions/agent.mcp_refresh.sql

\ir ../../functions/agent._mcp_worker_prepare.sql
REVOKE ALL ON FUNCTION agent._mcp_worker_prepare(bigint, text, jsonb, bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_prepare(bigint, text, jsonb, bigint, text, jsonb) IS
  'Internal (worker): prepares an MCP tool call of a run (the tool as agent.mcp_agent_tools gave it, the approval gate passed) for the asynchronous request: {"prepared": true, "server_id", "server", "tool", "url", "headers", "protocol_version", "arguments", "tool_def", "input_responses"?, "request_state"?} (an answered elicitation of this call is consumed with its approval), or a refusal when the server is gone or disabled. Holds the server''s headers: superusers only, never recorded.';

\ir ../../functions/agent._mcp_worker_finish.sql
