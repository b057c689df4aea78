CREATE VIEW agent.mcp_metrics WITH (security_barrier) AS
  SELECT count(*) AS servers,
         count(*) FILTER (WHERE s.enabled) AS enabled,
         count(*) FILTER (WHERE s.enabled AND s.last_error IS NULL AND s.tools_refreshed_at IS NOT NULL) AS connected,
         count(*) FILTER (WHERE s.enabled AND s.last_error IS NOT NULL) AS errored
    FROM agent.mcp_servers s;
COMMENT ON VIEW agent.mcp_metrics IS
  'Counts of the MCP servers of every workspace of the database, for monitoring (pg_monitor): registered, enabled, connected (enabled, refreshed, the last refresh succeeded) and errored (enabled, the last refresh failed). No name, URL or error text.';
COMMENT ON COLUMN agent.mcp_metrics.servers IS 'MCP servers registered.';
COMMENT ON COLUMN agent.mcp_metrics.enabled IS 'Servers enabled.';
COMMENT ON COLUMN agent.mcp_metrics.connected IS 'Enabled servers whose last refresh succeeded.';
COMMENT ON COLUMN agent.mcp_metrics.errored IS 'Enabled servers whose last refresh failed.';
