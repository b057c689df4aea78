-- prov (issue 30, findings 5 and 6, and point 9: provider and secret
-- changes audited): providers and secrets with a workspace, a delegated
-- provider admin that cannot send a stored secret where it likes,
-- agent.provider_status filtered by workspace with last_error as a code, and
-- audit rows for add/alter/drop_provider and set/drop_secret
-- (sql/src/610_providers.sql).

ALTER TABLE agent.secrets ADD COLUMN workspace_id text CHECK (workspace_id <> '');
ALTER TABLE agent.secrets DROP CONSTRAINT secrets_pkey;
ALTER TABLE agent.secrets ALTER COLUMN name SET NOT NULL;
-- (issue 31, run_as: a user's own secret, resolved for the runs acting for that user)
ALTER TABLE agent.secrets ADD COLUMN user_id text CHECK (user_id <> ''),
                          ADD CONSTRAINT secrets_user_workspace CHECK (user_id IS NULL OR workspace_id IS NOT NULL);
CREATE UNIQUE INDEX secrets_workspace_name_key ON agent.secrets ((coalesce(workspace_id, '')), (coalesce(user_id, '')), name);
COMMENT ON COLUMN agent.secrets.name IS 'Name of the secret, as in ${secret:NAME}; unique per workspace (and among the cluster''s).';
COMMENT ON COLUMN agent.secrets.workspace_id IS 'Workspace whose providers and MCP servers may reference the secret; NULL: a cluster secret, which every provider and MCP server may reference (a workspace secret of the same name wins).';
COMMENT ON COLUMN agent.secrets.ciphertext IS 'Format byte 0x01, 12-byte nonce, 16-byte GCM tag, ciphertext (the name, and the workspace of a workspace secret, are the additional authenticated data); useless without the key file.';
COMMENT ON COLUMN agent.secrets.created_at IS 'When the secret was first set.';
COMMENT ON COLUMN agent.secrets.updated_at IS 'When it was last set (rotation).';
COMMENT ON COLUMN agent.secrets.user_id IS 'The user whose own secret this is, in workspace_id: the providers'' references of that name resolve to it for the runs that act for that user (a manual run they requested, a run_as creator schedule job they created), never for others; NULL: the workspace''s (or the cluster''s) secret.';
ALTER TABLE agent.providers ADD COLUMN workspace_id text CHECK (workspace_id <> '');
COMMENT ON COLUMN agent.providers.workspace_id IS 'Workspace whose agents may name the provider (its ${secret:NAME} references resolve among that workspace''s secrets, then the cluster''s); NULL: a cluster provider every workspace may use (cluster secrets only).';

DROP FUNCTION agent.set_secret(text, text);
DROP FUNCTION agent.drop_secret(text);
DROP FUNCTION agent._provider_check_key(text, text);

CREATE FUNCTION agent.set_secret(name text, value text, workspace_id text DEFAULT NULL, user_id text DEFAULT NULL) RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_set_secret';
COMMENT ON FUNCTION agent.set_secret(text, text, text, text) IS
  'Stores (or replaces: rotation, effective at the worker''s next request) a secret, encrypted with the key of pg_agents.secret_key_file (created on first use); workspace_id NULL: a cluster secret, else one only that workspace''s providers and MCP servers resolve (it wins over a cluster secret of the same name); with user_id (and a workspace_id): that user''s own secret, which the providers'' references of that name resolve to for the runs acting for that user (docs/worker.md, "Whose key"). Audited as secret.set (never the value). Superusers only. Pass the value as a bind parameter or read it from a file so that it is not in the statement text (docs/worker.md, "Secrets").';

CREATE FUNCTION agent.drop_secret(name text, workspace_id text DEFAULT NULL, user_id text DEFAULT NULL) RETURNS boolean
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_drop_secret';
COMMENT ON FUNCTION agent.drop_secret(text, text, text) IS
  'Removes a secret of the cluster (workspace_id NULL), of a workspace, or of a user of a workspace (user_id; 42704 when there is none); providers and MCP servers that reference it fail with a clear error until it is set again (or fall back to the cluster secret of that name). Audited as secret.drop. Superusers only.';

CREATE OR REPLACE FUNCTION agent._provider_settings(p_name text, p_settings jsonb, p_alter boolean)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k text;
  v jsonb;
  t text;
  h text;
  hv jsonb;
  v_ref text;
  v_limits constant jsonb := '{"max_concurrent": [1, 10000], "requests_per_minute": [1, 100000000],
                               "tokens_per_minute": [1, 2000000000], "request_timeout": [100, 3600000]}';
