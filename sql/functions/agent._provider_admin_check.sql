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
