-- mcp branch (0.2.0 -> 0.3.0): the MCP protocol work of 0.3.0 in SQL: OAuth 2.1
-- for remote servers and elicitation through people.  Every object here is
-- new; the same definitions as sql/src/705_mcp_oauth.sql and
-- sql/src/706_mcp_elicitation.sql and sql/src/707_mcp_refresh.sql (keep them
-- identical).

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
    server_id       bigint PRIMARY KEY,
    workspace_id    text NOT NULL,
    config          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
    state           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(state) = 'object'),
    status          text NOT NULL DEFAULT 'unauthorized'
                    CHECK (status IN ('unauthorized', 'pending', 'authorized', 'lapsed')),
    pending_state   text UNIQUE,
    pending_by_user text,
    pending_at      timestamptz,
    authorized_by   text,
    authorized_at   timestamptz,
    expires_at      timestamptz,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
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
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
  UPDATE agent.mcp_servers m
     SET headers = CASE WHEN p_token IS NULL THEN m.headers - 'Authorization'
                        ELSE m.headers || pg_catalog.jsonb_build_object('Authorization', 'Bearer ' || p_token) END
   WHERE m.id = p_server_id
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
         pending_by_user = NULL, pending_at = NULL, expires_at = NULL, last_error = NULL, updated_at = now();
  PERFORM agent._mcp_oauth_apply(s.id, NULL);
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_oauth(bigint, jsonb) IS
  'Admin: makes an MCP server use OAuth 2.1, with optional client settings (a pre-registered client_id and client_secret, a client ID metadata document URL, a scope, the client_credentials grant with a secret or a private key for machine-to-machine servers); forgets any previous tokens. Then agent.mcp_authorize.';

