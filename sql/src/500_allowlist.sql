-- pg_agents: allowlist enforcement with row-level security (docs/allowlist.md).
--
--   agent.register_resource_table / unregister_resource_table  what tools read
--   agent.readable_resources   the ids an agent may read (or edit), one query
--   agent.enable_allowlist / disable_allowlist    RLS policies on a table
--   agent.register_relation / follow_relation     relations, cut and reported
--
-- The policies are restrictive and read
--     NOT agent._allowlist_active()
--     OR (NOT agent._allowlist_custom_acl() AND agent._allowlist_has(id, <type>, <mode>))
--     OR (agent._allowlist_custom_acl() AND agent.can_access(<agent>, <type>, id::text, <mode>))
-- agent._allowlist_active() is C and IMMUTABLE: the planner folds it, so a
-- session that does not act as an agent plans the table as if it had no
-- policy, and an agent session gets the membership test of its readable set,
-- computed in C by the decision of agent.can_access and kept while the
-- visible data cannot have changed.  Its planner support function knows the
-- set's size: the planner probes the id index with the set
-- ("id = ANY (agent._allowlist_ids_int8(...))") or, for a selective search
-- written with the leakproof agent.ts_match, starts from the text index and
-- filters with the set, by cost.  The assign hook of
-- pg_agents.actor invalidates cached plans when a session switches between
-- acting as an agent and not (src/allowlist_support.c).  With a custom ACL function
-- (agent.set_acl_function) the folded shape is a per-row agent.can_access;
-- changing agent.access_config invalidates every cached plan.

-- ---------------------------------------------------------------------------
-- Plan-time switch
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._allowlist_active() RETURNS boolean
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_active';
COMMENT ON FUNCTION agent._allowlist_active() IS
  'Internal to the allowlist policies: whether the session acts as an agent. Declared IMMUTABLE on purpose so that the planner folds the policy; pg_agents.actor invalidates cached plans when it changes between agent and non-agent.';

-- ---------------------------------------------------------------------------
-- Registries
-- ---------------------------------------------------------------------------

CREATE TABLE agent.resource_tables (
    tbl           regclass PRIMARY KEY,
    resource_type text NOT NULL
                  CHECK (length(resource_type) BETWEEN 1 AND 100 AND resource_type <> 'workspace_shared'),
    id_column     name NOT NULL,
    title_column  name NOT NULL,
    body_column   name NOT NULL,
    tsv_column    name,
    search_config regconfig NOT NULL DEFAULT 'simple',
    registered_by text NOT NULL DEFAULT current_user,
    registered_at timestamptz NOT NULL DEFAULT now(),
    embedding_column name,
    parent_type      text,
    parent_column    name,
    parent_id        text,
    writable_columns name[],
    workspace_column name,
    CONSTRAINT resource_tables_parent_check CHECK (
      (parent_type IS NULL AND parent_column IS NULL AND parent_id IS NULL)
      OR (parent_type IS NOT NULL AND (parent_column IS NULL) <> (parent_id IS NULL)))
);
CREATE INDEX resource_tables_type_idx ON agent.resource_tables (resource_type);
COMMENT ON TABLE agent.resource_tables IS
  'Application tables that hold agent-readable resources (a type may span several tables), used by the built-in read/search/write tools and by relations. Database-wide, like a catalog (a Citus reference table).';
COMMENT ON COLUMN agent.resource_tables.tbl IS 'The application table.';
COMMENT ON COLUMN agent.resource_tables.resource_type IS 'Resource type of its rows (page, collection, skill, agent, or an application type).';
COMMENT ON COLUMN agent.resource_tables.id_column IS 'Column holding the resource id (compared as text with agent.access.resource_id).';
COMMENT ON COLUMN agent.resource_tables.title_column IS 'Column holding the title.';
COMMENT ON COLUMN agent.resource_tables.body_column IS 'Column holding the body text.';
COMMENT ON COLUMN agent.resource_tables.tsv_column IS 'Optional stored tsvector column that search_resources uses (with its GIN index); NULL: search computes to_tsvector(search_config, title || '' '' || body).';
COMMENT ON COLUMN agent.resource_tables.search_config IS 'Text search configuration of search queries (and of the computed tsvector); set it with UPDATE.';
COMMENT ON COLUMN agent.resource_tables.registered_by IS 'Role that registered the table.';
COMMENT ON COLUMN agent.resource_tables.registered_at IS 'When it was registered.';
COMMENT ON COLUMN agent.resource_tables.parent_type IS 'Resource type of the collection its rows belong to (e.g. collection); NULL: its rows stand alone. A row without a grant (or ACL row) of its own is decided by its collection''s (docs/access.md, "Rows of collections").';
COMMENT ON COLUMN agent.resource_tables.parent_column IS 'Column holding the id of each row''s collection (compared as text); NULL when parent_id names one collection for the whole table.';
COMMENT ON COLUMN agent.resource_tables.parent_id IS 'Id of the one collection every row of the table belongs to; NULL when parent_column is given.';
COMMENT ON COLUMN agent.resource_tables.writable_columns IS 'Columns the built-in row tools may set (NULL or empty: none).';
COMMENT ON COLUMN agent.resource_tables.workspace_column IS 'Column holding each row''s workspace, for a table holding the resources of several workspaces (compared as text with the agent''s workspace): an agent never reaches a row of another workspace (reason other_workspace), and add_row sets it to the run''s workspace. NULL: the ids are unique across the database (docs/access.md, "Workspaces of resource tables").';
COMMENT ON COLUMN agent.resource_tables.embedding_column IS 'Optional pgvector column (type vector) holding each row''s embedding, filled by the application; search_resources ranks the table by vector similarity to the embedded query when pg_agents.embedding_model is set (docs/allowlist.md, "Semantic search"). NULL: full-text only.';

