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
\ir ../functions/agent._mcp_oauth_apply.sql
COMMENT ON FUNCTION agent._mcp_oauth_apply(bigint, text) IS
  'Internal: sets (or with NULL removes) the bearer token of an OAuth server in its headers.';

\ir ../functions/agent.mcp_set_oauth.sql
REVOKE ALL ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) IS
  'Admin: makes an MCP server use OAuth 2.1, with optional client settings (a pre-registered client_id and client_secret, a client ID metadata document URL, a scope, the client_credentials grant with a secret or a private key for machine-to-machine servers); forgets any previous tokens. Then agent.mcp_authorize.';

\ir ../functions/agent.mcp_authorize.sql
REVOKE ALL ON FUNCTION agent.mcp_authorize(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_authorize(bigint, text, text) IS
  'Application: starts the OAuth authorization of an MCP server of the session''s workspace for by_user (taken on trust; a personal server by its owner only, a workspace server with the authorization code grant by a user with the full level on every agent of the workspace, 42501): returns the authorization URL to send the user to, whose redirect to redirect_uri the application hands to agent.mcp_authorization_callback. For the client credentials grant it authorizes at once and returns NULL.';

\ir ../functions/agent.mcp_authorization_callback.sql
REVOKE ALL ON FUNCTION agent.mcp_authorization_callback(text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_authorization_callback(text, text, text, text) IS
  'Application, from its OAuth redirect handler: completes the pending authorization named by state (single use, expires after pg_agents.approval_ttl) with the code and the iss of the redirect (NULL when it has none), for by_user, who must be the user who started it (42501, the state stays pending), then refreshes the server''s tools. Returns true when authorized; false (with a warning giving the reason) when the authorization server refused, the iss did not match or the code was wrong.';

\ir ../functions/agent.mcp_oauth_refresh_due.sql
REVOKE ALL ON FUNCTION agent.mcp_oauth_refresh_due(interval) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_oauth_refresh_due(interval) IS
  'Worker and admin: renews the OAuth tokens that expire within margin (refresh token, or client credentials again); an authorization that cannot be renewed and has expired is marked lapsed, its bearer header removed and the server''s last_error set. Returns how many were renewed.';
