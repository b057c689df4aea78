CREATE OR REPLACE FUNCTION agent.mcp_oauth_refresh_due(margin interval DEFAULT '5 minutes') RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  c record;
  r jsonb;
  n integer := 0;
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws text := agent._session_workspace();
  v_due timestamptz := now() + margin;
BEGIN
  -- the due authorizations first (of the session's workspace, or of all for
  -- a session bound to none), then each locked in its workspace (Citus
  -- routes by it and refuses FOR UPDATE across workspaces)
  FOR c IN SELECT m.workspace_id, m.server_id FROM agent.mcp_oauth m
            WHERE (v_ws IS NULL OR m.workspace_id = v_ws)
              AND m.status = 'authorized' AND m.expires_at IS NOT NULL AND m.expires_at < v_due
            ORDER BY m.server_id LOOP
    SELECT * INTO o FROM agent.mcp_oauth m
     WHERE m.workspace_id = c.workspace_id AND m.server_id = c.server_id
       AND m.status = 'authorized' AND m.expires_at IS NOT NULL AND m.expires_at < v_due
       FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    IF o.state ? 'refresh_token' OR o.config->>'grant' = 'client_credentials' THEN
      r := agent._mcp_oauth_refresh(o.config, o.state);
    ELSE
      r := pg_catalog.jsonb_build_object('ok', false, 'error', 'the access token expired and there is no refresh token');
    END IF;
    IF (r->>'ok')::boolean THEN
      UPDATE agent.mcp_oauth m
         SET state = r->'state', expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision),
             last_error = NULL, updated_at = now()
       WHERE m.workspace_id = o.workspace_id AND m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, r->'state'->>'access_token');
      n := n + 1;
    ELSIF o.expires_at <= now() OR NOT (o.state ? 'refresh_token') THEN
      -- lapsed: the server's tools fail with a clear error, others go on
      UPDATE agent.mcp_oauth m
         SET status = 'lapsed', last_error = r->>'error', state = m.state - 'access_token' - 'refresh_token',
             updated_at = now()
       WHERE m.workspace_id = o.workspace_id AND m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, NULL);
      UPDATE agent.mcp_servers m
         SET last_error = 'authorization lapsed: ' || (r->>'error') || '; authorize again with agent.mcp_authorize'
       WHERE m.workspace_id = o.workspace_id AND m.id = o.server_id;
    ELSE
      UPDATE agent.mcp_oauth m SET last_error = r->>'error', updated_at = now()
       WHERE m.workspace_id = o.workspace_id AND m.server_id = o.server_id;
    END IF;
  END LOOP;
  RETURN n;
END
$$;
