-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md).  Install and
-- upgrade both end with this file, so it states the whole model and must
-- stay idempotent.
-- ===========================================================================
SELECT 1 WHERE false;

-- worker: the MCP status, scoped by the session's workspace (the function
-- takes owner_id on trust: the application only)
GRANT SELECT ON agent.mcp_status TO agents_app, agents_reader;
GRANT EXECUTE ON FUNCTION agent.mcp_status(text, text) TO agents_app;
-- (the application API the worker's tests use; also in the full statement)
GRANT EXECUTE ON FUNCTION agent.create_agent(text, text, text, jsonb),
  agent.save_settings(bigint, jsonb, text, text), agent.share(bigint, text, text, text),
  agent.approve(text, text), agent.approve(text, text, bigint) TO agents_app;
