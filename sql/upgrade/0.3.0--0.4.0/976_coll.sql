-- coll (issue 31): rows of collections as resources.  agent.resource_tables
-- gains the collection a table's rows belong to and the columns the row
-- tools may set; agent.register_resource_table takes them.

ALTER TABLE agent.resource_tables
  ADD COLUMN parent_type text,
  ADD COLUMN parent_column name,
  ADD COLUMN parent_id text,
  ADD COLUMN writable_columns name[],
  ADD COLUMN workspace_column name,
  ADD CONSTRAINT resource_tables_parent_check CHECK (
      (parent_type IS NULL AND parent_column IS NULL AND parent_id IS NULL)
      OR (parent_type IS NOT NULL AND (parent_column IS NULL) <> (parent_id IS NULL)));
COMMENT ON COLUMN agent.resource_tables.parent_type IS 'Resource type of the collection its rows belong to (e.g. collection); NULL: its rows stand alone. A row without a grant (or ACL row) of its own is decided by its collection''s (docs/access.md, "Rows of collections").';
COMMENT ON COLUMN agent.resource_tables.parent_column IS 'Column holding the id of each row''s collection (compared as text); NULL when parent_id names one collection for the whole table.';
COMMENT ON COLUMN agent.resource_tables.parent_id IS 'Id of the one collection every row of the table belongs to; NULL when parent_column is given.';
COMMENT ON COLUMN agent.resource_tables.writable_columns IS 'Columns the built-in row tools may set (NULL or empty: none).';
COMMENT ON COLUMN agent.resource_tables.workspace_column IS 'Column holding each row''s workspace, for a table holding the resources of several workspaces (compared as text with the agent''s workspace): an agent never reaches a row of another workspace (reason other_workspace), and add_row sets it to the run''s workspace. NULL: the ids are unique across the database (docs/access.md, "Workspaces of resource tables").';

DROP FUNCTION agent.register_resource_table(text, regclass, name, name, name, name);
-- The rows of a table registered with a parent change what agents may read
-- (a row added to a granted collection, moved out of it, removed): a row
-- trigger tells the kept readable sets of its type which row changed
-- (agent._access_changed with the type and the id column), and one on
-- TRUNCATE that everything did.  Installed and removed with the registration.
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

CREATE FUNCTION agent.register_resource_table(resource_type text, tbl regclass, id_column name,
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
  -- the built-in tools read (and write_resource updates) it as agents_tool
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agents_tool') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO agents_tool',
                   (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl));
    EXECUTE format('GRANT SELECT, UPDATE ON %s TO agents_tool', tbl);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name, text, name, text, name[], name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; optionally the collection its rows belong to (parent_type with parent_column, or a constant parent_id: a row without its own grant or ACL row is decided by its collection''s) and the columns the row tools may set (writable_columns); for a table holding the resources of several workspaces, the column of each row''s workspace (workspace_column: an agent then never reaches a row of another workspace, and add_row sets it to the run''s workspace); grants agents_tool USAGE on its schema and SELECT, UPDATE on it. Row access is then decided by agent.enable_allowlist and the tools'' gates.';

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
    EXECUTE format('REVOKE SELECT, UPDATE ON %s FROM agents_tool', tbl);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.unregister_resource_table(regclass) IS
  'Removes the registration of a resource table and revokes agents_tool''s SELECT, UPDATE on it, and removes the triggers that report its row changes to the readable sets (its allowlist policies, if any, stay until agent.disable_allowlist).';
