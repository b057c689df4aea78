CREATE FUNCTION agent._check_scope(p_scope jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_rules jsonb := p_scope -> 'approval_rules';
  r       jsonb;
  v_tools jsonb;
  v_key   text;
  v_val   jsonb;
BEGIN
  -- every scope key is one the worker reads (docs/worker.md, "Per agent");
  -- another would be stored and ignored (issue 31)
  FOR v_key, v_val IN SELECT * FROM jsonb_each(p_scope) LOOP
    CASE v_key
      WHEN 'deny_ends_run', 'approval_rules' THEN
        NULL;  -- checked below
      WHEN 'llm_url' THEN
        NULL;  -- checked on the agents row (the allowlist)
      WHEN 'provider', 'embedding_model' THEN
        IF jsonb_typeof(v_val) NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'scope key "%" must be a string or null', v_key USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'llm_provider' THEN
        IF jsonb_typeof(v_val) <> 'null' AND (jsonb_typeof(v_val) <> 'string' OR v_val #>> '{}' NOT IN ('openai', 'anthropic')) THEN
          RAISE EXCEPTION 'scope key "llm_provider" must be openai or anthropic' USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The wire format of the agent''s own endpoint (scope llm_url).';
        END IF;
      WHEN 'max_tokens' THEN
        IF jsonb_typeof(v_val) <> 'null' AND NOT (jsonb_typeof(v_val) = 'number' AND (v_val #>> '{}') ~ '^[0-9]{1,8}$'
                                              AND (v_val #>> '{}')::integer BETWEEN 1 AND 10000000) THEN
          RAISE EXCEPTION 'scope key "max_tokens" must be an integer between 1 and 10000000, or null' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'needs_approval' THEN
        IF jsonb_typeof(v_val) <> 'null' AND (jsonb_typeof(v_val) <> 'array'
              OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_val) t WHERE jsonb_typeof(t) <> 'string')) THEN
          RAISE EXCEPTION 'scope key "needs_approval" must be an array of tool names' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'manage_jobs' THEN
        IF jsonb_typeof(v_val) NOT IN ('boolean', 'null') THEN
          RAISE EXCEPTION 'scope key "manage_jobs" must be a boolean' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      ELSE
        RAISE EXCEPTION 'unknown scope key "%"', v_key
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Scope keys are provider, llm_url, llm_provider, embedding_model, max_tokens, needs_approval, manage_jobs, approval_rules and deny_ends_run; the worker reads no other.',
                HINT = 'docs/worker.md ("Per agent") says what each key does.';
    END CASE;
  END LOOP;
  IF p_scope ? 'deny_ends_run' AND jsonb_typeof(p_scope -> 'deny_ends_run') <> 'boolean' THEN
    RAISE EXCEPTION 'scope key "deny_ends_run" must be a boolean' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_rules IS NULL OR jsonb_typeof(v_rules) = 'null' THEN
    RETURN;
  END IF;
  IF jsonb_typeof(v_rules) <> 'array' OR jsonb_array_length(v_rules) > 50 THEN
    RAISE EXCEPTION 'scope key "approval_rules" must be an array of at most 50 rules'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A rule is {"tools": ["write_resource", "mcp__*"], "function": "app.needs_review(text, jsonb, bigint)"}.';
  END IF;
  FOR r IN SELECT * FROM jsonb_array_elements(v_rules) LOOP
    v_tools := CASE WHEN jsonb_typeof(r) = 'object' THEN r -> 'tools' END;
    IF jsonb_typeof(r) <> 'object'
       OR EXISTS (SELECT 1 FROM jsonb_object_keys(r) k WHERE k NOT IN ('tools', 'function'))
       OR jsonb_typeof(r -> 'function') IS DISTINCT FROM 'string'
       OR jsonb_typeof(v_tools) IS DISTINCT FROM 'array' OR jsonb_array_length(v_tools) = 0
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_tools) t
                   WHERE jsonb_typeof(t) <> 'string' OR (t #>> '{}') !~ '^[A-Za-z0-9_.:*-]{1,200}$') THEN
      RAISE EXCEPTION 'invalid approval rule %', r::text
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'A rule is {"tools": [tool names or patterns, * matching any characters], "function": "schema.name(text, jsonb, bigint)"}.';
    END IF;
    PERFORM agent._check_approval_function(r ->> 'function');
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent._check_scope(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._check_scope(jsonb) IS
  'Internal (agent._check_settings): refuses a scope with a key the worker does not read (22023; known: provider, llm_url, llm_provider, embedding_model, max_tokens, needs_approval, manage_jobs, approval_rules, deny_ends_run) or a value of the wrong type, whose "deny_ends_run" is not a boolean, or whose "approval_rules" is not an array of {"tools": [patterns], "function": signature} naming usable predicates (agent._check_approval_function).';