CREATE FUNCTION agent.mcp_authorize(server_id bigint, by_user text, redirect_uri text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_problem text;
BEGIN
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
  SELECT * INTO o FROM agent.mcp_oauth m WHERE m.server_id = s.id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server "%" does not use OAuth', s.name
      USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Configure it with agent.mcp_set_oauth first.';
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
  'Application: starts the OAuth authorization of an MCP server of the session''s workspace for by_user (taken on trust; a personal server by its owner only): returns the authorization URL to send the user to, whose redirect to redirect_uri the application hands to agent.mcp_authorization_callback. For the client credentials grant it authorizes at once and returns NULL.';

CREATE FUNCTION agent.mcp_authorization_callback(state text, code text, iss text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  v_name text;
BEGIN
  IF state IS NULL OR state = '' THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO o FROM agent.mcp_oauth m WHERE m.pending_state = mcp_authorization_callback.state FOR UPDATE;
  IF NOT FOUND OR NOT agent._workspace_ok(o.workspace_id)
     OR o.pending_at < now() - pg_catalog.current_setting('pg_agents.approval_ttl')::interval THEN
    RAISE EXCEPTION 'unknown or expired authorization state' USING ERRCODE = 'invalid_parameter_value';
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
REVOKE ALL ON FUNCTION agent.mcp_authorization_callback(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_authorization_callback(text, text, text) IS
  'Application, from its OAuth redirect handler: completes the pending authorization named by state (single use, expires after pg_agents.approval_ttl) with the code and the iss of the redirect, then refreshes the server''s tools. Returns true when authorized; false (with a warning giving the reason) when the authorization server refused, the iss did not match or the code was wrong.';

CREATE FUNCTION agent.mcp_oauth_refresh_due(margin interval DEFAULT '5 minutes') RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  o agent.mcp_oauth%ROWTYPE;
  r jsonb;
  n integer := 0;
BEGIN
  FOR o IN SELECT * FROM agent.mcp_oauth m
            WHERE m.status = 'authorized' AND m.expires_at IS NOT NULL AND m.expires_at < now() + margin
              AND agent._workspace_ok(m.workspace_id)
            ORDER BY m.server_id FOR UPDATE SKIP LOCKED LOOP
    IF o.state ? 'refresh_token' OR o.config->>'grant' = 'client_credentials' THEN
      r := agent._mcp_oauth_refresh(o.config, o.state);
    ELSE
      r := pg_catalog.jsonb_build_object('ok', false, 'error', 'the access token expired and there is no refresh token');
    END IF;
    IF (r->>'ok')::boolean THEN
      UPDATE agent.mcp_oauth m
         SET state = r->'state', expires_at = pg_catalog.to_timestamp((r->>'expires_at')::double precision),
             last_error = NULL, updated_at = now()
       WHERE m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, r->'state'->>'access_token');
      n := n + 1;
    ELSIF o.expires_at <= now() OR NOT (o.state ? 'refresh_token') THEN
      -- lapsed: the server's tools fail with a clear error, others go on
      UPDATE agent.mcp_oauth m
         SET status = 'lapsed', last_error = r->>'error', state = m.state - 'access_token' - 'refresh_token',
             updated_at = now()
       WHERE m.server_id = o.server_id;
      PERFORM agent._mcp_oauth_apply(o.server_id, NULL);
      UPDATE agent.mcp_servers m
         SET last_error = 'authorization lapsed: ' || (r->>'error') || '; authorize again with agent.mcp_authorize'
       WHERE m.id = o.server_id;
    ELSE
      UPDATE agent.mcp_oauth m SET last_error = r->>'error', updated_at = now() WHERE m.server_id = o.server_id;
    END IF;
  END LOOP;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_oauth_refresh_due(interval) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_oauth_refresh_due(interval) IS
  'Worker and admin: renews the OAuth tokens that expire within margin (refresh token, or client credentials again); an authorization that cannot be renewed and has expired is marked lapsed, its bearer header removed and the server''s last_error set. Returns how many were renewed.';

-- ---- elicitation (sql/src/706_mcp_elicitation.sql) ----

CREATE FUNCTION agent._mcp_call_input(server_id bigint, url text, headers jsonb, tool text, arguments jsonb,
                                      input_responses jsonb, request_state text)
RETURNS jsonb
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_agents_mcp_call_input';
COMMENT ON FUNCTION agent._mcp_call_input(bigint, text, jsonb, text, jsonb, jsonb, text) IS
  'Internal: one tools/call that may come back input_required: {"ok": true, "result"}, {"ok": false, "input_required": true, "input_requests", "request_state"} or {"ok": false, "error", "rpc_error"?}; never raises for a remote failure.';

CREATE TABLE agent.mcp_elicitations (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id   text NOT NULL,
    run_id         bigint NOT NULL REFERENCES agent.runs (id) ON DELETE CASCADE,
    approval_key   text NOT NULL,
    server_id      bigint,
    exposed_name   text NOT NULL,
    input_requests jsonb NOT NULL CHECK (jsonb_typeof(input_requests) = 'object'),
    request_state  text,
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'consumed')),
    response       jsonb,
    answered_by    text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    answered_at    timestamptz
);
CREATE INDEX mcp_elicitations_run_idx ON agent.mcp_elicitations (run_id, approval_key);
REVOKE ALL ON agent.mcp_elicitations FROM PUBLIC;
COMMENT ON TABLE agent.mcp_elicitations IS 'Input an MCP server asked for during a run''s tool call, and the answer people gave; the application reads agent.mcp_pending_input.';
COMMENT ON COLUMN agent.mcp_elicitations.id IS 'Elicitation id.';
COMMENT ON COLUMN agent.mcp_elicitations.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.mcp_elicitations.run_id IS 'The waiting run.';
COMMENT ON COLUMN agent.mcp_elicitations.approval_key IS 'Key of the pending approval the run waits on (agent.approval_key of the call): what agent.answer_elicitation is given.';
COMMENT ON COLUMN agent.mcp_elicitations.server_id IS 'The MCP server that asked.';
COMMENT ON COLUMN agent.mcp_elicitations.exposed_name IS 'The tool called (mcp__<server>__<tool>).';
COMMENT ON COLUMN agent.mcp_elicitations.input_requests IS 'The server''s inputRequests: {key: {"method": "elicitation/create", "params": {"message", "requestedSchema"}}}.';
COMMENT ON COLUMN agent.mcp_elicitations.request_state IS 'The server''s requestState, echoed unchanged with the answer.';
COMMENT ON COLUMN agent.mcp_elicitations.status IS 'pending, answered, or consumed (sent to the server).';
COMMENT ON COLUMN agent.mcp_elicitations.response IS 'The answers, {key: ElicitResult}, defaults applied.';
COMMENT ON COLUMN agent.mcp_elicitations.answered_by IS 'Who answered.';
COMMENT ON COLUMN agent.mcp_elicitations.created_at IS 'When the server asked.';
COMMENT ON COLUMN agent.mcp_elicitations.expires_at IS 'When the question expires with its approval (pg_agents.approval_ttl).';
COMMENT ON COLUMN agent.mcp_elicitations.answered_at IS 'When it was answered.';

CREATE VIEW agent.mcp_pending_input WITH (security_barrier) AS
  SELECT e.approval_key, e.run_id, e.workspace_id, e.exposed_name, r.key AS input_key,
         r.value->'params'->>'message' AS message, r.value->'params'->'requestedSchema' AS requested_schema,
         e.created_at, e.expires_at
    FROM agent.mcp_elicitations e, pg_catalog.jsonb_each(e.input_requests) r
   WHERE e.status = 'pending' AND e.expires_at > pg_catalog.now()
     AND EXISTS (SELECT 1 FROM agent.runs x WHERE x.id = e.run_id AND x.status = 'waiting_approval')
     AND (e.workspace_id = pg_catalog.current_setting('pg_agents.workspace', true)
          OR pg_catalog.current_setting('is_superuser') = 'on');
