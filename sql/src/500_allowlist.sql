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

\ir ../tables/agent.comment_tables.sql

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
\ir ../functions/agent._rows_access_trigger.sql

\ir ../functions/agent.register_resource_table.sql
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name, text, name, text, name[], name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; optionally the collection its rows belong to (parent_type with parent_column, or a constant parent_id: a row without its own grant or ACL row is decided by its collection''s) and the columns the row tools may set (writable_columns); for a table holding the resources of several workspaces, the column of each row''s workspace (workspace_column: an agent then never reaches a row of another workspace, and add_row sets it to the run''s workspace); grants agents_tool USAGE on its schema and SELECT, UPDATE on it, and for rows of collections INSERT (the add_row tool) and USAGE on the sequences its columns own. Row access is then decided by agent.enable_allowlist and the tools'' gates.';

\ir ../functions/agent._grant_owned_sequences.sql

-- A new row of a collection has no grant nor ACL row of its own yet, and is
-- not in the readable set the allowlist policies compute (it is not in the
-- table yet): the insert check of a table of rows of collections decides it
-- by its collection (edit), as agent.can_access decides a row without its
-- own grant.  One call per inserted row, only in a session acting as an agent.
\ir ../functions/agent._allowlist_new_row.sql

\ir ../functions/agent._allowlist_insert_policy.sql

\ir ../functions/agent.unregister_resource_table.sql
COMMENT ON FUNCTION agent.unregister_resource_table(regclass) IS
  'Removes the registration of a resource table and revokes agents_tool''s SELECT, INSERT, UPDATE on it, and removes the triggers that report its row changes to the readable sets (its allowlist policies, if any, stay until agent.disable_allowlist).';

\ir ../functions/agent.register_comment_table.sql

\ir ../functions/agent._revoke_comment_table.sql

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
\ir ../functions/agent._allowlist_custom_acl.sql

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
\ir ../functions/agent._allowlist_support.sql

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
\ir ../functions/agent._allowlist_has.sql
\ir ../functions/agent._allowlist_has_2.sql
\ir ../functions/agent._allowlist_has_3.sql
\ir ../functions/agent._allowlist_has_4.sql
\ir ../functions/agent._allowlist_has_5.sql

-- ---------------------------------------------------------------------------
-- A leakproof full-text match (docs/allowlist.md, "Searching under the
-- allowlist")
-- ---------------------------------------------------------------------------

\ir ../functions/agent._ts_match_support.sql

\ir ../functions/agent.ts_match.sql

\ir ../functions/agent._like_support.sql

\ir ../functions/agent.like.sql

\ir ../functions/agent.ilike.sql

\ir ../functions/agent._search_arg.sql

\ir ../functions/agent._search_arg_2.sql

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

\ir ../functions/agent.readable_resources.sql

-- ---------------------------------------------------------------------------
-- Policies
-- ---------------------------------------------------------------------------

-- The "id is in the readable set" expression for a column, in the column's own
-- type when that keeps an index on it usable, as text otherwise.  Ids that
-- cannot be the text form of a value of the column's type are dropped, so a
-- stray grant never makes a query fail.
\ir ../functions/agent._allowlist_expr.sql

\ir ../functions/agent.enable_allowlist.sql

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
\ir ../functions/agent._allowlist_denied.sql

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
