CREATE OR REPLACE FUNCTION agent.mcp_set_oauth(server_id bigint, config jsonb DEFAULT '{}') RETURNS void
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