COMMENT ON VIEW agent.mcp_pending_input IS 'Questions MCP servers are waiting on, of the session''s workspace: the form to show a person (message, requested JSON schema), the approval key to answer with.';
COMMENT ON COLUMN agent.mcp_pending_input.approval_key IS 'What agent.answer_elicitation is given.';
COMMENT ON COLUMN agent.mcp_pending_input.run_id IS 'The waiting run.';
COMMENT ON COLUMN agent.mcp_pending_input.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.mcp_pending_input.exposed_name IS 'The tool being called.';
COMMENT ON COLUMN agent.mcp_pending_input.input_key IS 'Key of the question among the server''s inputRequests.';
COMMENT ON COLUMN agent.mcp_pending_input.message IS 'The server''s question.';
COMMENT ON COLUMN agent.mcp_pending_input.requested_schema IS 'JSON schema of the expected answer (with defaults).';
COMMENT ON COLUMN agent.mcp_pending_input.created_at IS 'When the server asked.';
COMMENT ON COLUMN agent.mcp_pending_input.expires_at IS 'When the question (and the run) expires.';

-- One answer checked and completed: {"action", "content"?}, defaults of the
-- requested schema filled into an accepted content (SEP-1034).
CREATE FUNCTION agent._mcp_elicit_result(p_request jsonb, p_answer jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_content jsonb;
  k text;
  d jsonb;
BEGIN
  IF p_answer IS NULL OR pg_catalog.jsonb_typeof(p_answer) <> 'object'
     OR NOT coalesce(p_answer->>'action', '') IN ('accept', 'decline', 'cancel') THEN
    RAISE EXCEPTION 'an elicitation answer is {"action": "accept", "content": {...}}, {"action": "decline"} or {"action": "cancel"}'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_answer->>'action' <> 'accept' THEN
    RETURN pg_catalog.jsonb_build_object('action', p_answer->>'action');
  END IF;
  v_content := coalesce(p_answer->'content', '{}');
  IF pg_catalog.jsonb_typeof(v_content) <> 'object' THEN
    RAISE EXCEPTION 'the content of an accepted elicitation must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, d IN SELECT p.key, p.value->'default'
                FROM pg_catalog.jsonb_each(coalesce(p_request->'params'->'requestedSchema'->'properties', '{}')) p
               WHERE p.value ? 'default' LOOP
    IF NOT v_content ? k THEN
      v_content := v_content || pg_catalog.jsonb_build_object(k, d);
    END IF;
  END LOOP;
  RETURN pg_catalog.jsonb_build_object('action', 'accept', 'content', v_content);
END
$$;
COMMENT ON FUNCTION agent._mcp_elicit_result(jsonb, jsonb) IS
  'Internal: checks an elicitation answer and fills the requested schema''s defaults into an accepted content (SEP-1034).';

CREATE OR REPLACE FUNCTION agent.mcp_agent_call_input(agent_id bigint, run_id bigint, exposed_name text,
                                           arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  e agent.mcp_elicitations%ROWTYPE;
  r jsonb;
  v_key text;
  v_ws text;
BEGIN
  SELECT m.server_id, m.tool INTO v_server_id, v_tool
    FROM agent.mcp_agent_tools(mcp_agent_call_input.agent_id, agent._mcp_run_user(mcp_agent_call_input.run_id)) m
   WHERE m.exposed_name = mcp_agent_call_input.exposed_name;
  IF v_server_id IS NULL THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));   -- the refusal, as there
  END IF;
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = v_server_id;
  -- only the stateless generation asks its questions this way: any other
  -- server goes the usual way, with the session kept per server and process
  IF s.protocol_version IS DISTINCT FROM '2026-07-28' THEN
    RETURN agent.mcp_agent_call(agent_id, exposed_name, arguments, agent._mcp_run_user(run_id));
  END IF;
  IF arguments IS NULL OR pg_catalog.jsonb_typeof(arguments) <> 'object' THEN
    arguments := '{}';
  END IF;
  v_key := agent.approval_key(exposed_name, arguments);
  -- an answered question of this run for this very call: send it
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.run_id = mcp_agent_call_input.run_id AND x.approval_key = v_key AND x.status = 'answered'
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF FOUND THEN
    UPDATE agent.mcp_elicitations x SET status = 'consumed' WHERE x.id = e.id;
    PERFORM agent.consume_approval(run_id, exposed_name, arguments);
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, e.response, e.request_state);
  ELSE
    r := agent._mcp_call_input(s.id, s.url, s.headers, v_tool, arguments, NULL, NULL);
  END IF;
  IF coalesce((r->>'input_required')::boolean, false) THEN
    IF pg_catalog.jsonb_typeof(r->'input_requests') IS DISTINCT FROM 'object' THEN
      RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                           'result', agent._mcp_failed_result(r->>'error'));
    END IF;
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = mcp_agent_call_input.run_id;
    v_key := agent.request_approval(run_id, exposed_name, arguments);
    INSERT INTO agent.mcp_elicitations (workspace_id, run_id, approval_key, server_id, exposed_name,
                                        input_requests, request_state, expires_at)
    VALUES (v_ws, run_id, v_key, s.id, exposed_name, r->'input_requests', r->>'request_state',
            now() + pg_catalog.current_setting('pg_agents.approval_ttl')::interval);
    RETURN pg_catalog.jsonb_build_object('ok', false, 'paused', true, 'server', s.name, 'tool', v_tool,
                                         'approval_key', v_key,
                                         'questions', (SELECT pg_catalog.jsonb_agg(q.value->'params'->>'message')
                                                         FROM pg_catalog.jsonb_each(r->'input_requests') q));
  END IF;
  IF (r->>'ok')::boolean THEN
    RETURN pg_catalog.jsonb_build_object('ok', NOT coalesce((r->'result'->>'isError')::boolean, false),
                                         'server', s.name, 'tool', v_tool, 'result', r->'result');
  END IF;
  RETURN pg_catalog.jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                                       'result', agent._mcp_failed_result(r->>'error', r->'rpc_error'));
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call_input(bigint, bigint, text, jsonb) IS
  'Worker entry point: agent.mcp_agent_call for a run, where a 2026-07-28 server (as recorded at its last refresh; any other goes to agent.mcp_agent_call) asking for input pauses the run: the question is stored (agent.mcp_elicitations), a pending approval of the call opened, {"ok": false, "paused": true, "approval_key"} returned; once answered (agent.answer_elicitation) the same call sends the answer with the server''s requestState.';

