-- Issue 31: the tables the row tools insert into.  agent.register_comment_table
-- checks its arguments (existing, distinct text columns; the caller owns the
-- table; a role with no grants cannot call it) and grants agents_tool INSERT;
-- a table of rows of collections gets INSERT for add_row, and under the
-- allowlist a new row is checked by its collection: an agent session adds
-- rows only to a collection it may edit, in its own workspace's grants.
-- Two workspaces, a role with no grants, the application role.
BEGIN;
SELECT plan(21);

CREATE SCHEMA rows_t;
CREATE TABLE rows_t.comments (id bigserial PRIMARY KEY, target_type text NOT NULL, target_id text NOT NULL,
                              body text NOT NULL, author varchar(100) NOT NULL, n integer);
CREATE TABLE rows_t.other_comments (id bigserial PRIMARY KEY, tt text, ti text, b text, a text);
CREATE TABLE rows_t.tickets (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, collection_id text NOT NULL,
                             workspace_id text NOT NULL DEFAULT current_setting('pg_agents.workspace'),
                             title text NOT NULL DEFAULT '', body text NOT NULL DEFAULT '', status text);
CREATE TABLE rows_t.pages (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL);
CREATE ROLE rows_t_nobody NOLOGIN;
CREATE ROLE rows_t_app NOLOGIN IN ROLE agents_app;
CREATE ROLE rows_t_owner NOLOGIN;
CREATE TABLE rows_t.foreign_comments (id serial, tt text, ti text, b text, a text);
ALTER TABLE rows_t.foreign_comments OWNER TO rows_t_owner;
GRANT USAGE ON SCHEMA rows_t TO rows_t_nobody, rows_t_app;

-- register_comment_table: checked arguments
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.comments', 'nope', 'target_id', 'body', 'author')$$,
                 '42703', 'column "nope" of relation "rows_t.comments" does not exist', 'the target type column must exist');
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.comments', 'target_type', 'target_id', 'body', 'nope')$$,
                 '42703', NULL, 'the author column must exist');
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.comments', 'target_type', 'target_id', 'n', 'author')$$,
                 '42804', 'column "n" of relation "rows_t.comments" is not of type text', 'the body column is text');
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.comments', 'target_type', 'id', 'body', 'author')$$,
                 '42804', NULL, 'the target id column is text (not bigint)');
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.comments', 'target_type', 'target_type', 'body', 'author')$$,
                 '22023', NULL, 'four distinct columns');
SELECT throws_ok($$SELECT agent.register_comment_table(NULL, 'target_type', 'target_id', 'body', 'author')$$,
                 '22023', NULL, 'a table is needed');
SELECT throws_ok($$SELECT agent.register_comment_table('agent.agents_view_that_does_not_exist', 'a', 'b', 'c', 'd')$$,
                 '42P01', NULL, 'an unknown table');

-- callers: a role with no grants, the application role, a superuser on
-- another role's table (allowed: a superuser is every role)
SET LOCAL ROLE rows_t_nobody;
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.comments', 'target_type', 'target_id', 'body', 'author')$$,
                 '42501', NULL, 'a role with no grants cannot register a comment table');
RESET ROLE;
SET LOCAL ROLE rows_t_app;
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.comments', 'target_type', 'target_id', 'body', 'author')$$,
                 '42501', NULL, 'nor can the application role');
RESET ROLE;
-- granted the function, a non-owner still may not register another role's table
GRANT EXECUTE ON FUNCTION agent.register_comment_table(regclass, name, name, name, name, name) TO rows_t_nobody;
GRANT SELECT, INSERT, UPDATE, DELETE ON agent.comment_tables TO rows_t_nobody;
SET LOCAL ROLE rows_t_nobody;
SELECT throws_ok($$SELECT agent.register_comment_table('rows_t.foreign_comments', 'tt', 'ti', 'b', 'a')$$,
                 '42501', 'must be owner of table rows_t.foreign_comments', 'a non-owner caller is refused');
