-- pg_agents: OAuth 2.1 for remote MCP servers (docs/mcp.md, "Authorization").
--
-- The flow is the C client's (src/mcp_oauth.c, the probe's own code), driven
-- one step per call: agent.mcp_authorize() discovers the server's
-- authorization server, registers the client when needed and returns the
-- authorization URL for a person to open; the application's redirect
-- handler gives the code back to agent.mcp_authorization_callback(), which
-- obtains the tokens.  A machine-to-machine server (client credentials) is
-- authorized at once.  The access token is then sent as the server's
-- Authorization header (agent.mcp_servers.headers, superusers only), so that
-- every path that calls the server (mcp_refresh, mcp_call, the worker) uses
-- it; agent.mcp_oauth_refresh_due() (called by the worker) refreshes tokens
-- before they expire, and marks an authorization that cannot be renewed as
-- lapsed: the header is removed, the server's last_error (agent.mcp_status)
-- says so, its tools return an error result, other servers are untouched.
-- Tokens, client secrets, private keys and PKCE verifiers live in
-- agent.mcp_oauth, readable by superusers only, and never reach an error, a
-- step, an audit row or a log.

CREATE FUNCTION agent._mcp_oauth_begin(url text, config jsonb, state jsonb) RETURNS jsonb
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_oauth_begin';
COMMENT ON FUNCTION agent._mcp_oauth_begin(text, jsonb, jsonb) IS
  'Internal: discovery, client registration and the authorization URL (or the client-credentials tokens) for an MCP server; returns {"ok", "state", "authorization_url"?, "oauth_state"?, "authorized"?, "expires_at"?} or {"ok": false, "error"}.';

CREATE FUNCTION agent._mcp_oauth_complete(config jsonb, state jsonb, code text, oauth_state text, iss text)
RETURNS jsonb
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_oauth_complete';
COMMENT ON FUNCTION agent._mcp_oauth_complete(jsonb, jsonb, text, text, text) IS
  'Internal: checks the authorization response (state, RFC 9207 iss) and exchanges the code (PKCE) for tokens.';

CREATE FUNCTION agent._mcp_oauth_refresh(config jsonb, state jsonb) RETURNS jsonb
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_oauth_refresh';
COMMENT ON FUNCTION agent._mcp_oauth_refresh(jsonb, jsonb) IS
  'Internal: new tokens from the refresh token (or the client credentials again).';

CREATE TABLE agent.mcp_oauth (
    server_id       bigint NOT NULL,
    workspace_id    text NOT NULL,
    config          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
    state           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(state) = 'object'),
    status          text NOT NULL DEFAULT 'unauthorized'
                    CHECK (status IN ('unauthorized', 'pending', 'authorized', 'lapsed')),
    pending_state   text,
    pending_by_user text,
    pending_at      timestamptz,
    authorized_by   text,
    authorized_at   timestamptz,
    expires_at      timestamptz,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT mcp_oauth_pkey PRIMARY KEY (server_id, workspace_id),
    CONSTRAINT mcp_oauth_pending_state_key UNIQUE (pending_state, workspace_id),
    FOREIGN KEY (workspace_id, server_id) REFERENCES agent.mcp_servers (workspace_id, id) ON DELETE CASCADE
);
REVOKE ALL ON agent.mcp_oauth FROM PUBLIC;
COMMENT ON TABLE agent.mcp_oauth IS 'OAuth 2.1 configuration and state of MCP servers: client credentials, tokens, pending authorizations; secrets, readable by superusers only (others read agent.mcp_oauth_status).';
COMMENT ON COLUMN agent.mcp_oauth.server_id IS 'The MCP server.';
COMMENT ON COLUMN agent.mcp_oauth.workspace_id IS 'Workspace of the server.';
COMMENT ON COLUMN agent.mcp_oauth.config IS 'Client settings: client_id, client_secret, client_metadata_url, scope, grant (authorization_code or client_credentials), private_key_pem, signing_alg, auth_method; secret.';
COMMENT ON COLUMN agent.mcp_oauth.state IS 'What the client learnt and obtained: metadata, registration, access and refresh tokens, the pending state and PKCE verifier; secret.';
COMMENT ON COLUMN agent.mcp_oauth.status IS 'unauthorized, pending (an authorization URL was handed out), authorized, or lapsed (expired and not renewable: authorize again).';
COMMENT ON COLUMN agent.mcp_oauth.pending_state IS 'OAuth state parameter of the pending authorization (unguessable, single use).';
COMMENT ON COLUMN agent.mcp_oauth.pending_by_user IS 'User who asked for the pending authorization.';
COMMENT ON COLUMN agent.mcp_oauth.pending_at IS 'When the pending authorization was asked for; it expires after pg_agents.approval_ttl.';
COMMENT ON COLUMN agent.mcp_oauth.authorized_by IS 'User whose consent obtained the tokens (or the caller of a client-credentials authorization).';
COMMENT ON COLUMN agent.mcp_oauth.authorized_at IS 'When the tokens were obtained.';
COMMENT ON COLUMN agent.mcp_oauth.expires_at IS 'When the access token expires (NULL when the authorization server did not say).';
COMMENT ON COLUMN agent.mcp_oauth.last_error IS 'Error of the last authorization or refresh.';
COMMENT ON COLUMN agent.mcp_oauth.updated_at IS 'Last change.';

