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
