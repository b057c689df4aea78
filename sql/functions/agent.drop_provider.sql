CREATE OR REPLACE FUNCTION agent.drop_provider(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n bigint;
  v_p agent.providers%ROWTYPE;
BEGIN
  SELECT * INTO v_p FROM agent.providers x WHERE x.name = drop_provider.name FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'provider "%" does not exist', coalesce(drop_provider.name, 'NULL')
      USING ERRCODE = 'undefined_object';
  END IF;
  SELECT count(*) INTO n FROM agent.agents a
   WHERE a.scope ->> 'provider' = drop_provider.name AND a.deleted_at IS NULL;
  IF n > 0 THEN
    RAISE EXCEPTION 'provider "%" is used by % agent(s)', drop_provider.name, n
      USING ERRCODE = 'dependent_objects_still_exist',
            HINT = 'Save those agents with another provider first ({"provider": null} goes back to the default).';
  END IF;
  DELETE FROM agent.providers x WHERE x.id = v_p.id;
  PERFORM agent._audit_event('provider.drop', 'success', 'provider', v_p.id::text, coalesce(v_p.workspace_id, ''), NULL,
                             agent._provider_audit_inputs(v_p, NULL),
                             format('provider "%s" dropped', v_p.name));
END
$$;
