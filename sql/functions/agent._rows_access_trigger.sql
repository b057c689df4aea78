CREATE FUNCTION agent._rows_access_trigger(tbl regclass, resource_type text, id_column name,
                                           parent_column name, install boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_name name;
  v_ws name;
BEGIN
  -- a row moved to another workspace (workspace_column) leaves the sets too
  SELECT r.workspace_column INTO v_ws FROM agent.resource_tables r
   WHERE r.tbl = _rows_access_trigger.tbl AND r.resource_type = _rows_access_trigger.resource_type;
  FOR v_name IN SELECT t.tgname FROM pg_catalog.pg_trigger t
                 WHERE t.tgrelid = _rows_access_trigger.tbl
                   AND t.tgname IN ('pg_agents_rows_access', 'pg_agents_rows_access_truncate') LOOP
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', v_name, tbl);
  END LOOP;
  IF install THEN
    EXECUTE pg_catalog.format(
      'CREATE TRIGGER pg_agents_rows_access AFTER INSERT OR DELETE OR UPDATE OF %s ON %s '
      'FOR EACH ROW EXECUTE FUNCTION agent._access_changed(%L, %L)',
      pg_catalog.concat_ws(', ', pg_catalog.quote_ident(id_column), pg_catalog.quote_ident(parent_column),
                           pg_catalog.quote_ident(v_ws)),
      tbl, resource_type, id_column);
    EXECUTE pg_catalog.format(
      'CREATE TRIGGER pg_agents_rows_access_truncate AFTER TRUNCATE ON %s '
      'FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed()', tbl);
  END IF;
END
$$;
COMMENT ON FUNCTION agent._rows_access_trigger(regclass, text, name, name, boolean) IS
  'Internal: installs (or removes) the triggers through which a table registered as the rows of collections reports its row changes to the kept readable sets (agent._access_changed).';