RESET ROLE;
REVOKE ALL ON agent.comment_tables FROM rows_t_nobody;
REVOKE ALL ON FUNCTION agent.register_comment_table(regclass, name, name, name, name, name) FROM rows_t_nobody;

SELECT lives_ok($$SELECT agent.register_comment_table('rows_t.other_comments', 'tt', 'ti', 'b', 'a')$$,
                'register a comment table');
SELECT lives_ok($$SELECT agent.register_comment_table('rows_t.comments', 'target_type', 'target_id', 'body', 'author')$$,
                'a second registration replaces the first');
SELECT is((SELECT string_agg(tbl::text || ':' || body_column || ':' || author_column, ',') FROM agent.comment_tables),
          'rows_t.comments:body:author', 'at most one comment table');
SELECT ok(has_table_privilege('agents_tool', 'rows_t.comments', 'INSERT')
          AND has_sequence_privilege('agents_tool', 'rows_t.comments_id_seq', 'USAGE')
          AND NOT has_table_privilege('agents_tool', 'rows_t.other_comments', 'INSERT'),
          'agents_tool may insert into the registered comment table (and its id sequence), no longer into the replaced one');

-- rows of collections: INSERT for add_row, only for a table with a parent
SELECT agent.register_resource_table('page', 'rows_t.tickets', 'id', 'title', 'body',
         parent_type => 'collection', parent_column => 'collection_id', writable_columns => ARRAY['status', 'title']::name[]);
SELECT agent.register_resource_table('page', 'rows_t.pages', 'id', 'title', 'body');
SELECT ok(has_table_privilege('agents_tool', 'rows_t.tickets', 'INSERT')
          AND NOT has_table_privilege('agents_tool', 'rows_t.pages', 'INSERT'),
          'agents_tool may insert rows of collections only');

-- the allowlist's insert check decides a new row by its collection
SELECT agent.enable_allowlist('rows_t.tickets', 'page', 'id');
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7700001, 'w-rows-a', 'ua', 'A triager'), (7700002, 'w-rows-b', 'ub', 'B triager');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('w-rows-a', 'collection', 'edit-c', 'user:ua', 'edit'),
  ('w-rows-a', 'collection', 'read-c', 'user:ua', 'edit'),
  ('w-rows-b', 'collection', 'b-c', 'user:ub', 'edit');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (7700001, 'collection', 'edit-c', 'edit'), (7700001, 'collection', 'read-c', 'read'),
  (7700002, 'collection', 'b-c', 'edit');
SET LOCAL pg_agents.workspace = 'w-rows-a';
SET LOCAL pg_agents.actor = 'agent:7700001';
SET LOCAL ROLE agents_tool;
SELECT lives_ok($$INSERT INTO rows_t.tickets (collection_id, title) VALUES ('edit-c', 'ok')$$,
                'an agent session adds a row to a collection it may edit');
SELECT throws_ok($$INSERT INTO rows_t.tickets (collection_id, title) VALUES ('read-c', 'no')$$,
                 '42501', NULL, 'not to a collection it may only read');
SELECT throws_ok($$INSERT INTO rows_t.tickets (collection_id, title) VALUES ('b-c', 'no')$$,
                 '42501', NULL, 'nor to the second workspace''s collection');
SELECT throws_ok($$INSERT INTO rows_t.tickets (collection_id, title) VALUES ('nowhere', 'no')$$,
                 '42501', NULL, 'nor to a collection it holds no grant on');
SELECT is((SELECT string_agg(collection_id || ':' || workspace_id || ':' || title, ',') FROM rows_t.tickets),
          'edit-c:w-rows-a:ok', 'it then reads the row it added (a row of its collection)');
RESET ROLE;
SET LOCAL pg_agents.actor = '';
SELECT is((SELECT count(*) FROM rows_t.tickets), 1::bigint, 'only the allowed row was added');

SELECT * FROM finish();
ROLLBACK;
