CREATE OR REPLACE FUNCTION agent._mcp_oauth_apply(p_server_id bigint, p_token text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- the server's workspace (Citus routes by it): the session's, else the server's own
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  -- the header built first (Citus takes no stable call in the UPDATE's CASE)
  v_auth jsonb := CASE WHEN p_token IS NOT NULL
                       THEN pg_catalog.jsonb_build_object('Authorization', 'Bearer ' || p_token) END;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.mcp_servers x WHERE x.workspace_id = v_ws AND x.id = p_server_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.mcp_servers x WHERE x.id = p_server_id;
  END IF;
  UPDATE agent.mcp_servers m
     SET headers = CASE WHEN v_auth IS NULL THEN m.headers - 'Authorization' ELSE m.headers || v_auth END
   WHERE m.workspace_id = v_ws AND m.id = p_server_id;
END
$$;
