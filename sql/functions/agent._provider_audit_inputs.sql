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
