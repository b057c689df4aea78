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
