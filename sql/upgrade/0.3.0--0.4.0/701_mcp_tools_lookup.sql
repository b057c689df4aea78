-- mcp (issue 16): an agent's MCP tools with its patterns computed once per
-- agent, not once per tool (sql/src/700_mcp.sql).

-- The same list as LIKE patterns (for name LIKE ANY (...)), computed once
-- per agent rather than once per tool.
\ir ../../functions/agent._mcp_like_patterns.sql

