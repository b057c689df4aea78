-- agent.mcp_metrics (monitoring/pg_agents_queries.yaml, issue 32)

-- ---------------------------------------------------------------------------
-- agent.mcp_metrics: counts of the MCP servers of the database, for pg_monitor
-- (monitoring/pg_agents_queries.yaml); no name, URL or error text
-- ---------------------------------------------------------------------------
\ir ../../views/agent.mcp_metrics.sql
