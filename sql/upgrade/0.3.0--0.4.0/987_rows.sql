-- rows (issue 31): the remaining row tools.  add_row inserts rows of
-- collections (agents_tool gets INSERT on them, and the allowlist's insert
-- check decides a new row by its collection); add_comment inserts into the
-- comment table agent.register_comment_table registers.

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
SELECT pg_catalog.pg_extension_config_dump('agent.comment_tables', '');

CREATE OR REPLACE FUNCTION agent._grant_owned_sequences(p_tbl regclass) RETURNS void
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

CREATE OR REPLACE FUNCTION agent._allowlist_new_row(p_parent_type text, p_parent_id text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p_parent_id IS NOT NULL
         AND coalesce(agent.can_access(agent.current_agent_id(), p_parent_type, p_parent_id, 'edit'), false)
$$;
COMMENT ON FUNCTION agent._allowlist_new_row(text, text) IS
  'Internal to the insert policy of the allowlist on a table of rows of collections: may the session''s agent add a row to this collection (edit on it, in the autonomous regime)?';

CREATE OR REPLACE FUNCTION agent._allowlist_insert_policy(p_tbl regclass) RETURNS void
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
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name, text, name, text, name[], name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; optionally the collection its rows belong to (parent_type with parent_column, or a constant parent_id: a row without its own grant or ACL row is decided by its collection''s) and the columns the row tools may set (writable_columns); for a table holding the resources of several workspaces, the column of each row''s workspace (workspace_column: an agent then never reaches a row of another workspace, and add_row sets it to the run''s workspace); grants agents_tool USAGE on its schema and SELECT, UPDATE on it, and for rows of collections INSERT (the add_row tool) and USAGE on the sequences its columns own. Row access is then decided by agent.enable_allowlist and the tools'' gates.';

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
COMMENT ON FUNCTION agent.unregister_resource_table(regclass) IS
  'Removes the registration of a resource table and revokes agents_tool''s SELECT, INSERT, UPDATE on it, and removes the triggers that report its row changes to the readable sets (its allowlist policies, if any, stay until agent.disable_allowlist).';

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

CREATE OR REPLACE FUNCTION agent._revoke_comment_table(p_tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  EXECUTE format('REVOKE INSERT ON %s FROM agents_tool', p_tbl);
END
$$;
COMMENT ON FUNCTION agent._revoke_comment_table(regclass) IS
  'Internal: revokes agents_tool''s INSERT on a comment table that is no longer registered.';

CREATE OR REPLACE FUNCTION agent.enable_allowlist(tbl regclass, resource_type text, id_column name)
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

CREATE OR REPLACE FUNCTION agent.distribution_plan()
RETURNS TABLE (table_name regclass, kind text, reason text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p.t::pg_catalog.regclass, p.k, p.r
    FROM (VALUES
    -- reference tables first (replicated to every node)
    (1, 'agent.group_members', 'reference', 'Group membership; workspace_id may be NULL (groups not per workspace), and every node''s access checks read it.'),
    (2, 'agent.resource_acl', 'reference', 'The owners'' ACL on application resources; workspace_id may be NULL, and every node''s access checks read it.'),
    (3, 'agent.access_config', 'reference', 'Cluster-wide configuration (one row: the ACL function), read by every node''s access checks.'),
    (4, 'agent.resource_tables', 'reference', 'Cluster-wide configuration: the resource tables the tools read and write.'),
    (5, 'agent.allowlist_tables', 'reference', 'Cluster-wide configuration: the application tables under the allowlist policies.'),
    (6, 'agent.relations', 'reference', 'Cluster-wide configuration: the relations between resource types.'),
    (6.5, 'agent.comment_tables', 'reference', 'Cluster-wide configuration: the comment table the add_comment tool writes.'),
    (7, 'agent.providers', 'reference', 'Cluster-wide configuration: the LLM providers.'),
    (8, 'agent.secrets', 'reference', 'Cluster-wide configuration: the encrypted secrets the providers and MCP servers name.'),
    (9, 'agent.templates', 'reference', 'Cluster-wide configuration: the agent templates.'),
    (10, 'agent.reader_workspaces', 'reference', 'DBA configuration read by the reader policies of every node, looked up by role rather than by workspace.'),
    -- distributed by workspace_id, co-located with agent.agents, in an
    -- order where every referenced table comes before its referencing ones
    (11, 'agent.agents', 'distributed', 'The agents; the table the others are co-located with.'),
    (12, 'agent.access', 'distributed', 'Grants of an agent (foreign key to agents).'),
    (13, 'agent.shares', 'distributed', 'Shares of an agent (foreign key to agents).'),
    (14, 'agent.versions', 'distributed', 'Settings history of an agent (foreign key to agents).'),
    (15, 'agent.triggers', 'distributed', 'Triggers of an agent (foreign key to agents).'),
    (16, 'agent.runs', 'distributed', 'Runs (foreign keys to agents, triggers and the parent run).'),
    (17, 'agent.run_steps', 'distributed', 'Steps of a run (foreign key to runs).'),
    (18, 'agent.approvals', 'distributed', 'Approvals of a run''s tool calls (foreign key to runs).'),
    (19, 'agent.run_state', 'distributed', 'Saved state of a running run (foreign key to runs).'),
    (20, 'agent.run_messages', 'distributed', 'Messages to and from runs (foreign key to runs).'),
    (21, 'agent.run_queue_marks', 'distributed', 'Per-workspace queue marks of agent.claim_runs.'),
    (22, 'agent.run_queue_returns', 'distributed', 'Per-workspace runs queued again below their queue''s mark.'),
    (23, 'agent.event_dedup', 'distributed', 'Event fingerprints per trigger (deduplication window).'),
    (24, 'agent.event_launches', 'distributed', 'Launches per trigger and event (automation overlaps).'),
    (25, 'agent.event_overlaps', 'distributed', 'Overlap counts per trigger (foreign key to triggers).'),
    (26, 'agent.mcp_servers', 'distributed', 'MCP servers of a workspace.'),
    (27, 'agent.mcp_tools', 'distributed', 'Tools of an MCP server (foreign key to mcp_servers).'),
    (28, 'agent.mcp_oauth', 'distributed', 'OAuth state of an MCP server (foreign key to mcp_servers).'),
    (29, 'agent.mcp_elicitations', 'distributed', 'Input an MCP server asked for during a run (foreign key to runs).'),
    (30, 'agent.assistants', 'distributed', 'The hidden assistant agent of a workspace (foreign key to agents).'),
    (31, 'agent.conversations', 'distributed', 'Conversations with an agent (foreign key to agents).'),
    (32, 'agent.messages', 'distributed', 'Messages of a conversation (foreign key to conversations).'),
    (33, 'agent.audit_log', 'distributed', 'The audit log, partitioned by month (Citus distributes the parent and its partitions). Rows of no workspace (system actions) have workspace_id NULL, which a distributed table refuses: known not to work on Citus (docs/scaling.md).'),
    (36, 'agent.run_stream_text', 'distributed', 'The streamed text of a run (foreign key to runs).'),
    -- local: stay on each node
    (34, 'agent.worker_control', 'local', 'The pause switch of the background worker of the node it is on (one row per node).'),
    (35, 'agent._history_holds', 'local', 'Transient: rows live only inside one function call of the transaction that writes them, on the node that runs it.'),
    (37, 'agent.locks', 'local', 'The rows the functions of the node lock to serialise its queue decisions (hourly cap, claims, tick, assistant), as the advisory locks they replace were per node.'),
    (38, 'agent.run_rollup', 'distributed', 'The rollup of agent.run_stats: per workspace, agent, model and UTC day or month, co-located with the runs it sums.'),
    (39, 'agent.run_rollup_state', 'local', 'The watermark of the rollup of agent.run_stats, kept by the node whose ticks fold it.')
    ) AS p(n, t, k, r)
   ORDER BY p.n
$$;
COMMENT ON FUNCTION agent.distribution_plan() IS
  'How each table of the extension is placed on a Citus cluster: distributed (by workspace_id, co-located with agent.agents), reference (replicated) or local (stays on each node), with the reason; in the order the procedure distributes them (docs/scaling.md).';

-- tables already under the allowlist: their insert check, rewritten
SELECT agent._allowlist_insert_policy(a.tbl) FROM agent.allowlist_tables a ORDER BY a.tbl::oid;
