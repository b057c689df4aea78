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

CREATE FUNCTION agent.mcp_refresh_due(max_age interval DEFAULT '1 hour', max_servers integer DEFAULT 5)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
  n integer := 0;
BEGIN
  IF max_age IS NULL OR max_age < interval '1 minute' THEN
    RAISE EXCEPTION 'max_age must be at least one minute' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR v_id IN SELECT s.id FROM agent.mcp_servers s
               WHERE s.enabled AND s.last_error IS NULL
                 AND (s.tools_stale OR s.tools_refreshed_at < now() - max_age
                      OR (s.tools_ttl_ms IS NOT NULL AND s.tools_refreshed_at <
                          now() - greatest(make_interval(secs => s.tools_ttl_ms / 1000.0), interval '5 minutes')))
                 AND agent._workspace_ok(s.workspace_id)
               ORDER BY s.tools_stale DESC, s.tools_refreshed_at, s.id
               LIMIT greatest(coalesce(max_servers, 5), 1) LOOP
    PERFORM agent.mcp_refresh(v_id);
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh_due(interval, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh_due(interval, integer) IS
  'Worker and admin: lists again the tools of at most max_servers enabled servers whose list is stale (the server said it changed), older than the server''s ttlMs (at least five minutes), or older than max_age (a server whose last refresh failed is left to the admin); returns how many were refreshed.';