CREATE TABLE agent.comment_tables (
    tbl                regclass PRIMARY KEY,
    one                boolean NOT NULL DEFAULT true CHECK (one),
    target_type_column name NOT NULL,
    target_id_column   name NOT NULL,
    body_column        name NOT NULL,
    author_column      name NOT NULL,
    registered_by      text NOT NULL DEFAULT current_user,
    registered_at      timestamptz NOT NULL DEFAULT now(),
    workspace_column   name,
    CONSTRAINT comment_tables_one_key UNIQUE (one)
);
COMMENT ON TABLE agent.comment_tables IS
  'The application table of comments the add_comment tool inserts into (at most one). Database-wide, like a catalog (a Citus reference table).';
COMMENT ON COLUMN agent.comment_tables.tbl IS 'The application table of comments.';
COMMENT ON COLUMN agent.comment_tables.one IS 'Always true: at most one comment table is registered.';
COMMENT ON COLUMN agent.comment_tables.target_type_column IS 'Column holding the resource type of the commented resource (page, or the type of a row).';
COMMENT ON COLUMN agent.comment_tables.target_id_column IS 'Column holding the id of the commented resource.';
COMMENT ON COLUMN agent.comment_tables.body_column IS 'Column holding the text of the comment.';
COMMENT ON COLUMN agent.comment_tables.author_column IS 'Column holding the author: agent:<id> (user:<id> for a manual run) for a comment of the add_comment tool.';
COMMENT ON COLUMN agent.comment_tables.registered_by IS 'Role that registered the table.';
COMMENT ON COLUMN agent.comment_tables.registered_at IS 'When it was registered.';
COMMENT ON COLUMN agent.comment_tables.workspace_column IS 'Column add_comment sets to the run''s workspace, for a comment table holding the comments of several workspaces; NULL: none.';

