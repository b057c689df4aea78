CREATE FUNCTION agent._check_approval_function(p_signature text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_fn    oid;
  p       record;
  v_saver regrole := agent._saving_role(NULL);
BEGIN
  BEGIN
    v_fn := pg_catalog.to_regprocedure(p_signature);
  EXCEPTION WHEN OTHERS THEN
    v_fn := NULL;
  END;
  IF v_fn IS NULL THEN
    RAISE EXCEPTION 'approval rule function % does not exist', p_signature
      USING ERRCODE = 'undefined_function',
            DETAIL = 'An approval rule names a function by its schema-qualified signature, e.g. app.needs_review(text, jsonb, bigint).';
  END IF;
  SELECT pg_catalog.oidvectortypes(f.proargtypes) AS args, f.prorettype, f.proretset, f.prokind, f.prosecdef,
         n.nspname, r.rolsuper AS owner_super
    INTO p
    FROM pg_catalog.pg_proc f
    JOIN pg_catalog.pg_namespace n ON n.oid = f.pronamespace
    JOIN pg_catalog.pg_roles r ON r.oid = f.proowner
   WHERE f.oid = v_fn;
  IF p.args <> 'text, jsonb, bigint'
     OR p.prorettype <> 'pg_catalog.bool'::regtype OR p.proretset OR p.prokind <> 'f' THEN
    RAISE EXCEPTION 'approval rule function % has the wrong signature', v_fn::regprocedure
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A predicate takes (tool text, input jsonb, run_id bigint) and returns boolean.';
  END IF;
  IF p.nspname IN ('agent', 'pg_catalog', 'information_schema') THEN
    RAISE EXCEPTION 'approval rule function % is not a predicate', v_fn::regprocedure
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('Functions of schema %s are never called as approval rules.', p.nspname);
  END IF;
  IF p.prosecdef AND NOT p.owner_super THEN
    RAISE EXCEPTION 'approval rule function % is SECURITY DEFINER', v_fn::regprocedure
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A predicate runs as the tool role with the model''s input; a SECURITY DEFINER function would run it with its owner''s rights, which only a superuser may vouch for.',
            HINT = 'Make the function SECURITY INVOKER, or have a superuser own it.';
  END IF;
  IF NOT pg_catalog.has_function_privilege(v_saver, v_fn, 'EXECUTE') THEN
    RAISE EXCEPTION 'permission denied for function %', v_fn::regprocedure
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = pg_catalog.format('The role saving the settings (%s) may not execute it.', v_saver);
  END IF;
  IF NOT pg_catalog.has_function_privilege('agents_tool', v_fn, 'EXECUTE') THEN
    RAISE EXCEPTION 'role agents_tool may not execute approval rule function %', v_fn::regprocedure
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'The worker calls a predicate as the tool role.',
            HINT = pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO agents_tool;', v_fn::regprocedure);
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._check_approval_function(text) FROM PUBLIC;
COMMENT ON FUNCTION agent._check_approval_function(text) IS
  'Internal (agent._check_scope): refuses a function that may not serve as an approval rule: unknown (42883), not (text, jsonb, bigint) RETURNS boolean or of schema agent, pg_catalog or information_schema (22023), SECURITY DEFINER and not owned by a superuser, or not executable by the saving role or by agents_tool (42501).';
