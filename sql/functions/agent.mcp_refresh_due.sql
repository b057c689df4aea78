CREATE OR REPLACE FUNCTION agent.mcp_refresh_due(max_age interval DEFAULT '1 hour', max_servers integer DEFAULT 5)
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