CREATE TABLE agent.allowlist_tables (
    tbl             regclass PRIMARY KEY,
    resource_type   text NOT NULL CHECK (length(resource_type) BETWEEN 1 AND 100 AND resource_type <> 'workspace_shared'),
    id_column       name NOT NULL,
    indexable       boolean NOT NULL,
    rls_was_enabled boolean NOT NULL,
    rls_was_forced  boolean NOT NULL,
    base_policy     text,
    enabled_by      text NOT NULL DEFAULT current_user,
    enabled_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE agent.allowlist_tables IS
  'Tables under allowlist enforcement (agent.enable_allowlist) and the row-level security state to restore on disable. Database-wide, like a catalog.';
COMMENT ON COLUMN agent.allowlist_tables.tbl IS 'The application table.';
COMMENT ON COLUMN agent.allowlist_tables.resource_type IS 'Resource type of its rows.';
COMMENT ON COLUMN agent.allowlist_tables.id_column IS 'Column holding the resource id.';
COMMENT ON COLUMN agent.allowlist_tables.indexable IS 'Whether the policy compares the column in its own type (an index on it serves agent queries); false: compared as text.';
COMMENT ON COLUMN agent.allowlist_tables.rls_was_enabled IS 'Whether row-level security was enabled before (kept enabled on disable).';
COMMENT ON COLUMN agent.allowlist_tables.rls_was_forced IS 'Whether row-level security was forced before (kept forced on disable).';
COMMENT ON COLUMN agent.allowlist_tables.base_policy IS 'Permissive pass-through policy added so that non-agent sessions keep their access: pg_agents_allowlist_base (for everyone, when the table had no RLS) or pg_agents_allowlist_owner (for the owner, when RLS was on but not forced); NULL if none.';
COMMENT ON COLUMN agent.allowlist_tables.enabled_by IS 'Role that enabled it.';
COMMENT ON COLUMN agent.allowlist_tables.enabled_at IS 'When it was enabled.';

CREATE TABLE agent.relations (
    from_type   text NOT NULL,
    column_name name NOT NULL,
    from_table  regclass NOT NULL,
    id_column   name NOT NULL,
    to_type     text NOT NULL CHECK (length(to_type) BETWEEN 1 AND 100 AND to_type <> 'workspace_shared'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (from_type, column_name)
);
COMMENT ON TABLE agent.relations IS
  'Relations between resources: a column of a resource table that holds ids of resources of another type (scalar, array or jsonb). Followed with agent.follow_relation. Database-wide, like a catalog.';
COMMENT ON COLUMN agent.relations.from_type IS 'Resource type of the rows holding the relation.';
COMMENT ON COLUMN agent.relations.column_name IS 'Column holding the target id(s); the relation''s name.';
COMMENT ON COLUMN agent.relations.from_table IS 'Table holding the relation.';
COMMENT ON COLUMN agent.relations.id_column IS 'Id column of from_table.';
COMMENT ON COLUMN agent.relations.to_type IS 'Resource type of the targets.';
COMMENT ON COLUMN agent.relations.created_at IS 'When it was registered.';

GRANT SELECT ON agent.resource_tables, agent.allowlist_tables, agent.relations TO PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('agent.resource_tables', '');
SELECT pg_catalog.pg_extension_config_dump('agent.allowlist_tables', '');
SELECT pg_catalog.pg_extension_config_dump('agent.relations', '');

-- Resolves a column of a table, or raises 42703.
CREATE FUNCTION agent._rls_column(p_tbl regclass, p_column name, p_what text)
RETURNS pg_catalog.pg_attribute
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a pg_attribute;
BEGIN
  IF p_column IS NULL THEN
    RAISE EXCEPTION '% column must not be null', p_what USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO a FROM pg_attribute
   WHERE attrelid = p_tbl AND attname = p_column AND attnum > 0 AND NOT attisdropped;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', p_column, p_tbl
      USING ERRCODE = 'undefined_column',
            DETAIL = format('The %s column must be a column of the table.', p_what);
  END IF;
  RETURN a;
END
$$;
COMMENT ON FUNCTION agent._rls_column(regclass, name, text) IS
  'Internal: the pg_attribute row of a table column, or an undefined_column error.';

CREATE FUNCTION agent._rls_check_table(p_tbl regclass) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF (SELECT relkind FROM pg_class WHERE oid = p_tbl) NOT IN ('r', 'p') THEN
    RAISE EXCEPTION '"%" is not a table', p_tbl
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only ordinary and partitioned tables hold resources.';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._rls_check_table(regclass) IS
  'Internal: raises unless the relation is an ordinary or partitioned table.';

CREATE FUNCTION agent._rls_check_type(p_type text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_type IS NULL OR length(p_type) NOT BETWEEN 1 AND 100 OR p_type = 'workspace_shared' THEN
    RAISE EXCEPTION 'invalid resource type "%"', coalesce(p_type, '(null)')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A resource type is a name of 1 to 100 characters other than workspace_shared, such as page or collection.';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._rls_check_type(text) IS
  'Internal: raises unless the text is a usable resource type.';

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
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name, text, name, text, name[], name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; optionally the collection its rows belong to (parent_type with parent_column, or a constant parent_id: a row without its own grant or ACL row is decided by its collection''s) and the columns the row tools may set (writable_columns); for a table holding the resources of several workspaces, the column of each row''s workspace (workspace_column: an agent then never reaches a row of another workspace, and add_row sets it to the run''s workspace); grants agents_tool USAGE on its schema and SELECT, UPDATE on it, and for rows of collections INSERT (the add_row tool) and USAGE on the sequences its columns own. Row access is then decided by agent.enable_allowlist and the tools'' gates.';

CREATE FUNCTION agent._grant_owned_sequences(p_tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_seq regclass;
BEGIN
  -- the sequences of the table's identity and serial columns (their defaults)
  FOR v_seq IN
    SELECT d.objid::regclass FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
     WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
       AND d.refobjid = p_tbl AND d.deptype IN ('a', 'i')
     ORDER BY 1
  LOOP
    EXECUTE format('GRANT USAGE ON SEQUENCE %s TO agents_tool', v_seq);
  END LOOP;
END
$$;
COMMENT ON FUNCTION agent._grant_owned_sequences(regclass) IS
  'Internal: grants agents_tool USAGE on the sequences the table''s identity and serial columns own, so that the row tools can insert rows whose ids they generate.';

-- A new row of a collection has no grant nor ACL row of its own yet, and is
-- not in the readable set the allowlist policies compute (it is not in the
-- table yet): the insert check of a table of rows of collections decides it
-- by its collection (edit), as agent.can_access decides a row without its
-- own grant.  One call per inserted row, only in a session acting as an agent.
CREATE FUNCTION agent._allowlist_new_row(p_parent_type text, p_parent_id text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p_parent_id IS NOT NULL
         AND coalesce(agent.can_access(agent.current_agent_id(), p_parent_type, p_parent_id, 'edit'), false)
$$;
COMMENT ON FUNCTION agent._allowlist_new_row(text, text) IS
  'Internal to the insert policy of the allowlist on a table of rows of collections: may the session''s agent add a row to this collection (edit on it, in the autonomous regime)?';

CREATE FUNCTION agent._allowlist_insert_policy(p_tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t   agent.allowlist_tables%ROWTYPE;
  r   agent.resource_tables%ROWTYPE;
  ed  record;
  v   text;
BEGIN
  SELECT * INTO t FROM agent.allowlist_tables a WHERE a.tbl = p_tbl;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  ed := agent._allowlist_expr(p_tbl, t.id_column, t.resource_type, 'edit');
  v := ed.expr;
  SELECT * INTO r FROM agent.resource_tables x
   WHERE x.tbl = p_tbl AND x.resource_type = t.resource_type AND x.parent_type IS NOT NULL;
  IF FOUND THEN
    v := format('(%s) OR (agent._allowlist_active() AND agent._allowlist_new_row(%L, %s))', v, r.parent_type,
                CASE WHEN r.parent_column IS NOT NULL THEN format('(%I)::text', r.parent_column)
                     ELSE format('%L::text', r.parent_id) END);
  END IF;
  EXECUTE format('ALTER POLICY pg_agents_allowlist_insert ON %s WITH CHECK (%s)', p_tbl, v);
END
$$;
COMMENT ON FUNCTION agent._allowlist_insert_policy(regclass) IS
  'Internal: (re)writes the insert check of the allowlist on a table (when enabled): the new row is one the agent may edit, or, for a table registered as the rows of collections, a row of a collection the agent may edit.';

CREATE FUNCTION agent.unregister_resource_table(tbl regclass) RETURNS void
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
COMMENT ON FUNCTION agent.unregister_resource_table(regclass) IS
  'Removes the registration of a resource table and revokes agents_tool''s SELECT, INSERT, UPDATE on it, and removes the triggers that report its row changes to the readable sets (its allowlist policies, if any, stay until agent.disable_allowlist).';

CREATE FUNCTION agent.register_comment_table(tbl regclass, target_type_column name, target_id_column name,
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

CREATE FUNCTION agent._revoke_comment_table(p_tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  EXECUTE format('REVOKE INSERT ON %s FROM agents_tool', p_tbl);
END
$$;
COMMENT ON FUNCTION agent._revoke_comment_table(regclass) IS
  'Internal: revokes agents_tool''s INSERT on a comment table that is no longer registered.';

-- ---------------------------------------------------------------------------
-- Custom ACL function (agent.set_acl_function, access module)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._allowlist_custom_acl_now() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT EXISTS (SELECT 1 FROM agent.access_config WHERE acl_function IS NOT NULL) $$;
COMMENT ON FUNCTION agent._allowlist_custom_acl_now() IS
  'Internal: whether a custom ACL function is configured (agent.access_config), now.';

-- The same, IMMUTABLE on purpose: folded into the plans of the policies, which
-- take a per-row agent.can_access shape when a custom ACL function is set.
-- A change of agent.access_config invalidates every cached plan.
CREATE FUNCTION agent._allowlist_custom_acl() RETURNS boolean
LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_custom_acl';
COMMENT ON FUNCTION agent._allowlist_custom_acl() IS
  'Internal to the allowlist policies: whether a custom ACL function is configured, declared IMMUTABLE so that the planner folds it; changing agent.access_config invalidates cached plans (and the value, which each backend keeps until then).';

CREATE FUNCTION agent._allowlist_invalidate() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_invalidate';
COMMENT ON FUNCTION agent._allowlist_invalidate() IS
  'Internal trigger: invalidates every cached plan of the database at commit (the allowlist policies fold the ACL setting).';
CREATE TRIGGER access_config_allowlist_invalidate
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.access_config
  FOR EACH STATEMENT EXECUTE FUNCTION agent._allowlist_invalidate();

-- ---------------------------------------------------------------------------
-- The readable set
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.readable_set_stats(OUT computed bigint, OUT reused bigint)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_readable_set_stats';
COMMENT ON FUNCTION agent.readable_set_stats() IS
  'How many readable sets (for the allowlist policies and agent.readable_resources) this backend has computed, and how many it has reused because no access data could have changed since.';

CREATE FUNCTION agent._readable_ids(agent_id bigint, resource_type text, mode text) RETURNS text[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_readable_ids';
REVOKE ALL ON FUNCTION agent._readable_ids(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._readable_ids(bigint, text, text) IS
  'Internal to agent.readable_resources: the readable (or editable) ids of any agent among the resources of a type, sorted, computed in C by the decision of agent.can_access. Not executable by PUBLIC.';

-- Planner support of the policies' membership test and of the readable set in
-- an index condition (src/allowlist_support.c): selectivity from the real size of the
-- readable set, the index condition on the id index, and its cost.  The
-- _allowlist_ids_* functions are VOLATILE (their result depends only on the
-- session and the access data) so that the planner does not evaluate them
-- while estimating an index condition: it would then estimate each id of
-- the set one by one (a millisecond for 10k ids, at every planning).
CREATE FUNCTION agent._allowlist_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_support';
COMMENT ON FUNCTION agent._allowlist_support(internal) IS
  'Internal planner support of agent._allowlist_has (selectivity from the size of the readable set, the index condition id = ANY (agent._allowlist_ids_*(...)) on a btree index of the id column) and of agent._allowlist_ids_* (the cost of one index probe per readable id).';

CREATE FUNCTION agent._allowlist_ids_text(resource_type text, mode text) RETURNS text[]
LANGUAGE C VOLATILE PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_text(text, text) IS
  'Internal to the allowlist policies: the ids the session''s agent may read (or edit) among the resources of a type, as text; empty when the session does not act as an agent. Computed in C once per statement, kept while the visible data cannot have changed.';

CREATE FUNCTION agent._allowlist_ids_int8(resource_type text, mode text) RETURNS bigint[]
LANGUAGE C VOLATILE PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_int8(text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_ids_text, for integer id columns (ids that are not integers are left out).';

CREATE FUNCTION agent._allowlist_ids_uuid(resource_type text, mode text) RETURNS uuid[]
LANGUAGE C VOLATILE PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_uuid(text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_ids_text, for uuid id columns (ids that are not canonical lowercase uuids are left out).';

-- The policies' test: is the id in the session's agent's readable set?  One
-- per id type that keeps an index on the column usable (smallint and integer
-- probe with bigints; varchar columns use the text one).
CREATE FUNCTION agent._allowlist_has(id bigint, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id integer, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id smallint, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id uuid, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id text, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
COMMENT ON FUNCTION agent._allowlist_has(bigint, text, text) IS
  'Internal to the allowlist policies: whether the id is in the readable set of the session''s agent for the type and mode (false when the session does not act as an agent). Planned by agent._allowlist_support: as a probe of the id index with the readable set, or as a filter after the query''s own index conditions, by cost.';
COMMENT ON FUNCTION agent._allowlist_has(integer, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for integer id columns.';
COMMENT ON FUNCTION agent._allowlist_has(smallint, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for smallint id columns.';
COMMENT ON FUNCTION agent._allowlist_has(uuid, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for uuid id columns.';
COMMENT ON FUNCTION agent._allowlist_has(text, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for text and varchar id columns (and other types compared as text); ids compare byte for byte.';

-- ---------------------------------------------------------------------------
-- A leakproof full-text match (docs/allowlist.md, "Searching under the
-- allowlist")
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._ts_match_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_ts_match_support';
COMMENT ON FUNCTION agent._ts_match_support(internal) IS
  'Internal planner support of agent.ts_match: the selectivity of tsvector @@ tsquery, and @@ as the index condition on a GIN or GiST index whose operator family has it.';

CREATE FUNCTION agent.ts_match(vector tsvector, query tsquery) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._ts_match_support
AS 'MODULE_PATHNAME', 'pg_agents_ts_match';
COMMENT ON FUNCTION agent.ts_match(tsvector, tsquery) IS
  'vector @@ query, marked LEAKPROOF (it raises no error that depends on its arguments; a query nested more than 256 levels deep matches nothing), so that under row-level security (the allowlist) a search can start from the text index (the default GIN tsvector_ops serves it) and filter with the policy afterwards. Write agent.ts_match(tsv, q) instead of tsv @@ q in an agent''s searches.';

CREATE FUNCTION agent._like_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_like_support';
COMMENT ON FUNCTION agent._like_support(internal) IS
  'Internal planner support of agent.like and agent.ilike: the estimates and btree prefix conditions of LIKE and ILIKE, and ~~ / ~~* as the index condition on an index whose operator family has it (pg_trgm''s gin_trgm_ops, gist_trgm_ops) for a constant pattern.';

CREATE FUNCTION agent.like(string text, pattern text) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._like_support
AS 'MODULE_PATHNAME', 'pg_agents_like';
COMMENT ON FUNCTION agent.like(text, text) IS
  'string LIKE pattern, marked LEAKPROOF (a pattern ending with the escape character, or with more than 256 %, matches nothing instead of possibly raising an error), so that under row-level security (the allowlist) a pattern search can start from a trigram (pg_trgm) or btree prefix index. Write agent.like(body, ''%x%'') instead of body LIKE ''%x%'' in an agent''s searches.';

CREATE FUNCTION agent.ilike(string text, pattern text) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._like_support
AS 'MODULE_PATHNAME', 'pg_agents_ilike';
COMMENT ON FUNCTION agent.ilike(text, text) IS
  'string ILIKE pattern, marked LEAKPROOF (as agent.like), so that under the allowlist a case-insensitive pattern search can start from a trigram (pg_trgm) index.';

-- Transactions that change what agents may access say so (src/shmem.c), so
-- that a backend may keep an agent's readable set across statements until one
-- of them commits.  ENABLE ALWAYS: logical replication's apply changes count.
CREATE FUNCTION agent._access_changed() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_access_changed';
COMMENT ON FUNCTION agent._access_changed() IS
  'Internal statement and row trigger on the tables agent.can_access reads: marks the transaction as changing access data, and (as a row trigger) what it changes, so that when it commits the readable sets kept by backends are kept, patched or computed afresh.';
CREATE TRIGGER access_changed AFTER INSERT OR DELETE OR TRUNCATE
                             OR UPDATE OF workspace_id, owner_id, status, deleted_at ON agent.agents
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.access
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.resource_acl
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.group_members
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.access_config
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
ALTER TABLE agent.agents ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.access ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.resource_acl ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.group_members ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.access_config ENABLE ALWAYS TRIGGER access_changed;
-- Row triggers describe what changed (the agent, the grant, the resource's
-- ACL, the user's groups),
-- so that kept sets a commit does not concern stay good and those it concerns
-- are patched; the statement triggers above then add nothing for these
-- tables (they do for TRUNCATE, and if a row trigger is missing or disabled).
CREATE TRIGGER access_changed_row AFTER INSERT OR DELETE
                                 OR UPDATE OF workspace_id, owner_id, status, deleted_at ON agent.agents
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed_row AFTER INSERT OR UPDATE OR DELETE ON agent.access
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed_row AFTER INSERT OR UPDATE OR DELETE ON agent.resource_acl
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed_row AFTER INSERT OR UPDATE OR DELETE ON agent.group_members
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
ALTER TABLE agent.agents ENABLE ALWAYS TRIGGER access_changed_row;
ALTER TABLE agent.access ENABLE ALWAYS TRIGGER access_changed_row;
ALTER TABLE agent.resource_acl ENABLE ALWAYS TRIGGER access_changed_row;
ALTER TABLE agent.group_members ENABLE ALWAYS TRIGGER access_changed_row;

CREATE FUNCTION agent.readable_resources(agent_id bigint, resource_type text, mode text DEFAULT 'read')
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_self   bigint := agent.current_agent_id();
  v_ws     text;
BEGIN
  IF mode IS NULL OR mode NOT IN ('read', 'edit') THEN
    RAISE EXCEPTION 'invalid mode "%"', coalesce(mode, '(null)')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A mode is read or edit.';
  END IF;
  IF v_self IS NOT NULL AND agent_id IS DISTINCT FROM v_self THEN
    RAISE EXCEPTION 'an agent session can only list its own resources'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = format('The session acts as agent %s.', v_self);
  END IF;
  IF agent_id IS NULL OR resource_type IS NULL THEN
    RETURN;
  END IF;
  -- an agent of another workspace than the session's is unknown: nothing
  -- (the session's workspace named; a session bound to none: the agent's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = readable_resources.agent_id;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = readable_resources.agent_id) THEN
    RETURN;
  END IF;
  -- (a) direct grants at >= mode, bounded by the owner's ACL (their user and
  --     group rows, and what is shared with the whole workspace);
  -- (b) with a workspace_shared grant: what is shared with the whole
  --     workspace now, bounded by the owner's ACL;
  -- each candidate decided by the code of agent.can_access (src/access.c).
  RETURN QUERY SELECT unnest(agent._readable_ids(agent_id, resource_type, mode));
END
$$;
COMMENT ON FUNCTION agent.readable_resources(bigint, text, text) IS
  'Ids of the resources of a type an agent may read (or edit) in the autonomous regime, exactly those agent.can_access allows: direct grants bounded by the owner''s ACL, plus what is shared with the workspace when the agent holds workspace_shared. Empty for an unknown, deleted or suspended agent. With a custom ACL function (agent.set_acl_function): the direct grants that function allows, without the workspace shares, which such a function cannot list. An agent session may only ask for itself.';

-- ---------------------------------------------------------------------------
-- Policies
-- ---------------------------------------------------------------------------

-- The "id is in the readable set" expression for a column, in the column's own
-- type when that keeps an index on it usable, as text otherwise.  Ids that
-- cannot be the text form of a value of the column's type are dropped, so a
-- stray grant never makes a query fail.
CREATE FUNCTION agent._allowlist_expr(p_tbl regclass, p_column name, p_type text, p_mode text,
                                      OUT expr text, OUT indexable boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att  pg_attribute := agent._rls_column(p_tbl, p_column, 'id');
  col  text := quote_ident(p_column);
BEGIN
  -- text, varchar, the integers and uuid keep an index on the column usable
  -- (int2/int4 = int8 are in the integer btree family); others compare as text
  indexable := att.atttypid IN ('text'::regtype, 'varchar'::regtype, 'int2'::regtype,
                                'int4'::regtype, 'int8'::regtype, 'uuid'::regtype);
  -- Folded at plan time: a non-agent session keeps "true"; an agent session
  -- keeps the membership test (which the planner turns into a probe of the
  -- id index with the readable set, or keeps as a filter, by cost), or with
  -- a custom ACL function the per-row check.
  expr := format('NOT agent._allowlist_active() OR (NOT agent._allowlist_custom_acl() AND %s)'
                 ' OR (agent._allowlist_custom_acl() AND agent.can_access((SELECT agent.current_agent_id()), %L, (%s)::text, %L))',
                 CASE WHEN indexable THEN format('agent._allowlist_has(%s, %L, %L)', col, p_type, p_mode)
                      ELSE format('agent._allowlist_has((%s)::text, %L, %L)', col, p_type, p_mode) END,
                 p_type, col, p_mode);
END
$$;
COMMENT ON FUNCTION agent._allowlist_expr(regclass, name, text, text) IS
  'Internal: the policy expression "not an agent session, or the id is in the readable set" for a table column and a mode.';

CREATE FUNCTION agent.enable_allowlist(tbl regclass, resource_type text, id_column name)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c     pg_class;
  rd    record;
  ed    record;
  base  text;
BEGIN
  PERFORM agent._rls_check_type(resource_type);
  PERFORM agent._rls_check_table(tbl);
  IF EXISTS (SELECT 1 FROM agent.allowlist_tables t WHERE t.tbl = enable_allowlist.tbl) THEN
    RAISE EXCEPTION 'allowlist is already enabled on table "%"', tbl
      USING ERRCODE = 'duplicate_object',
            HINT = 'Call agent.disable_allowlist first to change its resource type or id column.';
  END IF;
  SELECT * INTO c FROM pg_class WHERE oid = tbl;
  rd := agent._allowlist_expr(tbl, id_column, resource_type, 'read');
  ed := agent._allowlist_expr(tbl, id_column, resource_type, 'edit');

  -- Non-agent sessions keep exactly the access they had: with no RLS before,
  -- a pass-through policy for everyone; with RLS on but not forced, one for
  -- the owner (who bypassed the application's policies until now).
  IF NOT c.relrowsecurity THEN
    base := 'pg_agents_allowlist_base';
    EXECUTE format('CREATE POLICY %I ON %s AS PERMISSIVE FOR ALL TO PUBLIC USING (true) WITH CHECK (true)',
                   base, tbl);
  ELSIF NOT c.relforcerowsecurity THEN
    base := 'pg_agents_allowlist_owner';
    EXECUTE format('CREATE POLICY %I ON %s AS PERMISSIVE FOR ALL TO %I USING (true) WITH CHECK (true)',
                   base, tbl, pg_get_userbyid(c.relowner));
  END IF;
  IF base IS NOT NULL THEN
    EXECUTE format('COMMENT ON POLICY %I ON %s IS %L', base, tbl,
                   'pg_agents: keeps non-agent sessions'' access unchanged under agent.enable_allowlist.');
  END IF;

  EXECUTE format('CREATE POLICY pg_agents_allowlist_select ON %s AS RESTRICTIVE FOR SELECT TO PUBLIC USING (%s)',
                 tbl, rd.expr);
  EXECUTE format('CREATE POLICY pg_agents_allowlist_insert ON %s AS RESTRICTIVE FOR INSERT TO PUBLIC WITH CHECK (%s)',
                 tbl, ed.expr);
  EXECUTE format('CREATE POLICY pg_agents_allowlist_update ON %s AS RESTRICTIVE FOR UPDATE TO PUBLIC USING (%s) WITH CHECK (%s)',
                 tbl, ed.expr, ed.expr);
  EXECUTE format('CREATE POLICY pg_agents_allowlist_delete ON %s AS RESTRICTIVE FOR DELETE TO PUBLIC USING (%s)',
                 tbl, ed.expr);
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_select ON %s IS %L', tbl,
                 'pg_agents: an agent session reads only the rows agent.readable_resources grants it.');
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_insert ON %s IS %L', tbl,
                 'pg_agents: an agent session inserts only rows it may edit.');
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_update ON %s IS %L', tbl,
                 'pg_agents: an agent session updates only rows it may edit.');
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_delete ON %s IS %L', tbl,
                 'pg_agents: an agent session deletes only rows it may edit.');
  EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', tbl);
  EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', tbl);

  INSERT INTO agent.allowlist_tables (tbl, resource_type, id_column, indexable, rls_was_enabled,
                                      rls_was_forced, base_policy)
  VALUES (tbl, resource_type, id_column, rd.indexable, c.relrowsecurity, c.relforcerowsecurity, base);
  -- rows of collections: a new row is checked by its collection
  PERFORM agent._allowlist_insert_policy(tbl);
  IF NOT rd.indexable THEN
    RAISE NOTICE 'allowlist on "%" compares "%" as text', tbl, id_column
      USING DETAIL = 'Its type has no indexable comparison with resource ids, so agent queries filter every row they scan.',
            HINT = format('Use a text, varchar, integer or uuid id column, or index (%I::text).', id_column);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.enable_allowlist(regclass, text, name) IS
  'Installs row-level security on an application table (ENABLE and FORCE, restrictive policies per command) so that a session acting as an agent reads only the rows it may read and inserts, updates and deletes only the rows it may edit; other sessions are unaffected. Superusers and BYPASSRLS roles bypass it.';

CREATE FUNCTION agent.disable_allowlist(tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t agent.allowlist_tables%ROWTYPE;
  p text;
BEGIN
  SELECT * INTO t FROM agent.allowlist_tables a WHERE a.tbl = disable_allowlist.tbl;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'allowlist is not enabled on table "%"', tbl USING ERRCODE = 'undefined_object';
  END IF;
  FOREACH p IN ARRAY ARRAY['pg_agents_allowlist_select', 'pg_agents_allowlist_insert',
                           'pg_agents_allowlist_update', 'pg_agents_allowlist_delete', t.base_policy]
  LOOP
    IF p IS NOT NULL THEN
      EXECUTE format('DROP POLICY IF EXISTS %I ON %s', p, tbl);
    END IF;
  END LOOP;
  IF NOT t.rls_was_forced THEN
    EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY', tbl);
  END IF;
  IF NOT t.rls_was_enabled THEN
    EXECUTE format('ALTER TABLE %s DISABLE ROW LEVEL SECURITY', tbl);
  END IF;
  DELETE FROM agent.allowlist_tables a WHERE a.tbl = disable_allowlist.tbl;
END
$$;
COMMENT ON FUNCTION agent.disable_allowlist(regclass) IS
  'Removes the allowlist policies of a table and restores its row-level security settings as they were before agent.enable_allowlist.';

-- Registrations of a dropped table go with it (an OID may be reused later).
CREATE FUNCTION agent._rls_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  dropped oid[];
BEGIN
  SELECT array_agg(objid) INTO dropped FROM pg_event_trigger_dropped_objects()
   WHERE classid = 'pg_class'::regclass AND objsubid = 0 AND object_type IN ('table', 'partitioned table');
  IF dropped IS NULL THEN
    RETURN;
  END IF;
  DELETE FROM agent.allowlist_tables WHERE tbl::oid = ANY (dropped);
  DELETE FROM agent.resource_tables WHERE tbl::oid = ANY (dropped);
  DELETE FROM agent.relations WHERE from_table::oid = ANY (dropped);
END
$$;
COMMENT ON FUNCTION agent._rls_sql_drop() IS
  'Internal: forgets the registrations (resource tables, allowlists, relations) of dropped tables.';
CREATE EVENT TRIGGER pg_agents_rls_sql_drop ON sql_drop EXECUTE FUNCTION agent._rls_sql_drop();
COMMENT ON EVENT TRIGGER pg_agents_rls_sql_drop IS
  'pg_agents: forgets the resource-table, allowlist and relation registrations of dropped tables.';

-- ---------------------------------------------------------------------------
-- Relations
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.register_relation(from_type text, from_table regclass, column_name name, to_type text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id name;
BEGIN
  PERFORM agent._rls_check_type(from_type);
  PERFORM agent._rls_check_type(to_type);
  PERFORM agent._rls_check_table(from_table);
  PERFORM agent._rls_column(from_table, column_name, 'relation');
  SELECT r.id_column INTO v_id FROM agent.resource_tables r WHERE r.tbl = from_table;
  IF v_id IS NULL THEN
    SELECT a.id_column INTO v_id FROM agent.allowlist_tables a WHERE a.tbl = from_table;
  END IF;
  IF v_id IS NULL THEN
    RAISE EXCEPTION 'table "%" is not a registered resource table', from_table
      USING ERRCODE = 'undefined_object',
            HINT = 'Register it with agent.register_resource_table or agent.enable_allowlist first.';
  END IF;
  INSERT INTO agent.relations AS r (from_type, column_name, from_table, id_column, to_type)
  VALUES (register_relation.from_type, register_relation.column_name, register_relation.from_table,
          v_id, register_relation.to_type)
  ON CONFLICT ON CONSTRAINT relations_pkey DO UPDATE
     SET from_table = EXCLUDED.from_table, id_column = EXCLUDED.id_column, to_type = EXCLUDED.to_type;
END
$$;
COMMENT ON FUNCTION agent.register_relation(text, regclass, name, text) IS
  'Declares that a column of a resource table (scalar, array or jsonb) holds ids of resources of another type; agent.follow_relation follows it.';

-- Records one cut target as a denied step of the session's run (no title, no
-- body, no id of the target: its type and the reason), and audits it.  It is
-- called by agent.follow_relation as the invoker, so it is executable by the
-- roles that follow relations (agents_tool, agents_app) and by nobody else;
-- it writes only into a running run of the session's own agent, a known
-- reason code, and a bounded, redacted detail (history cannot be forged).
CREATE FUNCTION agent._allowlist_denied(p_to_type text, p_reason text, p_target_id text, p_detail jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_agent  bigint := agent.current_agent_id();
  v_run    bigint;
  v_ws     text;
  v_seq    integer;
  v_reason text := CASE WHEN p_reason IN ('not_granted', 'grant_read_only', 'owner_denied', 'agent_suspended',
                                         'agent_deleted', 'agent_not_found')
                        THEN p_reason ELSE 'not_granted' END;
  v_det    jsonb := agent.redact(coalesce(p_detail, '{}'::jsonb));
  v_type   text := pg_catalog.left(coalesce(p_to_type, ''), 200);
  v_target text := pg_catalog.left(p_target_id, 200);
BEGIN
  IF v_agent IS NULL THEN
    RETURN;
  END IF;
  IF pg_catalog.octet_length(v_det::text) > 4096 THEN
    v_det := pg_catalog.jsonb_build_object('truncated', true);
  END IF;
  BEGIN
    v_run := nullif(pg_catalog.current_setting('pg_agents.run_id', true), '')::bigint;
  EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
    v_run := NULL;
  END;
  -- the session's workspace (one bound to none: the agent's own)
  v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  END IF;
  IF v_run IS NOT NULL THEN
    PERFORM 1 FROM agent.runs r
     WHERE r.workspace_id = v_ws AND r.id = v_run AND r.agent_id = v_agent AND r.status = 'running' FOR UPDATE;
    IF FOUND THEN
      SELECT coalesce(max(s.seq), 0) + 1 INTO v_seq FROM agent.run_steps s WHERE s.workspace_id = v_ws AND s.run_id = v_run;
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, finished_at)
      VALUES (v_ws, v_run, v_seq, 'denied', 'follow_relation', v_det,
              pg_catalog.jsonb_build_object('resource_type', v_type, 'reason', v_reason), 'denied',
              pg_catalog.clock_timestamp());
    END IF;
  END IF;
  SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = v_agent;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM agent._audit_event('agent.follow_relation', 'denied', v_type, v_target, v_ws, NULL,
                             v_det, pg_catalog.format('relation to a %s cut: %s', v_type, v_reason), v_reason);
END
$$;
COMMENT ON FUNCTION agent._allowlist_denied(text, text, text, jsonb) IS
  'Internal to agent.follow_relation: records a cut relation target as a denied step of the current run (only a running run of the session''s own agent; type and a known reason code only; redacted, bounded detail) and as a denied audit row in the agent''s workspace. Executable by agents_tool and agents_app only.';

CREATE FUNCTION agent.follow_relation(from_type text, from_id text, column_name name)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  rel     agent.relations%ROWTYPE;
  v_agent bigint := agent.current_agent_id();
  v_kind  text;
  v_ityp  text;
  v_sql   text;
  v_id    text;
  v_why   text;
  v_det   jsonb;
BEGIN
  SELECT * INTO rel FROM agent.relations r
   WHERE r.from_type = follow_relation.from_type AND r.column_name = follow_relation.column_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'relation "%" of resource type "%" does not exist', column_name, from_type
      USING ERRCODE = 'undefined_object', HINT = 'Declare it with agent.register_relation.';
  END IF;
  v_det := jsonb_build_object('from_type', rel.from_type, 'from_id', from_id,
                              'relation', rel.column_name, 'to_type', rel.to_type);
  -- An agent follows nothing out of a row it may not read.
  IF v_agent IS NOT NULL THEN
    SELECT e.reason INTO v_why
      FROM agent.explain_access(v_agent, rel.from_type, coalesce(from_id, ''), 'read', 'autonomous') e
     WHERE NOT e.allowed;
    IF FOUND THEN
      PERFORM agent._allowlist_denied(rel.from_type, v_why, from_id, v_det);
      RETURN;
    END IF;
  END IF;
  SELECT CASE WHEN t.typcategory = 'A' THEN 'array' WHEN a.atttypid = 'jsonb'::regtype THEN 'jsonb' ELSE 'scalar' END
    INTO v_kind
    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
   WHERE a.attrelid = rel.from_table AND a.attname = rel.column_name AND NOT a.attisdropped;
  SELECT format_type(a.atttypid, a.atttypmod) INTO v_ityp
    FROM pg_attribute a WHERE a.attrelid = rel.from_table AND a.attname = rel.id_column AND NOT a.attisdropped;
  IF v_kind IS NULL OR v_ityp IS NULL THEN
    RAISE EXCEPTION 'relation "%" of resource type "%" refers to a missing column', column_name, from_type
      USING ERRCODE = 'undefined_column';
  END IF;
  v_sql := CASE v_kind
    WHEN 'array' THEN format('SELECT u::text FROM %s t, unnest(t.%I) u WHERE t.%I = $1::%s AND u IS NOT NULL',
                             rel.from_table, rel.column_name, rel.id_column, v_ityp)
    WHEN 'jsonb' THEN format($q$SELECT CASE jsonb_typeof(e) WHEN 'string' THEN e #>> '{}' ELSE e::text END
                                FROM %s t, jsonb_array_elements(CASE jsonb_typeof(t.%I) WHEN 'array' THEN t.%I
                                                                ELSE jsonb_build_array(t.%I) END) e
                               WHERE t.%I = $1::%s AND jsonb_typeof(e) <> 'null'$q$,
                             rel.from_table, rel.column_name, rel.column_name, rel.column_name,
                             rel.id_column, v_ityp)
    ELSE format('SELECT t.%I::text FROM %s t WHERE t.%I = $1::%s AND t.%I IS NOT NULL',
                rel.column_name, rel.from_table, rel.id_column, v_ityp, rel.column_name)
  END;
  FOR v_id IN EXECUTE v_sql USING from_id LOOP
    IF v_agent IS NULL THEN
      RETURN NEXT v_id;
      CONTINUE;
    END IF;
    SELECT e.reason INTO v_why
      FROM agent.explain_access(v_agent, rel.to_type, v_id, 'read', 'autonomous') e WHERE NOT e.allowed;
    IF FOUND THEN
      PERFORM agent._allowlist_denied(rel.to_type, v_why, v_id, v_det);
    ELSE
      RETURN NEXT v_id;
    END IF;
  END LOOP;
END
$$;
COMMENT ON FUNCTION agent.follow_relation(text, text, name) IS
  'Ids a relation of a resource leads to (SECURITY INVOKER: the caller reads the table with its own privileges and policies). In a session acting as an agent, only targets the agent may read are returned; each cut target is recorded as a denied step of the current run (pg_agents.run_id: its type and reason, never its title or body) and audited; nothing is followed out of a source the agent may not read. Other sessions get every target.';
