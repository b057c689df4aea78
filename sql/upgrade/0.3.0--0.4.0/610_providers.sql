-- providers (sql/src/610_providers.sql): LLM providers, the secrets store,
-- and the settings key "provider" (kept in scope.provider) of
-- agent._check_settings / agent._apply_settings (sql/src/100_access.sql).

CREATE OR REPLACE FUNCTION agent._check_settings(p_settings jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k text;
  v jsonb;
  e jsonb;
  t text;
BEGIN
  IF p_settings IS NULL OR jsonb_typeof(p_settings) <> 'object' THEN
    RAISE EXCEPTION 'settings must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, v IN SELECT * FROM jsonb_each(p_settings) LOOP
    t := jsonb_typeof(v);
    CASE k
      WHEN 'instructions', 'name' THEN
        IF t <> 'string' THEN
          RAISE EXCEPTION 'settings key "%" must be a string', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF k = 'name' AND length(btrim(v #>> '{}')) NOT BETWEEN 1 AND 200 THEN
          RAISE EXCEPTION 'settings key "name" must have 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'instruction_page_id', 'model' THEN
        IF t NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'settings key "%" must be a string or null', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'approval_mode' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('none', 'writes', 'all') THEN
          RAISE EXCEPTION 'settings key "approval_mode" must be none, writes or all' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'scope' THEN
        IF t <> 'object' THEN
          RAISE EXCEPTION 'settings key "scope" must be an object' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        PERFORM agent._check_scope(v);
      WHEN 'provider' THEN
        -- kept in scope.provider; that it exists is checked on the agents row
        -- (agent._agents_provider_check)
        IF t NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'settings key "provider" must be a provider name or null' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'web_access' THEN
        IF t <> 'boolean' THEN
          RAISE EXCEPTION 'settings key "web_access" must be a boolean' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'delegation' THEN
        IF t <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) x
                                    WHERE jsonb_typeof(x) <> 'number' OR (x #>> '{}') !~ '^[0-9]{1,18}$') THEN
          RAISE EXCEPTION 'settings key "delegation" must be an array of agent ids' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'max_iterations', 'hourly_run_cap', 'credit_limit_monthly', 'default_token_budget' THEN
        IF NOT (t = 'number' AND (v #>> '{}') ~ '^[0-9]{1,9}$'
                OR t = 'null' AND k IN ('hourly_run_cap', 'credit_limit_monthly')) THEN
          RAISE EXCEPTION 'settings key "%" must be a non-negative integer%', k,
                CASE WHEN k IN ('hourly_run_cap', 'credit_limit_monthly') THEN ' or null' ELSE '' END
            USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF k = 'max_iterations' AND (v #>> '{}')::integer NOT BETWEEN 1 AND 200 THEN
          RAISE EXCEPTION 'settings key "max_iterations" must be between 1 and 200' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        -- a monthly credit limit is not enforced: a value would be stored and
        -- ignored (issue 31); null (none) is accepted
        IF k = 'credit_limit_monthly' AND t <> 'null' THEN
          RAISE EXCEPTION 'settings key "credit_limit_monthly" cannot be honoured: pg_agents enforces no credit limit'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The column is kept for the application; the worker counts tokens, not credits.',
                  HINT = 'Bound an agent with hourly_run_cap, default_token_budget and max_iterations; null clears the limit.';
        END IF;
      WHEN 'access' THEN
        IF t <> 'array' THEN
          RAISE EXCEPTION 'settings key "access" must be an array of grants' USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'A grant is {"resource_type": ..., "resource_id": ..., "access": "read" | "edit"}.';
        END IF;
        FOR e IN SELECT * FROM jsonb_array_elements(v) LOOP
          IF jsonb_typeof(e) <> 'object' OR EXISTS (SELECT 1 FROM jsonb_object_keys(e) ok
                                                     WHERE ok NOT IN ('resource_type', 'resource_id', 'access')) THEN
            RAISE EXCEPTION 'settings key "access" must be an array of grants' USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A grant is {"resource_type": ..., "resource_id": ..., "access": "read" | "edit"}.';
          END IF;
          PERFORM agent._check_grant(e ->> 'resource_type', e ->> 'resource_id', coalesce(e ->> 'access', 'read'));
        END LOOP;
      WHEN 'triggers' THEN
        RAISE EXCEPTION 'settings key "triggers" cannot be saved with the settings'
          USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use agent.set_trigger and agent.delete_trigger; the version snapshots record the triggers.';
      ELSE
        RAISE EXCEPTION 'unknown settings key "%"', k
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Known keys: name, instructions, instruction_page_id, model, approval_mode, scope, web_access, delegation, access, max_iterations, hourly_run_cap, credit_limit_monthly, default_token_budget.';
    END CASE;
  END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION agent._apply_settings(p_agent_id bigint, p_settings jsonb, p_by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s jsonb := p_settings;
BEGIN
  IF s ? 'delegation' THEN
    PERFORM agent._check_delegation(p_agent_id, s -> 'delegation');
  END IF;
  UPDATE agent.agents a SET
    name                 = CASE WHEN s ? 'name' THEN btrim(s ->> 'name') ELSE a.name END,
    instructions         = CASE WHEN s ? 'instructions' THEN s ->> 'instructions' ELSE a.instructions END,
    instruction_page_id  = CASE WHEN s ? 'instruction_page_id' THEN s ->> 'instruction_page_id' ELSE a.instruction_page_id END,
    model                = CASE WHEN s ? 'model' THEN s ->> 'model' ELSE a.model END,
    approval_mode        = CASE WHEN s ? 'approval_mode' THEN s ->> 'approval_mode' ELSE a.approval_mode END,
    scope                = CASE WHEN s ? 'provider' AND jsonb_typeof(s -> 'provider') = 'string'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}')
                                       || jsonb_build_object('provider', s -> 'provider')
                                  WHEN s ? 'provider'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}') - 'provider'
                                  WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END,
    web_access           = CASE WHEN s ? 'web_access' THEN (s ->> 'web_access')::boolean ELSE a.web_access END,
    delegation           = CASE WHEN s ? 'delegation' THEN s -> 'delegation' ELSE a.delegation END,
    max_iterations       = CASE WHEN s ? 'max_iterations' THEN (s ->> 'max_iterations')::integer ELSE a.max_iterations END,
    hourly_run_cap       = CASE WHEN s ? 'hourly_run_cap' THEN (s ->> 'hourly_run_cap')::integer ELSE a.hourly_run_cap END,
    credit_limit_monthly = CASE WHEN s ? 'credit_limit_monthly' THEN (s ->> 'credit_limit_monthly')::integer ELSE a.credit_limit_monthly END,
    default_token_budget = CASE WHEN s ? 'default_token_budget' THEN (s ->> 'default_token_budget')::bigint ELSE a.default_token_budget END,
    updated_at           = now()
  WHERE a.id = p_agent_id;
  IF s ? 'access' THEN
    DELETE FROM agent.access g
     WHERE g.agent_id = p_agent_id
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(s -> 'access') e
                        WHERE e ->> 'resource_type' = g.resource_type AND e ->> 'resource_id' = g.resource_id);
    INSERT INTO agent.access AS g (workspace_id, agent_id, resource_type, resource_id, access, granted_by)
    SELECT DISTINCT ON (e ->> 'resource_type', e ->> 'resource_id')
           a.workspace_id, p_agent_id, e ->> 'resource_type', e ->> 'resource_id',
           coalesce(e ->> 'access', 'read'), p_by_user
      FROM agent.agents a, jsonb_array_elements(s -> 'access') WITH ORDINALITY AS x(e, n)
     WHERE a.id = p_agent_id
     ORDER BY e ->> 'resource_type', e ->> 'resource_id', n DESC
    ON CONFLICT (agent_id, resource_type, resource_id) DO UPDATE
      SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = now()
      WHERE g.access IS DISTINCT FROM EXCLUDED.access;
  END IF;
END
$$;

-- ===========================================================================
-- LLM providers and the secrets store (docs/worker.md, "Providers" and
-- "Secrets"; src/providers.c, src/secrets.c, src/ratelimit.c)
-- ===========================================================================
-- A provider is an LLM endpoint a superuser configured: its wire format
-- (kind), base URL, API key (a reference to the secrets store, never the
-- key itself), default model, extra headers, limits and time-out.  An agent
-- names one in its settings ({"provider": "name"}, kept in scope.provider and
-- versioned like every setting); without one, the GUCs (pg_agents.llm_url,
-- llm_provider, llm_model, llm_api_key) are the default provider, as before.
--
-- Secrets are encrypted (AES-256-GCM) with a key outside the database: the
-- table holds ciphertext only, readable by superusers only.

CREATE TABLE agent.secrets (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]{1,100}$'),
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON agent.secrets FROM PUBLIC;
COMMENT ON TABLE agent.secrets IS 'The secrets store: values encrypted with AES-256-GCM under a key kept outside the database (pg_agents.secret_key_file); superusers only; referenced as ${secret:NAME} by provider keys, provider and MCP header values and pg_agents.llm_api_key.';
COMMENT ON COLUMN agent.secrets.name IS 'Name of the secret, as in ${secret:NAME}.';
COMMENT ON COLUMN agent.secrets.ciphertext IS 'Format byte 0x01, 12-byte nonce, 16-byte GCM tag, ciphertext (the name is the additional authenticated data); useless without the key file.';
COMMENT ON COLUMN agent.secrets.created_at IS 'When the secret was first set.';
COMMENT ON COLUMN agent.secrets.updated_at IS 'When it was last set (rotation).';
-- dumped as ciphertext: a restore works with the same key file, and a dump
-- alone holds no secret
SELECT pg_catalog.pg_extension_config_dump('agent.secrets', '');

CREATE TABLE agent.providers (
    id                  bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name                text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    kind                text NOT NULL CHECK (kind IN ('openai', 'anthropic')),
    base_url            text NOT NULL CHECK (base_url ~ '^https?://[^/@\s]+(/\S*)?$'),
    api_key             text CHECK (api_key ~ '^\$\{secret:[A-Za-z0-9_.-]{1,100}\}$'),
    default_model       text,
    headers             jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
    max_concurrent      integer CHECK (max_concurrent BETWEEN 1 AND 10000),
    requests_per_minute integer CHECK (requests_per_minute BETWEEN 1 AND 100000000),
    tokens_per_minute   integer CHECK (tokens_per_minute BETWEEN 1 AND 2000000000),
    request_timeout     integer CHECK (request_timeout BETWEEN 100 AND 3600000),
    stream              boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON agent.providers FROM PUBLIC;
COMMENT ON TABLE agent.providers IS 'LLM providers a superuser configured (agent.add_provider); agents name one in their settings ({"provider": "name"}); superusers only: others read agent.provider_status.';
COMMENT ON COLUMN agent.providers.id IS 'Provider id.';
COMMENT ON COLUMN agent.providers.name IS 'Name agents use in their settings.';
COMMENT ON COLUMN agent.providers.kind IS 'Wire format: openai (chat completions, <base_url>/chat/completions) or anthropic (messages, <base_url>/messages).';
COMMENT ON COLUMN agent.providers.base_url IS 'Base URL as the provider''s SDK takes it, e.g. https://api.openai.com/v1 (no credentials in it).';
COMMENT ON COLUMN agent.providers.api_key IS 'Reference to the secrets store, ${secret:NAME}; the key is sent to base_url only; NULL: no key.';
COMMENT ON COLUMN agent.providers.default_model IS 'Model of agents that set none.';
COMMENT ON COLUMN agent.providers.headers IS 'Extra HTTP headers of every request; values may hold ${secret:NAME} references.';
COMMENT ON COLUMN agent.providers.max_concurrent IS 'Requests in flight at once at most (NULL: no limit).';
COMMENT ON COLUMN agent.providers.requests_per_minute IS 'Requests per minute at most, spread evenly (NULL: no limit).';
COMMENT ON COLUMN agent.providers.tokens_per_minute IS 'Tokens (input and output) per minute at most (NULL: no limit).';
COMMENT ON COLUMN agent.providers.request_timeout IS 'Time-out of one request in milliseconds (NULL: pg_agents.request_timeout).';
COMMENT ON COLUMN agent.providers.stream IS 'Whether requests stream their replies.';
COMMENT ON COLUMN agent.providers.created_at IS 'When the provider was added.';
COMMENT ON COLUMN agent.providers.updated_at IS 'When it was last changed.';
SELECT pg_catalog.pg_extension_config_dump('agent.providers', '');
SELECT pg_catalog.pg_extension_config_dump('agent.providers_id_seq', '');

-- The worker reloads providers and secrets when a change commits
CREATE FUNCTION agent._providers_changed() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_providers_changed';
COMMENT ON FUNCTION agent._providers_changed() IS
  'Internal trigger: a change of agent.providers or agent.secrets makes the worker reload them before its next request, once the transaction commits.';
CREATE TRIGGER providers_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.providers
  FOR EACH STATEMENT EXECUTE FUNCTION agent._providers_changed();
COMMENT ON TRIGGER providers_changed ON agent.providers IS 'The worker reloads providers at its next request.';
CREATE TRIGGER secrets_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.secrets
  FOR EACH STATEMENT EXECUTE FUNCTION agent._providers_changed();
COMMENT ON TRIGGER secrets_changed ON agent.secrets IS 'The worker reloads secrets at its next request (rotation without a restart).';

-- ---------------------------------------------------------------------------
-- Secrets
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent.set_secret(name text, value text) RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_set_secret';
COMMENT ON FUNCTION agent.set_secret(text, text) IS
  'Stores (or replaces: rotation, effective at the worker''s next request) a secret, encrypted with the key of pg_agents.secret_key_file (created on first use); superusers only. Pass the value as a bind parameter or read it from a file so that it is not in the statement text (docs/worker.md, "Secrets").';

CREATE FUNCTION agent.drop_secret(name text) RETURNS boolean
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_drop_secret';
COMMENT ON FUNCTION agent.drop_secret(text) IS
  'Removes a secret (42704 when there is none); providers and MCP servers that reference it fail with a clear error until it is set again. Superusers only.';

-- ---------------------------------------------------------------------------
-- Providers
-- ---------------------------------------------------------------------------

-- the checked settings of a provider: {column: value} to apply
CREATE FUNCTION agent._provider_settings(p_name text, p_settings jsonb, p_alter boolean)
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
      WHEN p_alter AND k = 'base_url' THEN
        NULL;  -- checked below
      WHEN p_alter AND k = 'api_key' THEN
        NULL;  -- checked below
      ELSE
        RAISE EXCEPTION 'unknown settings key "%" for provider "%"', k, p_name
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Provider settings are default_model, stream, max_concurrent, requests_per_minute, tokens_per_minute, request_timeout and headers'
                         || CASE WHEN p_alter THEN ' (and base_url, api_key for agent.alter_provider).' ELSE '.' END;
    END CASE;
  END LOOP;
  IF p_settings ? 'base_url' THEN
    PERFORM agent._provider_check_url(p_name, p_settings ->> 'base_url');
  END IF;
  IF p_settings ? 'api_key' AND jsonb_typeof(p_settings -> 'api_key') <> 'null' THEN
    IF jsonb_typeof(p_settings -> 'api_key') <> 'string' THEN
      RAISE EXCEPTION 'api_key of provider "%" must be a string or null', p_name USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM agent._provider_check_key(p_name, p_settings ->> 'api_key');
  END IF;
  RETURN p_settings;
END
$$;
COMMENT ON FUNCTION agent._provider_settings(text, jsonb, boolean) IS
  'Internal: checks the settings of agent.add_provider / agent.alter_provider (22023 with the key at fault).';

CREATE FUNCTION agent._provider_check_url(p_name text, p_url text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_url IS NULL OR p_url !~ '^https?://[^/\s]+(/\S*)?$' THEN
    RAISE EXCEPTION 'invalid base_url for provider "%"', p_name
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The base URL is http:// or https:// followed by a host, as the provider''s SDK takes it, e.g. https://api.openai.com/v1.';
  END IF;
  IF p_url ~ '^https?://[^/]*@' THEN
    RAISE EXCEPTION 'base_url of provider "%" must not hold credentials', p_name
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Store the key with agent.set_secret and give it as api_key => ''${secret:NAME}''.';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._provider_check_url(text, text) IS
  'Internal: a provider''s base URL is http(s)://host[/path], without user:password@.';

CREATE FUNCTION agent._provider_check_key(p_name text, p_key text) RETURNS void
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
  IF NOT EXISTS (SELECT 1 FROM agent.secrets s WHERE s.name = substring(p_key FROM 10 FOR length(p_key) - 10)) THEN
    RAISE EXCEPTION 'secret "%" does not exist', substring(p_key FROM 10 FOR length(p_key) - 10)
      USING ERRCODE = 'undefined_object',
            HINT = 'Set it first with agent.set_secret.';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._provider_check_key(text, text) IS
  'Internal: a provider''s api_key is a ${secret:NAME} reference to a secret that exists.';

CREATE FUNCTION agent.add_provider(name text, kind text, base_url text, api_key text DEFAULT NULL,
                                   settings jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s    jsonb;
  v_id bigint;
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
  IF add_provider.api_key IS NOT NULL THEN
    PERFORM agent._provider_check_key(add_provider.name, add_provider.api_key);
  END IF;
  s := agent._provider_settings(add_provider.name, coalesce(settings, '{}'), false);
  IF EXISTS (SELECT 1 FROM agent.providers p WHERE p.name = add_provider.name) THEN
    RAISE EXCEPTION 'provider "%" already exists', add_provider.name
      USING ERRCODE = 'duplicate_object', HINT = 'Change it with agent.alter_provider.';
  END IF;
  INSERT INTO agent.providers AS p (name, kind, base_url, api_key, default_model, headers, max_concurrent,
                                    requests_per_minute, tokens_per_minute, request_timeout, stream)
  VALUES (add_provider.name, kind, add_provider.base_url, add_provider.api_key, s ->> 'default_model',
          coalesce(s -> 'headers', '{}'), (s ->> 'max_concurrent')::integer,
          (s ->> 'requests_per_minute')::integer, (s ->> 'tokens_per_minute')::integer,
          (s ->> 'request_timeout')::integer, coalesce((s ->> 'stream')::boolean, false))
  RETURNING p.id INTO v_id;
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent.add_provider(text, text, text, text, jsonb) IS
  'Adds an LLM provider: name, kind (openai | anthropic), base URL, API key as ${secret:NAME} (or NULL), settings {default_model, stream, max_concurrent, requests_per_minute, tokens_per_minute, request_timeout (ms), headers}. Superusers only (or a role the DBA grants EXECUTE). Returns its id.';

CREATE FUNCTION agent.alter_provider(name text, settings jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s jsonb;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM agent.providers p WHERE p.name = alter_provider.name) THEN
    RAISE EXCEPTION 'provider "%" does not exist', coalesce(alter_provider.name, 'NULL')
      USING ERRCODE = 'undefined_object';
  END IF;
  s := agent._provider_settings(alter_provider.name, settings, true);
  UPDATE agent.providers p SET
    base_url            = CASE WHEN s ? 'base_url' THEN s ->> 'base_url' ELSE p.base_url END,
    api_key             = CASE WHEN s ? 'api_key' THEN s ->> 'api_key' ELSE p.api_key END,
    default_model       = CASE WHEN s ? 'default_model' THEN s ->> 'default_model' ELSE p.default_model END,
    headers             = CASE WHEN s ? 'headers' THEN s -> 'headers' ELSE p.headers END,
    max_concurrent      = CASE WHEN s ? 'max_concurrent' THEN (s ->> 'max_concurrent')::integer ELSE p.max_concurrent END,
    requests_per_minute = CASE WHEN s ? 'requests_per_minute' THEN (s ->> 'requests_per_minute')::integer ELSE p.requests_per_minute END,
    tokens_per_minute   = CASE WHEN s ? 'tokens_per_minute' THEN (s ->> 'tokens_per_minute')::integer ELSE p.tokens_per_minute END,
    request_timeout     = CASE WHEN s ? 'request_timeout' THEN (s ->> 'request_timeout')::integer ELSE p.request_timeout END,
    stream              = CASE WHEN s ? 'stream' THEN (s ->> 'stream')::boolean ELSE p.stream END,
    updated_at          = now()
  WHERE p.name = alter_provider.name;
END
$$;
COMMENT ON FUNCTION agent.alter_provider(text, jsonb) IS
  'Changes a provider''s settings (the keys of agent.add_provider, plus base_url and api_key; null removes a limit); the worker uses them from its next request. The kind cannot change. Superusers only.';

CREATE FUNCTION agent.drop_provider(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM agent.providers p WHERE p.name = drop_provider.name) THEN
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
  DELETE FROM agent.providers p WHERE p.name = drop_provider.name;
END
$$;
COMMENT ON FUNCTION agent.drop_provider(text) IS
  'Removes a provider no live agent names (2BP01 otherwise). Superusers only.';

-- An agent's settings name an existing provider, and not beside llm_url
CREATE FUNCTION agent._agents_provider_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v jsonb := NEW.scope -> 'provider';
BEGIN
  IF v IS NULL OR (TG_OP = 'UPDATE' AND v IS NOT DISTINCT FROM OLD.scope -> 'provider'
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
  IF NOT EXISTS (SELECT 1 FROM agent.providers p WHERE p.name = v #>> '{}') THEN
    RAISE EXCEPTION 'provider "%" does not exist', v #>> '{}'
      USING ERRCODE = 'undefined_object',
            HINT = 'agent.provider_status lists the providers.';
  END IF;
  RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION agent._agents_provider_check() FROM PUBLIC;
COMMENT ON FUNCTION agent._agents_provider_check() IS
  'Internal trigger: an agent''s scope.provider (settings key "provider") names an existing provider, and not beside scope llm_url/llm_provider.';
CREATE TRIGGER agents_provider_check BEFORE INSERT OR UPDATE OF scope ON agent.agents
  FOR EACH ROW EXECUTE FUNCTION agent._agents_provider_check();
COMMENT ON TRIGGER agents_provider_check ON agent.agents IS
  'scope.provider must name an existing provider (agent.providers).';

-- ---------------------------------------------------------------------------
-- agent.provider_status: what anyone allowed may see (never the key)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._provider_headroom()
RETURNS TABLE (name text, in_flight integer, max_concurrent integer, requests_available double precision,
               tokens_available double precision, limited_until timestamptz, requests bigint, waits bigint,
               rate_limited bigint, last_error text, last_error_at timestamptz)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_provider_headroom';
COMMENT ON FUNCTION agent._provider_headroom() IS
  'Internal: what the worker last published of each provider''s limiter (shared memory; '''' is the default provider of the GUCs); no rows when the library was not preloaded.';

CREATE VIEW agent.provider_status WITH (security_barrier) AS
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
       h.last_error_at
  FROM agent.providers p
  LEFT JOIN agent._provider_headroom() h ON h.name = p.name;
COMMENT ON VIEW agent.provider_status IS 'LLM providers without their keys or headers: kind, model, endpoint host, limits, and what the worker''s limiter shows now (requests in flight, headroom, 429s, last error).';
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
COMMENT ON COLUMN agent.provider_status.last_error IS 'Last failed request (as recorded in the run''s step; never a key).';
COMMENT ON COLUMN agent.provider_status.last_error_at IS 'When it failed.';
