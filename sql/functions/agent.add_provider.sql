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