CREATE FUNCTION agent.answer_elicitation(key text, response jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  e agent.mcp_elicitations%ROWTYPE;
  v_answers jsonb := '{}';
  v_one boolean;
  k text;
  q jsonb;
BEGIN
  SELECT * INTO e FROM agent.mcp_elicitations x
   WHERE x.approval_key = answer_elicitation.key AND x.status = 'pending' AND x.expires_at > now()
     AND agent._workspace_ok(x.workspace_id)
     AND EXISTS (SELECT 1 FROM agent.runs r WHERE r.id = x.run_id AND r.status = 'waiting_approval')
   ORDER BY x.id DESC LIMIT 1 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no pending elicitation with key "%"', key USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'by_user is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- one question: the answer itself; several: {input key: answer}
  v_one := (SELECT count(*) FROM pg_catalog.jsonb_object_keys(e.input_requests)) = 1;
  FOR k, q IN SELECT * FROM pg_catalog.jsonb_each(e.input_requests) LOOP
    v_answers := v_answers || pg_catalog.jsonb_build_object(k,
                   agent._mcp_elicit_result(q, CASE WHEN v_one AND response ? 'action' THEN response ELSE response->k END));
  END LOOP;
  UPDATE agent.mcp_elicitations x
     SET status = 'answered', response = v_answers, answered_by = by_user, answered_at = now()
   WHERE x.id = e.id;
  -- the run resumes like on an approval (edit level on the agent required)
  RETURN agent.approve(e.approval_key, by_user, e.run_id);
END
$$;
REVOKE ALL ON FUNCTION agent.answer_elicitation(text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.answer_elicitation(text, jsonb, text) IS
  'Answers the question an MCP server asked during a run''s tool call (key: the approval key shown in agent.mcp_pending_input) for by_user, who must be allowed to approve the run''s calls: {"action": "accept", "content": {...}} (the form''s defaults filled in), {"action": "decline"} or {"action": "cancel"}; several questions are answered as {input key: answer}. The run resumes and the server gets the answer. Returns the run id.';

-- ---- periodic refresh (sql/src/707_mcp_refresh.sql) ----

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
               WHERE s.enabled AND s.last_error IS NULL AND s.tools_refreshed_at < now() - max_age
                 AND agent._workspace_ok(s.workspace_id)
               ORDER BY s.tools_refreshed_at, s.id
               LIMIT greatest(coalesce(max_servers, 5), 1) LOOP
    PERFORM agent.mcp_refresh(v_id);
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh_due(interval, integer) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh_due(interval, integer) IS
  'Worker and admin: lists again the tools of at most max_servers enabled servers whose last successful refresh is older than max_age (a failed one is left to the admin); returns how many were refreshed.';
