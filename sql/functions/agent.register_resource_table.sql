CREATE OR REPLACE FUNCTION agent.register_resource_table(resource_type text, tbl regclass, id_column name,
                                              title_column name, body_column name,
                                              embedding_column name DEFAULT NULL,
                                              parent_type text DEFAULT NULL,
                                              parent_column name DEFAULT NULL,
                                              parent_id text DEFAULT NULL,
                                              writable_columns name[] DEFAULT NULL,
                                              workspace_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_vector oid;
  v_col    pg_attribute;
  v_w      name;
BEGIN
  PERFORM agent._rls_check_type(resource_type);
  PERFORM agent._rls_check_table(tbl);
  PERFORM agent._rls_column(tbl, id_column, 'id');
  PERFORM agent._rls_column(tbl, title_column, 'title');
  PERFORM agent._rls_column(tbl, body_column, 'body');
  IF embedding_column IS NOT NULL THEN
    -- pgvector is optional: the type of its extension, wherever it lives
    SELECT t.oid INTO v_vector
      FROM pg_extension x JOIN pg_type t ON t.typnamespace = x.extnamespace AND t.typname = 'vector'
     WHERE x.extname = 'vector';
    IF v_vector IS NULL THEN
      RAISE EXCEPTION 'semantic search needs the pgvector extension'
        USING ERRCODE = 'feature_not_supported',
              DETAIL = 'An embedding column is a column of type vector, which this database does not have.',
              HINT = 'Install pgvector (the Debian package postgresql-NN-pgvector) and run CREATE EXTENSION vector, or register the table without an embedding column.';
    END IF;
    v_col := agent._rls_column(tbl, embedding_column, 'embedding');
    IF v_col.atttypid <> v_vector THEN
      RAISE EXCEPTION 'column "%" of relation "%" is not of type vector', embedding_column, tbl
        USING ERRCODE = 'datatype_mismatch',
              DETAIL = pg_catalog.format('Its type is %s; an embedding column is a pgvector vector column.',
                                         pg_catalog.format_type(v_col.atttypid, v_col.atttypmod));
    END IF;
  END IF;
  -- rows of a collection: the collection's type and either a column or one id
  IF parent_type IS NULL THEN
    IF parent_column IS NOT NULL OR parent_id IS NOT NULL THEN
      RAISE EXCEPTION 'parent_column and parent_id need a parent_type'
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Name the type of the collection the rows belong to, e.g. parent_type => ''collection''.';
    END IF;
  ELSE
    PERFORM agent._rls_check_type(parent_type);
    IF parent_type = resource_type THEN
      RAISE EXCEPTION 'a resource type cannot be its own parent type'
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (parent_column IS NULL) = (parent_id IS NULL) THEN
      RAISE EXCEPTION 'a parent_type needs exactly one of parent_column and parent_id'
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'parent_column names the column holding each row''s collection id; parent_id names the one collection of a table that is a single collection.';
    END IF;
    IF parent_column IS NOT NULL THEN
      PERFORM agent._rls_column(tbl, parent_column, 'parent');
    ELSIF length(parent_id) NOT BETWEEN 1 AND 200 THEN
      RAISE EXCEPTION 'invalid parent id' USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END IF;
  -- a table holding the rows of several workspaces names the column of each
  -- row's workspace (compared as text with the agent's workspace)
  IF workspace_column IS NOT NULL THEN
    PERFORM agent._rls_column(tbl, workspace_column, 'workspace');
    IF workspace_column IN (id_column, parent_column) THEN
      RAISE EXCEPTION 'the workspace column must be another column than the id and parent columns'
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END IF;
  IF writable_columns IS NOT NULL THEN
    FOREACH v_w IN ARRAY writable_columns LOOP
      PERFORM agent._rls_column(tbl, v_w, 'writable');
      IF v_w IN (id_column, parent_column, workspace_column) THEN
        RAISE EXCEPTION 'column "%" cannot be writable', v_w
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The id, parent and workspace columns decide access; the row tools never change them.';
      END IF;
    END LOOP;
  END IF;
  INSERT INTO agent.resource_tables AS r (tbl, resource_type, id_column, title_column, body_column,
                                          embedding_column, parent_type, parent_column, parent_id,
                                          writable_columns, workspace_column)
  VALUES (register_resource_table.tbl, register_resource_table.resource_type,
          register_resource_table.id_column, register_resource_table.title_column,
          register_resource_table.body_column, register_resource_table.embedding_column,
          register_resource_table.parent_type, register_resource_table.parent_column,
          register_resource_table.parent_id, register_resource_table.writable_columns,
          register_resource_table.workspace_column)
  ON CONFLICT ON CONSTRAINT resource_tables_pkey DO UPDATE
     SET resource_type = EXCLUDED.resource_type, id_column = EXCLUDED.id_column,
         title_column = EXCLUDED.title_column, body_column = EXCLUDED.body_column,
         embedding_column = EXCLUDED.embedding_column,
         parent_type = EXCLUDED.parent_type, parent_column = EXCLUDED.parent_column,
         parent_id = EXCLUDED.parent_id, writable_columns = EXCLUDED.writable_columns,
         workspace_column = EXCLUDED.workspace_column,
         registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at;
  -- its rows change what agents may read: report them (rows of collections)
  PERFORM agent._rows_access_trigger(register_resource_table.tbl, register_resource_table.resource_type,
                                     register_resource_table.id_column, register_resource_table.parent_column,
                                     register_resource_table.parent_type IS NOT NULL);
  -- the built-in tools read (and write_resource updates) it as agents_tool;
  -- add_row inserts into the rows of collections (with the sequences of the
  -- table's identity and serial columns)
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agents_tool') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO agents_tool',
                   (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl));
    EXECUTE format('GRANT SELECT, UPDATE ON %s TO agents_tool', tbl);
    IF parent_type IS NOT NULL THEN
      EXECUTE format('GRANT INSERT ON %s TO agents_tool', tbl);
      PERFORM agent._grant_owned_sequences(tbl);
    ELSE
      EXECUTE format('REVOKE INSERT ON %s FROM agents_tool', tbl);
    END IF;
  END IF;
  -- under the allowlist, a new row of a collection is checked by its collection
  PERFORM agent._allowlist_insert_policy(tbl);
END
$$;
