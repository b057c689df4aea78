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
