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
