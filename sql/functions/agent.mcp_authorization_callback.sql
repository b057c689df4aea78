CREATE OR REPLACE FUNCTION agent.mcp_authorization_callback(state text, code text, iss text, by_user text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_name text;
  v_ws text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(mcp_authorization_callback.by_user, ''), true);
  IF state IS NULL OR state = '' THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the state's workspace first, then the row locked in it (Citus routes by it)
  SELECT m.workspace_id INTO v_ws FROM agent.mcp_oauth m WHERE m.pending_state = mcp_authorization_callback.state;
  SELECT * INTO o FROM agent.mcp_oauth m
   WHERE m.workspace_id = v_ws AND m.pending_state = mcp_authorization_callback.state FOR UPDATE;
  IF NOT FOUND OR NOT agent._workspace_ok(o.workspace_id)
     OR o.pending_at < now() - pg_catalog.current_setting('pg_agents.approval_ttl')::interval THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the user completing the flow is the one who started it (no login CSRF);
  -- the state stays pending for them
  IF by_user IS NULL OR by_user IS DISTINCT FROM o.pending_by_user THEN
    RAISE EXCEPTION 'user "%" did not start this authorization', coalesce(by_user, 'NULL')
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'An authorization is completed by the user who started it with agent.mcp_authorize.';
  END IF;
  SELECT m.name INTO v_name FROM agent.mcp_servers m WHERE m.id = o.server_id;
  -- single use: whatever comes of it, this state is spent
  UPDATE agent.mcp_oauth m SET pending_state = NULL WHERE m.server_id = o.server_id;
  r := agent._mcp_oauth_complete(o.config || pg_catalog.jsonb_build_object('redirect_uri', o.state->>'redirect_uri'),
                                 o.state, coalesce(code, ''), state, iss);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_oauth m
       SET last_error = r->>'error', pending_by_user = NULL, pending_at = NULL,
           status = CASE WHEN m.status = 'pending' THEN 'unauthorized' ELSE m.status END,
           state = m.state - 'state' - 'verifier', updated_at = now()
     WHERE m.server_id = o.server_id;
    RAISE WARNING 'the authorization of MCP server "%" failed', v_name
      USING DETAIL = r->>'error';
    RETURN false;
  END IF;
  UPDATE agent.mcp_oauth m
     SET state = r->'state', status = 'authorized', pending_by_user = NULL, pending_at = NULL,
         authorized_by = o.pending_by_user, authorized_at = now(),
         expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision),
         last_error = NULL, updated_at = now()
   WHERE m.server_id = o.server_id;
  PERFORM agent._mcp_oauth_apply(o.server_id, r->'state'->>'access_token');
  UPDATE agent.mcp_servers m SET last_error = NULL WHERE m.id = o.server_id;
  PERFORM agent.mcp_refresh(o.server_id);
  RETURN true;
END
$$;
