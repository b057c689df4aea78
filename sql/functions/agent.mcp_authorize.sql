CREATE OR REPLACE FUNCTION agent.mcp_authorize(server_id bigint, by_user text, redirect_uri text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_problem text;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(mcp_authorize.by_user, ''), true);
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = mcp_authorize.server_id;
  IF NOT FOUND OR NOT agent._workspace_ok(s.workspace_id) THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_authorize.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF s.scope = 'user' AND s.owner_id IS DISTINCT FROM by_user THEN
    RAISE EXCEPTION 'user "%" may not authorize the personal MCP server "%"', by_user, s.name
      USING ERRCODE = 'insufficient_privilege', DETAIL = 'A personal server is authorized by its owner.';
  END IF;
  SELECT * INTO o FROM agent.mcp_oauth m WHERE m.workspace_id = s.workspace_id AND m.server_id = s.id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server "%" does not use OAuth', s.name
      USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Configure it with agent.mcp_set_oauth first.';
  END IF;
  -- A workspace server's user token serves every agent run of the workspace:
  -- only a user with the full level on every agent of the workspace consents
  -- for them (the client credentials grant is the server's own identity).
  IF s.scope = 'workspace' AND coalesce(o.config->>'grant', '') <> 'client_credentials'
     AND EXISTS (SELECT 1 FROM agent.agents a
                  WHERE a.workspace_id = s.workspace_id AND a.deleted_at IS NULL
                    AND NOT coalesce(agent.user_can(mcp_authorize.by_user, a.id, 'delete'), false)) THEN
    RAISE EXCEPTION 'user "%" may not authorize the workspace MCP server "%"', by_user, s.name
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A workspace server''s token serves every agent of the workspace: it is authorized by a user with the full level on every one of them.';
  END IF;
  IF coalesce(o.config->>'grant', '') <> 'client_credentials' THEN
    v_problem := agent._mcp_url_problem(redirect_uri);
    IF redirect_uri IS NULL OR v_problem IS NOT NULL THEN
      RAISE EXCEPTION 'redirect URI is not allowed'
        USING ERRCODE = 'invalid_parameter_value', DETAIL = coalesce(v_problem, 'A redirect URI is required.');
    END IF;
  END IF;
  r := agent._mcp_oauth_begin(s.url,
                              o.config || CASE WHEN redirect_uri IS NULL THEN '{}'::jsonb
                                               ELSE pg_catalog.jsonb_build_object('redirect_uri', redirect_uri) END,
                              o.state);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_oauth m SET last_error = r->>'error', updated_at = now() WHERE m.server_id = s.id;
    RAISE EXCEPTION 'could not start the authorization of MCP server "%"', s.name
      USING ERRCODE = 'connection_failure', DETAIL = r->>'error';
  END IF;
  IF coalesce((r->>'authorized')::boolean, false) THEN
    -- client credentials: authorized at once
    UPDATE agent.mcp_oauth m
       SET state = r->'state', status = 'authorized', pending_state = NULL, pending_by_user = NULL,
           pending_at = NULL, authorized_by = by_user, authorized_at = now(),
           expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision), last_error = NULL,
           updated_at = now()
     WHERE m.server_id = s.id;
    PERFORM agent._mcp_oauth_apply(s.id, r->'state'->>'access_token');
    UPDATE agent.mcp_servers m SET last_error = NULL WHERE m.id = s.id;
    PERFORM agent.mcp_refresh(s.id);
    RETURN NULL;
  END IF;
  UPDATE agent.mcp_oauth m
     SET state = (r->'state') || pg_catalog.jsonb_build_object('redirect_uri', redirect_uri),
         status = CASE WHEN m.status = 'authorized' THEN m.status ELSE 'pending' END,
         pending_state = r->>'oauth_state', pending_by_user = by_user, pending_at = now(),
         last_error = NULL, updated_at = now()
   WHERE m.server_id = s.id;
  RETURN r->>'authorization_url';
END
$$;
