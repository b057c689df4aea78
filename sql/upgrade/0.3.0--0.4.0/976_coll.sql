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
\ir ../../functions/agent._rows_access_trigger.sql

\ir ../../functions/agent.register_resource_table.sql
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name, text, name, text, name[], name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; optionally the collection its rows belong to (parent_type with parent_column, or a constant parent_id: a row without its own grant or ACL row is decided by its collection''s) and the columns the row tools may set (writable_columns); for a table holding the resources of several workspaces, the column of each row''s workspace (workspace_column: an agent then never reaches a row of another workspace, and add_row sets it to the run''s workspace); grants agents_tool USAGE on its schema and SELECT, UPDATE on it. Row access is then decided by agent.enable_allowlist and the tools'' gates.';

\ir ../../functions/agent.unregister_resource_table.sql
COMMENT ON FUNCTION agent.unregister_resource_table(regclass) IS
  'Removes the registration of a resource table and revokes agents_tool''s SELECT, UPDATE on it, and removes the triggers that report its row changes to the readable sets (its allowlist policies, if any, stay until agent.disable_allowlist).';
