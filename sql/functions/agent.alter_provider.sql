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