CREATE VIEW agent.mcp_oauth_status WITH (security_barrier) AS
  SELECT o.server_id, o.workspace_id, s.name, o.status, o.config->>'grant' AS grant_type,
         o.authorized_by, o.authorized_at, o.expires_at, o.last_error
    FROM agent.mcp_oauth o JOIN agent.mcp_servers s ON s.id = o.server_id
   WHERE o.workspace_id = pg_catalog.current_setting('pg_agents.workspace', true)
      OR pg_catalog.current_setting('is_superuser') = 'on';
COMMENT ON VIEW agent.mcp_oauth_status IS 'OAuth state of the MCP servers of the session''s workspace (pg_agents.workspace; every workspace for a superuser), without any secret: status, who authorized and when, expiry, last error.';
COMMENT ON COLUMN agent.mcp_oauth_status.server_id IS 'The MCP server.';
COMMENT ON COLUMN agent.mcp_oauth_status.workspace_id IS 'Workspace of the server.';
COMMENT ON COLUMN agent.mcp_oauth_status.name IS 'Server name.';
COMMENT ON COLUMN agent.mcp_oauth_status.status IS 'unauthorized, pending, authorized or lapsed.';
COMMENT ON COLUMN agent.mcp_oauth_status.grant_type IS 'client_credentials, or NULL for the authorization code grant.';
COMMENT ON COLUMN agent.mcp_oauth_status.authorized_by IS 'User whose consent obtained the tokens.';
COMMENT ON COLUMN agent.mcp_oauth_status.authorized_at IS 'When the tokens were obtained.';
COMMENT ON COLUMN agent.mcp_oauth_status.expires_at IS 'When the access token expires.';
COMMENT ON COLUMN agent.mcp_oauth_status.last_error IS 'Error of the last authorization or refresh.';

-- The access token as the server's Authorization header (NULL: removed).
CREATE FUNCTION agent._mcp_oauth_apply(p_server_id bigint, p_token text) RETURNS void
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
COMMENT ON FUNCTION agent._mcp_oauth_apply(bigint, text) IS
  'Internal: sets (or with NULL removes) the bearer token of an OAuth server in its headers.';

