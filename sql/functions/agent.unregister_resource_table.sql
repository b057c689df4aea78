CREATE OR REPLACE FUNCTION agent.unregister_resource_table(tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  DELETE FROM agent.resource_tables r WHERE r.tbl = unregister_resource_table.tbl;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'table "%" is not a registered resource table', tbl
      USING ERRCODE = 'undefined_object';
  END IF;
  PERFORM agent._rows_access_trigger(unregister_resource_table.tbl, NULL, NULL, NULL, false);
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agents_tool') THEN
    EXECUTE format('REVOKE SELECT, INSERT, UPDATE ON %s FROM agents_tool', tbl);
  END IF;
  PERFORM agent._allowlist_insert_policy(tbl);
END
$$;
