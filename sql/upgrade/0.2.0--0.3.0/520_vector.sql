-- ===========================================================================
-- vector: semantic search with pgvector (docs/allowlist.md, "Semantic
-- search").  The registry names an optional embedding column; the
-- registration function takes it (a new signature: dropped and recreated).
-- ===========================================================================
ALTER TABLE agent.resource_tables ADD COLUMN embedding_column name;
COMMENT ON COLUMN agent.resource_tables.embedding_column IS 'Optional pgvector column (type vector) holding each row''s embedding, filled by the application; search_resources ranks the table by vector similarity to the embedded query when pg_agents.embedding_model is set (docs/allowlist.md, "Semantic search"). NULL: full-text only.';

DROP FUNCTION agent.register_resource_table(text, regclass, name, name, name);
CREATE FUNCTION agent.register_resource_table(resource_type text, tbl regclass, id_column name,
                                              title_column name, body_column name,
                                              embedding_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_vector oid;
  v_col    pg_attribute;
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
  INSERT INTO agent.resource_tables AS r (tbl, resource_type, id_column, title_column, body_column,
                                          embedding_column)
  VALUES (register_resource_table.tbl, register_resource_table.resource_type,
          register_resource_table.id_column, register_resource_table.title_column,
          register_resource_table.body_column, register_resource_table.embedding_column)
  ON CONFLICT ON CONSTRAINT resource_tables_pkey DO UPDATE
     SET resource_type = EXCLUDED.resource_type, id_column = EXCLUDED.id_column,
         title_column = EXCLUDED.title_column, body_column = EXCLUDED.body_column,
         embedding_column = EXCLUDED.embedding_column,
         registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at;
  -- the built-in tools read (and write_resource updates) it as agents_tool
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agents_tool') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO agents_tool',
                   (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl));
    EXECUTE format('GRANT SELECT, UPDATE ON %s TO agents_tool', tbl);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; grants agents_tool USAGE on its schema and SELECT, UPDATE on it. Row access is then decided by agent.enable_allowlist and the tools'' gates.';

