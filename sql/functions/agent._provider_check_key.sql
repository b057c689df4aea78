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