BEGIN
  IF p_settings IS NULL OR jsonb_typeof(p_settings) <> 'object' THEN
    RAISE EXCEPTION 'settings of provider "%" must be a JSON object', p_name
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, v IN SELECT * FROM jsonb_each(p_settings) LOOP
    t := jsonb_typeof(v);
    CASE
      WHEN k = 'default_model' THEN
        IF t NOT IN ('string', 'null') OR length(v #>> '{}') NOT BETWEEN 1 AND 200 THEN
          RAISE EXCEPTION 'settings key "default_model" of provider "%" must be a model name (1 to 200 characters) or null', p_name
            USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN k = 'stream' THEN
        IF t <> 'boolean' THEN
          RAISE EXCEPTION 'settings key "stream" of provider "%" must be a boolean', p_name
            USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN v_limits ? k THEN
        IF NOT (t = 'null' OR t = 'number' AND (v #>> '{}') ~ '^[0-9]{1,10}$'
                AND (v #>> '{}')::bigint BETWEEN (v_limits -> k ->> 0)::bigint AND (v_limits -> k ->> 1)::bigint) THEN
          RAISE EXCEPTION 'settings key "%" of provider "%" must be an integer between % and %, or null', k, p_name,
                v_limits -> k ->> 0, v_limits -> k ->> 1
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = CASE WHEN k = 'request_timeout' THEN 'The time-out is in milliseconds; null means pg_agents.request_timeout.'
                                ELSE 'null means no limit.' END;
        END IF;
      WHEN k = 'headers' THEN
        IF t <> 'object' THEN
          RAISE EXCEPTION 'settings key "headers" of provider "%" must be an object of header names to string values', p_name
            USING ERRCODE = 'invalid_parameter_value';
        END IF;
        FOR h, hv IN SELECT * FROM jsonb_each(v) LOOP
          IF h !~ '^[A-Za-z0-9!#$%&''*+.^_`|~-]{1,100}$' OR jsonb_typeof(hv) <> 'string' OR (hv #>> '{}') ~ '[\r\n]' THEN
            RAISE EXCEPTION 'invalid header "%" for provider "%"', h, p_name
              USING ERRCODE = 'invalid_parameter_value',
                    DETAIL = 'Headers are a JSON object of header names to string values, without line breaks.';
          END IF;
          IF lower(h) IN ('authorization', 'x-api-key', 'content-type', 'content-length', 'accept', 'host',
                          'anthropic-version', 'expect', 'transfer-encoding') THEN
            RAISE EXCEPTION 'header "%" of provider "%" is set by the worker', h, p_name
              USING ERRCODE = 'invalid_parameter_value',
                    HINT = 'Give the API key as the provider''s api_key (a ${secret:NAME} reference).';
          END IF;
        END LOOP;
      WHEN NOT p_alter AND k = 'workspace_id' THEN
        IF t <> 'string' OR length(v #>> '{}') NOT BETWEEN 1 AND 200 THEN
          RAISE EXCEPTION 'settings key "workspace_id" of provider "%" must be a workspace id (1 to 200 characters)', p_name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Without it the provider is a cluster provider every workspace may use.';
        END IF;
      WHEN p_alter AND k = 'base_url' THEN
        NULL;  -- checked below
      WHEN p_alter AND k = 'api_key' THEN
        NULL;  -- checked below
      ELSE
        RAISE EXCEPTION 'unknown settings key "%" for provider "%"', k, p_name
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Provider settings are default_model, stream, max_concurrent, requests_per_minute, tokens_per_minute, request_timeout and headers'
                         || CASE WHEN p_alter THEN ' (and base_url, api_key for agent.alter_provider; the workspace cannot change).'
                                 ELSE ' (and workspace_id for agent.add_provider).' END;
    END CASE;
  END LOOP;
  IF p_settings ? 'base_url' THEN
    PERFORM agent._provider_check_url(p_name, p_settings ->> 'base_url');
  END IF;
  IF p_settings ? 'api_key' AND jsonb_typeof(p_settings -> 'api_key') <> 'null' THEN
    IF jsonb_typeof(p_settings -> 'api_key') <> 'string' THEN
      RAISE EXCEPTION 'api_key of provider "%" must be a string or null', p_name USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM agent._provider_check_key(p_name, p_settings ->> 'api_key',
                                      (SELECT p.workspace_id FROM agent.providers p WHERE p.name = p_name));
  END IF;
  RETURN p_settings;
END
$$;
COMMENT ON FUNCTION agent._provider_settings(text, jsonb, boolean) IS
  'Internal: checks the settings of agent.add_provider / agent.alter_provider (22023 with the key at fault).';

CREATE FUNCTION agent._provider_check_key(p_name text, p_key text, p_workspace_id text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_key !~ '^\$\{secret:[A-Za-z0-9_.-]{1,100}\}$' THEN
    -- never echo the value: it may be the key itself
    RAISE EXCEPTION 'api_key of provider "%" must be a secret reference', p_name
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A provider keeps no key in clear: store it with agent.set_secret(name, value) and pass ''${secret:name}''.';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.secrets s
                  WHERE s.name = substring(p_key FROM 10 FOR length(p_key) - 10)
                    AND s.user_id IS NULL AND (s.workspace_id IS NULL OR s.workspace_id = p_workspace_id)) THEN
    RAISE EXCEPTION 'secret "%" does not exist', substring(p_key FROM 10 FOR length(p_key) - 10)
      USING ERRCODE = 'undefined_object',
            DETAIL = CASE WHEN p_workspace_id IS NULL THEN 'A cluster provider references cluster secrets only.'
                          ELSE format('A provider of workspace "%s" references that workspace''s secrets and the cluster''s.', p_workspace_id) END,
            HINT = 'Set it first with agent.set_secret.';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._provider_check_key(text, text, text) IS
  'Internal: a provider''s api_key is a ${secret:NAME} reference to a secret that exists among those it may reference (its workspace''s and the cluster''s; the cluster''s only for a cluster provider).';

-- The role the caller acts as (SET ROLE, else the session user): a
-- SECURITY DEFINER function runs as its owner, but the role setting and the
-- session user stay the caller's.
CREATE FUNCTION agent._caller_is_superuser() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r
                    WHERE r.rolname = CASE WHEN pg_catalog.current_setting('role') = 'none'
                                           THEN pg_catalog."session_user"()::text
                                           ELSE pg_catalog.current_setting('role') END), false)
$$;
COMMENT ON FUNCTION agent._caller_is_superuser() IS
  'Internal: whether the role the caller acts as (its SET ROLE, else the session user) is a superuser, also inside a SECURITY DEFINER function.';

-- A delegated provider admin (a role that is not superuser and was granted
-- EXECUTE on add_provider/alter_provider) never makes a stored secret travel
-- to a URL or a header of its choosing: it may not set the URL, the key or
-- the headers of a provider that references a secret (after the change).
CREATE FUNCTION agent._provider_admin_check(p_name text, p_routing boolean, p_api_key text, p_headers jsonb)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NOT p_routing OR agent._caller_is_superuser() THEN
    RETURN;
  END IF;
  IF p_api_key IS NOT NULL OR coalesce(p_headers::text, '') LIKE '%${secret:%' THEN
    RAISE EXCEPTION 'permission denied to set the URL, key or headers of provider "%", which references a secret', p_name
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Only a superuser decides where a stored secret is sent: a role that is not superuser may not set base_url, api_key or headers of a provider whose key or headers reference the secrets store.',
            HINT = 'Ask a superuser to make this change; a delegated admin may change the model, streaming, limits and time-out, or add a provider without a key.';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._provider_admin_check(text, boolean, text, jsonb) IS
  'Internal: refuses (42501) a caller that is not superuser setting the base URL, key or headers of a provider that references a secret (its api_key, or ${secret:NAME} in a header) after the change.';

-- what an audit row of a provider says of it: never a secret, header names only
CREATE FUNCTION agent._provider_audit_inputs(p agent.providers, p_changed jsonb) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT jsonb_build_object('name', p.name, 'kind', p.kind, 'workspace_id', p.workspace_id,
                            'endpoint_host', substring(p.base_url, '^[a-z]+://([^/:]+)'),
                            'key_secret', substring(p.api_key FROM 10 FOR length(p.api_key) - 10),
                            'header_names', (SELECT coalesce(jsonb_agg(k ORDER BY k), '[]') FROM jsonb_object_keys(p.headers) k),
                            'changed', p_changed,
                            'role', CASE WHEN current_setting('role') = 'none' THEN "session_user"()::text
                                         ELSE current_setting('role') END)
$$;
COMMENT ON FUNCTION agent._provider_audit_inputs(agent.providers, jsonb) IS
  'Internal: the inputs of a provider''s audit row: name, kind, workspace, endpoint host, the name of its key''s secret, header names, the keys changed and the role that acted; never a secret or a header value.';

CREATE OR REPLACE FUNCTION agent.add_provider(name text, kind text, base_url text, api_key text DEFAULT NULL,
                                   settings jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s    jsonb;
  v_ws text;
  v_p  agent.providers%ROWTYPE;
BEGIN
  IF add_provider.name IS NULL OR add_provider.name !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$' THEN
    RAISE EXCEPTION 'invalid provider name "%"', coalesce(add_provider.name, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A provider name has 1 to 63 letters, digits, ''_'', ''.'' or ''-'', starting with a letter or a digit.';
  END IF;
  IF kind IS NULL OR kind NOT IN ('openai', 'anthropic') THEN
    RAISE EXCEPTION 'unknown provider kind "%"', coalesce(kind, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The kinds are openai (chat completions: OpenAI, vLLM, llama.cpp, Ollama, ...) and anthropic (messages).';
  END IF;
  PERFORM agent._provider_check_url(add_provider.name, add_provider.base_url);
  s := agent._provider_settings(add_provider.name, coalesce(settings, '{}'), false);
  v_ws := s ->> 'workspace_id';
  PERFORM agent._provider_admin_check(add_provider.name, true, add_provider.api_key, s -> 'headers');
  IF add_provider.api_key IS NOT NULL THEN
    PERFORM agent._provider_check_key(add_provider.name, add_provider.api_key, v_ws);
  END IF;
  IF EXISTS (SELECT 1 FROM agent.providers p WHERE p.name = add_provider.name) THEN
    RAISE EXCEPTION 'provider "%" already exists', add_provider.name
      USING ERRCODE = 'duplicate_object',
            DETAIL = 'Provider names are unique in the cluster, across workspaces.',
            HINT = 'Change it with agent.alter_provider.';
  END IF;
  INSERT INTO agent.providers AS p (name, kind, base_url, api_key, default_model, headers, max_concurrent,
                                    requests_per_minute, tokens_per_minute, request_timeout, stream, workspace_id)
  VALUES (add_provider.name, kind, add_provider.base_url, add_provider.api_key, s ->> 'default_model',
          coalesce(s -> 'headers', '{}'), (s ->> 'max_concurrent')::integer,
          (s ->> 'requests_per_minute')::integer, (s ->> 'tokens_per_minute')::integer,
          (s ->> 'request_timeout')::integer, coalesce((s ->> 'stream')::boolean, false), v_ws)
  RETURNING * INTO v_p;
  PERFORM agent._audit_event('provider.add', 'success', 'provider', v_p.id::text, coalesce(v_ws, ''), NULL,
                             agent._provider_audit_inputs(v_p, NULL),
                             format('provider "%s" added', v_p.name));
  RETURN v_p.id;
END
$$;
COMMENT ON FUNCTION agent.add_provider(text, text, text, text, jsonb) IS
  'Adds an LLM provider: name, kind (openai | anthropic), base URL, API key as ${secret:NAME} (or NULL), settings {workspace_id (absent: a cluster provider every workspace may use), default_model, stream, max_concurrent, requests_per_minute, tokens_per_minute, request_timeout (ms), headers}. Superusers only (or a role the DBA grants EXECUTE, which may not give a key or secret headers: 42501). Audited as provider.add. Returns its id.';

CREATE OR REPLACE FUNCTION agent.alter_provider(name text, settings jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s jsonb;
  v_p agent.providers%ROWTYPE;
BEGIN
  SELECT * INTO v_p FROM agent.providers x WHERE x.name = alter_provider.name FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'provider "%" does not exist', coalesce(alter_provider.name, 'NULL')
      USING ERRCODE = 'undefined_object';
  END IF;
  s := agent._provider_settings(alter_provider.name, settings, true);
  PERFORM agent._provider_admin_check(alter_provider.name, s ?| '{base_url,api_key,headers}',
                                      CASE WHEN s ? 'api_key' THEN s ->> 'api_key' ELSE v_p.api_key END,
                                      CASE WHEN s ? 'headers' THEN s -> 'headers' ELSE v_p.headers END);
  UPDATE agent.providers x SET
    base_url            = CASE WHEN s ? 'base_url' THEN s ->> 'base_url' ELSE x.base_url END,
    api_key             = CASE WHEN s ? 'api_key' THEN s ->> 'api_key' ELSE x.api_key END,
    default_model       = CASE WHEN s ? 'default_model' THEN s ->> 'default_model' ELSE x.default_model END,
    headers             = CASE WHEN s ? 'headers' THEN s -> 'headers' ELSE x.headers END,
    max_concurrent      = CASE WHEN s ? 'max_concurrent' THEN (s ->> 'max_concurrent')::integer ELSE x.max_concurrent END,
    requests_per_minute = CASE WHEN s ? 'requests_per_minute' THEN (s ->> 'requests_per_minute')::integer ELSE x.requests_per_minute END,
    tokens_per_minute   = CASE WHEN s ? 'tokens_per_minute' THEN (s ->> 'tokens_per_minute')::integer ELSE x.tokens_per_minute END,
    request_timeout     = CASE WHEN s ? 'request_timeout' THEN (s ->> 'request_timeout')::integer ELSE x.request_timeout END,
    stream              = CASE WHEN s ? 'stream' THEN (s ->> 'stream')::boolean ELSE x.stream END,
    updated_at          = now()
  WHERE x.id = v_p.id
  RETURNING * INTO v_p;
  PERFORM agent._audit_event('provider.alter', 'success', 'provider', v_p.id::text, coalesce(v_p.workspace_id, ''), NULL,
                             agent._provider_audit_inputs(v_p, (SELECT coalesce(jsonb_agg(k ORDER BY k), '[]') FROM jsonb_object_keys(s) k)),
                             format('provider "%s" changed', v_p.name));
END
$$;
COMMENT ON FUNCTION agent.alter_provider(text, jsonb) IS
  'Changes a provider''s settings (the keys of agent.add_provider but workspace_id, plus base_url and api_key; null removes a limit); the worker uses them from its next request. The kind and the workspace cannot change. Superusers only (or a role the DBA grants EXECUTE, which may not change the URL, key or headers of a provider that references a secret: 42501). Audited as provider.alter.';

CREATE OR REPLACE FUNCTION agent.drop_provider(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n bigint;
  v_p agent.providers%ROWTYPE;
BEGIN
  SELECT * INTO v_p FROM agent.providers x WHERE x.name = drop_provider.name FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'provider "%" does not exist', coalesce(drop_provider.name, 'NULL')
      USING ERRCODE = 'undefined_object';
  END IF;
  SELECT count(*) INTO n FROM agent.agents a
   WHERE a.scope ->> 'provider' = drop_provider.name AND a.deleted_at IS NULL;
  IF n > 0 THEN
    RAISE EXCEPTION 'provider "%" is used by % agent(s)', drop_provider.name, n
      USING ERRCODE = 'dependent_objects_still_exist',
            HINT = 'Save those agents with another provider first ({"provider": null} goes back to the default).';
  END IF;
  DELETE FROM agent.providers x WHERE x.id = v_p.id;
  PERFORM agent._audit_event('provider.drop', 'success', 'provider', v_p.id::text, coalesce(v_p.workspace_id, ''), NULL,
                             agent._provider_audit_inputs(v_p, NULL),
                             format('provider "%s" dropped', v_p.name));
END
$$;
COMMENT ON FUNCTION agent.drop_provider(text) IS
  'Removes a provider no live agent names (2BP01 otherwise). Audited as provider.drop. Superusers only.';

-- An agent's settings name an existing provider of its workspace or of the
-- cluster, and not beside llm_url
CREATE OR REPLACE FUNCTION agent._agents_provider_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v jsonb := NEW.scope -> 'provider';
BEGIN
  IF v IS NULL OR (TG_OP = 'UPDATE' AND v IS NOT DISTINCT FROM OLD.scope -> 'provider'
                   AND NEW.workspace_id IS NOT DISTINCT FROM OLD.workspace_id
                   AND (NEW.scope ?| '{llm_url,llm_provider}') IS NOT DISTINCT FROM (OLD.scope ?| '{llm_url,llm_provider}')) THEN
    RETURN NEW;
  END IF;
  IF pg_catalog.jsonb_typeof(v) <> 'string' THEN
    RAISE EXCEPTION 'settings key "provider" must be a provider name'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NEW.scope ?| '{llm_url,llm_provider}' THEN
    RAISE EXCEPTION 'an agent names either a provider or scope llm_url/llm_provider, not both'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'A provider carries its own URL and wire format.';
  END IF;
  -- another workspace's provider does not exist for this agent
  IF NOT EXISTS (SELECT 1 FROM agent.providers p
                  WHERE p.name = v #>> '{}'
                    AND (p.workspace_id IS NULL OR p.workspace_id = NEW.workspace_id)) THEN
    RAISE EXCEPTION 'provider "%" does not exist', v #>> '{}'
      USING ERRCODE = 'undefined_object',
            DETAIL = format('An agent of workspace "%s" may name the providers of its workspace and the cluster''s.', NEW.workspace_id),
            HINT = 'agent.provider_status lists the providers the workspace may use.';
  END IF;
  RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION agent._agents_provider_check() FROM PUBLIC;
COMMENT ON FUNCTION agent._agents_provider_check() IS
  'Internal trigger: an agent''s scope.provider (settings key "provider") names an existing provider of the agent''s workspace or of the cluster, and not beside scope llm_url/llm_provider.';
COMMENT ON TRIGGER agents_provider_check ON agent.agents IS
  'scope.provider must name an existing provider (agent.providers) of the agent''s workspace or of the cluster.';

CREATE OR REPLACE VIEW agent.provider_status WITH (security_barrier) AS
SELECT p.name,
       p.kind,
       p.default_model AS model,
       pg_catalog.substring(p.base_url, '^[a-z]+://([^/:]+)') AS endpoint_host,
       p.api_key IS NOT NULL AS key_configured,
       p.stream,
       p.max_concurrent,
       p.requests_per_minute,
       p.tokens_per_minute,
       p.request_timeout,
       coalesce(h.in_flight, 0) AS in_flight,
       h.requests_available,
       h.tokens_available,
       CASE WHEN h.limited_until > pg_catalog.now() THEN h.limited_until END AS limited_until,
       coalesce(h.requests, 0) AS requests,
       coalesce(h.waits, 0) AS waits,
       coalesce(h.rate_limited, 0) AS rate_limited,
       h.last_error,
       h.last_error_at,
       p.workspace_id
  FROM agent.providers p
  LEFT JOIN agent._provider_headroom() h ON h.name = p.name
 WHERE p.workspace_id IS NULL
    OR (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
    OR (p.workspace_id = agent.current_workspace()
        AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent.provider_status IS 'LLM providers without their keys or headers: kind, model, endpoint host, limits, and what the worker''s limiter shows now (requests in flight, headroom, 429s, last error as a code). The cluster''s providers and those of the session''s workspace (pg_agents.workspace, when the role may read it); every provider for pg_monitor and superusers.';
COMMENT ON COLUMN agent.provider_status.name IS 'Provider name.';
COMMENT ON COLUMN agent.provider_status.kind IS 'Wire format: openai or anthropic.';
COMMENT ON COLUMN agent.provider_status.model IS 'Default model.';
COMMENT ON COLUMN agent.provider_status.endpoint_host IS 'Host of the base URL.';
COMMENT ON COLUMN agent.provider_status.key_configured IS 'Whether the provider has an API key (never shown).';
COMMENT ON COLUMN agent.provider_status.stream IS 'Whether requests stream.';
COMMENT ON COLUMN agent.provider_status.max_concurrent IS 'Concurrency limit (NULL: none).';
COMMENT ON COLUMN agent.provider_status.requests_per_minute IS 'Requests per minute limit (NULL: none).';
COMMENT ON COLUMN agent.provider_status.tokens_per_minute IS 'Tokens per minute limit (NULL: none).';
COMMENT ON COLUMN agent.provider_status.request_timeout IS 'Request time-out in ms (NULL: pg_agents.request_timeout).';
COMMENT ON COLUMN agent.provider_status.in_flight IS 'Requests in flight now.';
COMMENT ON COLUMN agent.provider_status.requests_available IS 'Requests that may start right now under requests_per_minute (NULL: no limit).';
COMMENT ON COLUMN agent.provider_status.tokens_available IS 'Tokens that may be sent right now under tokens_per_minute (NULL: no limit).';
COMMENT ON COLUMN agent.provider_status.limited_until IS 'No request before then: the provider said its limit is reached (a 429, or remaining 0 in its rate-limit headers).';
COMMENT ON COLUMN agent.provider_status.requests IS 'Requests sent since the worker started.';
COMMENT ON COLUMN agent.provider_status.waits IS 'Times a run waited for headroom since the worker started.';
COMMENT ON COLUMN agent.provider_status.rate_limited IS '429 replies since the worker started.';
COMMENT ON COLUMN agent.provider_status.last_error IS 'Last failed request as a status line of the worker''s own words: HTTP <status>, transport error: <libcurl''s reason>, or unusable reply (HTTP <status>); never the provider''s body (which may echo a prompt) nor a key. The run''s step has the full error.';
COMMENT ON COLUMN agent.provider_status.workspace_id IS 'Workspace of the provider; NULL: a cluster provider.';
COMMENT ON COLUMN agent.provider_status.last_error_at IS 'When it failed.';