CREATE FUNCTION agent.mcp_set_oauth(server_id bigint, config jsonb DEFAULT '{}') RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  k text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = mcp_set_oauth.server_id;
  IF NOT FOUND OR NOT agent._workspace_ok(s.workspace_id) THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_set_oauth.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF config IS NULL OR pg_catalog.jsonb_typeof(config) <> 'object' THEN
    RAISE EXCEPTION 'OAuth configuration must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k IN SELECT pg_catalog.jsonb_object_keys(config) LOOP
    IF NOT k = ANY (ARRAY['client_id', 'client_secret', 'client_metadata_url', 'scope', 'grant',
                          'private_key_pem', 'signing_alg', 'auth_method']) THEN
      RAISE EXCEPTION 'unknown OAuth setting "%"', k
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'The settings are client_id, client_secret, client_metadata_url, scope, grant, private_key_pem, signing_alg and auth_method.';
    END IF;
    IF pg_catalog.jsonb_typeof(config->k) <> 'string' THEN
      RAISE EXCEPTION 'OAuth setting "%" must be a string', k USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;
  IF config->>'grant' IS NOT NULL AND NOT (config->>'grant' IN ('authorization_code', 'client_credentials')) THEN
    RAISE EXCEPTION 'OAuth grant must be authorization_code or client_credentials' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF config->>'grant' = 'client_credentials' AND config->>'client_id' IS NULL THEN
    RAISE EXCEPTION 'the client credentials grant needs a client_id' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO agent.mcp_oauth AS o (server_id, workspace_id, config)
  VALUES (s.id, s.workspace_id, config)
  ON CONFLICT ON CONSTRAINT mcp_oauth_pkey DO UPDATE
     SET config = EXCLUDED.config, state = '{}', status = 'unauthorized', pending_state = NULL,
         pending_by_user = NULL, pending_at = NULL, expires_at = NULL, last_error = NULL,
         updated_at = EXCLUDED.updated_at;  -- its default, now() (Citus takes no call in DO UPDATE SET)
  PERFORM agent._mcp_oauth_apply(s.id, NULL);
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) IS
  'Admin: makes an MCP server use OAuth 2.1, with optional client settings (a pre-registered client_id and client_secret, a client ID metadata document URL, a scope, the client_credentials grant with a secret or a private key for machine-to-machine servers); forgets any previous tokens. Then agent.mcp_authorize.';

CREATE FUNCTION agent.mcp_authorize(server_id bigint, by_user text, redirect_uri text) RETURNS text
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
REVOKE ALL ON FUNCTION agent.mcp_authorize(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_authorize(bigint, text, text) IS
  'Application: starts the OAuth authorization of an MCP server of the session''s workspace for by_user (taken on trust; a personal server by its owner only, a workspace server with the authorization code grant by a user with the full level on every agent of the workspace, 42501): returns the authorization URL to send the user to, whose redirect to redirect_uri the application hands to agent.mcp_authorization_callback. For the client credentials grant it authorizes at once and returns NULL.';

CREATE FUNCTION agent.mcp_authorization_callback(state text, code text, iss text, by_user text)
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
REVOKE ALL ON FUNCTION agent.mcp_authorization_callback(text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_authorization_callback(text, text, text, text) IS
  'Application, from its OAuth redirect handler: completes the pending authorization named by state (single use, expires after pg_agents.approval_ttl) with the code and the iss of the redirect (NULL when it has none), for by_user, who must be the user who started it (42501, the state stays pending), then refreshes the server''s tools. Returns true when authorized; false (with a warning giving the reason) when the authorization server refused, the iss did not match or the code was wrong.';

CREATE FUNCTION agent.mcp_oauth_refresh_due(margin interval DEFAULT '5 minutes') RETURNS integer
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
REVOKE ALL ON FUNCTION agent.mcp_oauth_refresh_due(interval) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_oauth_refresh_due(interval) IS
  'Worker and admin: renews the OAuth tokens that expire within margin (refresh token, or client credentials again); an authorization that cannot be renewed and has expired is marked lapsed, its bearer header removed and the server''s last_error set. Returns how many were renewed.';
