-- rows (issue 31): the remaining row tools.  add_row inserts rows of
-- collections (agents_tool gets INSERT on them, and the allowlist's insert
-- check decides a new row by its collection); add_comment inserts into the
-- comment table agent.register_comment_table registers.

\ir ../../tables/agent.comment_tables.sql
SELECT pg_catalog.pg_extension_config_dump('agent.comment_tables', '');

\ir ../../functions/agent._grant_owned_sequences.sql

\ir ../../functions/agent._allowlist_new_row.sql

\ir ../../functions/agent._allowlist_insert_policy.sql

\ir ../../functions/agent.register_resource_table.sql
COMMENT ON FUNCTION agent.register_resource_table(text, regclass, name, name, name, name, text, name, text, name[], name) IS
  'Registers (or re-registers) an application table holding resources of a type, with its id, title and body columns and, where pgvector is installed, an optional embedding column (vector) for semantic search, for the built-in tools and relations; optionally the collection its rows belong to (parent_type with parent_column, or a constant parent_id: a row without its own grant or ACL row is decided by its collection''s) and the columns the row tools may set (writable_columns); for a table holding the resources of several workspaces, the column of each row''s workspace (workspace_column: an agent then never reaches a row of another workspace, and add_row sets it to the run''s workspace); grants agents_tool USAGE on its schema and SELECT, UPDATE on it, and for rows of collections INSERT (the add_row tool) and USAGE on the sequences its columns own. Row access is then decided by agent.enable_allowlist and the tools'' gates.';

\ir ../../functions/agent.unregister_resource_table.sql
COMMENT ON FUNCTION agent.unregister_resource_table(regclass) IS
  'Removes the registration of a resource table and revokes agents_tool''s SELECT, INSERT, UPDATE on it, and removes the triggers that report its row changes to the readable sets (its allowlist policies, if any, stay until agent.disable_allowlist).';

\ir ../../functions/agent.register_comment_table.sql

\ir ../../functions/agent._revoke_comment_table.sql

\ir ../../functions/agent.enable_allowlist.sql

\ir ../../functions/agent.distribution_plan.sql

-- tables already under the allowlist: their insert check, rewritten
SELECT agent._allowlist_insert_policy(a.tbl) FROM agent.allowlist_tables a ORDER BY a.tbl::oid;
