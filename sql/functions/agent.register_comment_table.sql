CREATE OR REPLACE FUNCTION agent.register_comment_table(tbl regclass, target_type_column name, target_id_column name,
                                             body_column name, author_column name,
                                             workspace_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_col  pg_attribute;
  v_c    name;
  v_what text;
  i      integer := 0;
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_has_role(current_user, (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM agent._rls_check_table(tbl);
  -- four distinct text columns (the tool binds text values to them)
  FOREACH v_c IN ARRAY ARRAY[target_type_column, target_id_column, body_column, author_column] LOOP
    i := i + 1;
    v_what := (ARRAY['target type', 'target id', 'body', 'author'])[i];
    v_col := agent._rls_column(tbl, v_c, v_what);
    IF v_col.atttypid NOT IN ('text'::regtype, 'varchar'::regtype) THEN
      RAISE EXCEPTION 'column "%" of relation "%" is not of type text', v_c, tbl
        USING ERRCODE = 'datatype_mismatch',
              DETAIL = format('Its type is %s; the %s column of a comment table is text or varchar.',
                              format_type(v_col.atttypid, v_col.atttypmod), v_what);
    END IF;
    IF v_col.attgenerated <> '' OR v_col.attidentity <> '' THEN
      RAISE EXCEPTION 'column "%" of relation "%" is generated', v_c, tbl
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = format('The %s column of a comment table is written by the add_comment tool.', v_what);
    END IF;
  END LOOP;
  IF cardinality(ARRAY(SELECT DISTINCT x FROM unnest(ARRAY[target_type_column, target_id_column,
                                                          body_column, author_column]) x)) <> 4 THEN
    RAISE EXCEPTION 'the columns of a comment table must be four distinct columns'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- at most one comment table: a new registration replaces the previous one
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agents_tool') THEN
    PERFORM agent._revoke_comment_table(x.tbl) FROM agent.comment_tables x WHERE x.tbl <> register_comment_table.tbl;
  END IF;
  DELETE FROM agent.comment_tables x WHERE x.tbl <> register_comment_table.tbl;
  INSERT INTO agent.comment_tables AS x (tbl, target_type_column, target_id_column, body_column, author_column,
                                         workspace_column)
  VALUES (register_comment_table.tbl, register_comment_table.target_type_column,
          register_comment_table.target_id_column, register_comment_table.body_column,
          register_comment_table.author_column, register_comment_table.workspace_column)
  ON CONFLICT ON CONSTRAINT comment_tables_pkey DO UPDATE
     SET target_type_column = EXCLUDED.target_type_column, target_id_column = EXCLUDED.target_id_column,
         body_column = EXCLUDED.body_column, author_column = EXCLUDED.author_column,
         workspace_column = EXCLUDED.workspace_column,
         registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at;
  -- the add_comment tool inserts into it as agents_tool
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agents_tool') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO agents_tool',
                   (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl));
    EXECUTE format('GRANT INSERT ON %s TO agents_tool', tbl);
    PERFORM agent._grant_owned_sequences(tbl);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.register_comment_table(regclass, name, name, name, name, name) IS
  'Registers (or re-registers) the application table of comments that the add_comment tool inserts into: the columns of the commented resource''s type and id, of the text and of the author (all text or varchar), and for a table of several workspaces the column add_comment sets to the run''s workspace (workspace_column); replaces a previous registration (at most one comment table); grants agents_tool USAGE on its schema, INSERT on it and USAGE on the sequences its columns own. On the caller''s own tables only.';
