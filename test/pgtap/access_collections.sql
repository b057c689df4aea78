-- Issue 31: rows of collections as resources.  A table registered with a
-- parent (agent.register_resource_table's parent_type / parent_column, or a
-- constant parent_id) has rows decided by agent.can_access as: the row's own
-- grant, else the agent's grant on the row's collection; the owner's ACL of
-- the row when it has ACL rows of its own, else the collection's.  Two
-- workspaces, a role with no grants, the application role.
BEGIN;
SELECT plan(53);

CREATE SCHEMA coll_t;
CREATE TABLE coll_t.tickets (id bigint PRIMARY KEY, collection_id text NOT NULL,
                             workspace_id text NOT NULL, title text NOT NULL, body text NOT NULL,
                             status text, priority text, assignee text);
CREATE TABLE coll_t.bugs (key text PRIMARY KEY, title text NOT NULL, body text NOT NULL);
CREATE ROLE coll_t_nobody NOLOGIN;

-- registration: checked arguments
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_type => 'collection')$$, '22023', NULL, 'a parent_type needs a parent column or id');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id', parent_id => 'x')$$,
                 '22023', NULL, 'not both a parent column and a parent id');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_column => 'collection_id')$$, '22023', NULL, 'a parent column needs a parent_type');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'nope')$$, '42703', NULL, 'the parent column must exist');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id', writable_columns => ARRAY['nope']::name[])$$,
                 '42703', NULL, 'a writable column must exist');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id', writable_columns => ARRAY['collection_id']::name[])$$,
                 '22023', NULL, 'the parent column is never writable');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_type => 'page', parent_column => 'collection_id')$$, '22023', NULL, 'a type is not its own parent');
SELECT lives_ok($$SELECT agent.register_resource_table('page', 'coll_t.tickets', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id',
                   writable_columns => ARRAY['status', 'assignee'])$$, 'register a table of collection rows');
SELECT lives_ok($$SELECT agent.register_resource_table('page', 'coll_t.bugs', 'key', 'title', 'body',
                   parent_type => 'collection', parent_id => 'bugs')$$, 'register a table that is one collection');
SELECT is((SELECT row(parent_type, parent_column, parent_id, writable_columns)::text FROM agent.resource_tables
            WHERE tbl = 'coll_t.tickets'::regclass), '(collection,collection_id,,"{status,assignee}")',
          'the registration keeps parent and writable columns');

INSERT INTO coll_t.tickets VALUES
  (1, 'tickets', 'ws-c1', 'Printer', 'on fire', NULL, 'high', NULL),
  (2, 'tickets', 'ws-c1', 'Own ACL', 'read only for the owner', NULL, 'low', NULL),
  (3, 'other',   'ws-c1', 'Other collection', 'not granted', NULL, 'high', NULL),
  (4, 'tickets', 'ws-c1', 'Own grant', 'a read grant on the row', NULL, 'low', NULL),
  (5, 'c-ro',    'ws-c1', 'Read collection', 'read grant on the collection', NULL, 'low', NULL),
  (6, 'c-noacl', 'ws-c1', 'No ACL', 'the collection has no ACL for the owner', NULL, 'low', NULL),
  (7, 'c-noacl', 'ws-c1', 'Row ACL', 'the row has its own ACL', NULL, 'low', NULL),
  (8, 'other',   'ws-c1', 'Row grant', 'granted on the row only', NULL, 'low', NULL),
  (9, 'tickets-ws2', 'ws-c2', 'Second workspace', 'an identical collection of ws-c2', NULL, 'high', NULL);
INSERT INTO coll_t.bugs VALUES ('B-1', 'A bug', 'in the one-collection table');

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7600001, 'ws-c1', 'co1', 'triage'),
  (7600002, 'ws-c2', 'co2', 'other workspace, no grant'),
  (7600003, 'ws-c2', 'co1', 'other workspace, granted');
INSERT INTO agent.agents (id, workspace_id, owner_id, name, status) VALUES
  (7600004, 'ws-c1', 'co1', 'suspended', 'suspended');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (7600001, 'collection', 'tickets', 'edit'),
  (7600001, 'page', '4', 'read'),
  (7600001, 'collection', 'c-ro', 'edit'),
  (7600001, 'collection', 'c-noacl', 'edit'),
  (7600001, 'page', '8', 'edit'),
  (7600001, 'collection', 'bugs', 'edit'),
  (7600003, 'collection', 'tickets', 'edit'),
  (7600004, 'collection', 'tickets', 'edit');
UPDATE agent.access SET access = 'read' WHERE agent_id = 7600001 AND resource_id = 'c-ro';
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-c1', 'collection', 'tickets', 'user:co1', 'edit'),
  ('ws-c1', 'collection', 'tickets', 'user:cu1', 'read'),
  ('ws-c1', 'page', '2', 'user:co1', 'read'),
  ('ws-c1', 'collection', 'c-ro', 'user:co1', 'edit'),
  ('ws-c1', 'page', '7', 'user:co1', 'edit'),
  ('ws-c1', 'page', '8', 'user:co1', 'edit'),
  ('ws-c1', 'collection', 'other', 'user:co1', 'edit'),
  ('ws-c1', 'collection', 'bugs', 'user:co1', 'edit'),
  ('ws-c2', 'collection', 'tickets-ws2', 'user:co2', 'edit');

CREATE TEMP TABLE m (n int, agent_id bigint, rtype text, rid text, mode text, expected text, what text);
INSERT INTO m VALUES
  (1, 7600001, 'page', '1', 'read', 'granted', 'collection grant covers its row (read)'),
  (2, 7600001, 'page', '1', 'edit', 'granted', 'collection edit grant covers its row (edit)'),
  (3, 7600001, 'page', '2', 'read', 'granted', 'row ACL override: the owner may read the row'),
  (4, 7600001, 'page', '2', 'edit', 'owner_denied', 'row ACL override: the row''s read ACL wins over the collection''s edit'),
  (5, 7600001, 'page', '3', 'read', 'not_granted', 'a row of a collection not granted'),
  (6, 7600001, 'page', '4', 'read', 'granted', 'row grant (read)'),
  (7, 7600001, 'page', '4', 'edit', 'grant_read_only', 'the row''s own read grant wins over the collection''s edit'),
  (8, 7600001, 'page', '5', 'read', 'granted', 'read grant on the collection: read'),
  (9, 7600001, 'page', '5', 'edit', 'grant_read_only', 'read grant on the collection: no edit'),
  (10, 7600001, 'page', '6', 'read', 'owner_denied', 'collection ACL: the owner may not read the collection'),
  (11, 7600001, 'page', '7', 'edit', 'granted', 'the row''s own ACL applies when the collection''s does not'),
  (12, 7600001, 'page', '8', 'edit', 'granted', 'row grant in a collection not granted'),
  (13, 7600001, 'page', '9', 'read', 'not_granted', 'a row of the identical collection of another workspace'),
  (14, 7600002, 'page', '1', 'read', 'not_granted', 'an agent of another workspace without grants'),
  (15, 7600003, 'page', '1', 'read', 'owner_denied', 'an agent of another workspace: the ACL rows of ws-c1 do not apply'),
  (16, 7600004, 'page', '1', 'read', 'agent_suspended', 'a suspended agent'),
  (17, 7600001, 'page', 'B-1', 'edit', 'granted', 'a table that is one collection'),
  (18, 7600001, 'page', 'abc', 'read', 'not_granted', 'an id that is not a ticket id: no error'),
  (19, 7600001, 'page', '99', 'read', 'not_granted', 'an unknown row'),
  (20, 7600001, 'collection', 'tickets', 'edit', 'granted', 'the collection itself');
GRANT SELECT ON m TO PUBLIC;

SELECT is((SELECT reason FROM agent.explain_access(agent_id, rtype, rid, mode)), expected,
          format('%s: %s %s %s -> %s', what, rtype, rid, mode, expected))
  FROM m ORDER BY n;

SELECT is((SELECT count(*)::int FROM m
            WHERE agent.can_access(agent_id, rtype, rid, mode) IS DISTINCT FROM (expected = 'granted')),
          0, 'can_access agrees with explain_access on every cell');

SELECT matches((SELECT detail FROM agent.explain_access(7600001, 'page', '1', 'edit')),
               'the grant came from the collection', 'the detail says the grant came from the collection');
SELECT matches((SELECT detail FROM agent.explain_access(7600001, 'page', '2', 'edit')),
               'the row''s own ACL rows apply', 'the detail says the row''s own ACL applied');

-- manual regime: the calling user's ACL on the row, else on its collection
SELECT is((SELECT reason FROM agent.explain_access(7600001, 'page', '1', 'read', 'manual', 'cu1')), 'granted',
          'manual: the user''s read ACL on the collection covers its row');
SELECT is((SELECT reason FROM agent.explain_access(7600001, 'page', '1', 'edit', 'manual', 'cu1')), 'user_denied',
          'manual: read on the collection is not edit');
SELECT is((SELECT reason FROM agent.explain_access(7600001, 'page', '3', 'read', 'manual', 'cu1')), 'user_denied',
          'manual: a row of a collection the user may not read');

-- a role with no grants names no agent, even bound to the agents' workspace
-- (docs/tenants.md); the application bound to a workspace gets the same
-- decisions for its agents, and those of the other are missing ids
SET LOCAL ROLE coll_t_nobody;
SELECT set_config('pg_agents.workspace', 'ws-c1', true);
SELECT is((SELECT count(*)::int FROM m
            WHERE (SELECT reason FROM agent.explain_access(agent_id, rtype, rid, mode)) <> 'agent_not_found'
               OR agent.can_access(agent_id, rtype, rid, mode)),
          0, 'a role with no grants: every cell is agent_not_found');
SELECT set_config('pg_agents.workspace', '', true);
RESET ROLE;
SET LOCAL ROLE agents_app;
SELECT set_config('pg_agents.workspace', 'ws-c1', true);
SELECT is((SELECT count(*)::int FROM m JOIN agent.agents a ON a.id = m.agent_id AND a.workspace_id = 'ws-c1'
            WHERE agent.can_access(m.agent_id, rtype, rid, mode) IS DISTINCT FROM (expected = 'granted')),
          0, 'agents_app bound to ws-c1 gets the same decisions for the agents of ws-c1');
SELECT is((SELECT array_agg(DISTINCT reason) FROM m, agent.explain_access(m.agent_id, rtype, rid, mode)
            WHERE m.agent_id IN (7600002, 7600003)),
          ARRAY['agent_not_found'], 'agents_app bound to ws-c1: the agents of ws-c2 are missing ids');
SELECT set_config('pg_agents.workspace', 'ws-c2', true);
SELECT is((SELECT count(*)::int FROM m
            WHERE m.agent_id IN (7600002, 7600003)
              AND agent.can_access(m.agent_id, rtype, rid, mode) IS DISTINCT FROM (expected = 'granted')),
          0, 'agents_app bound to ws-c2 gets the same decisions for the agents of ws-c2');
SELECT set_config('pg_agents.workspace', '', true);
RESET ROLE;

-- the readable set (the allowlist policies): rows of granted collections
-- without a per-row subquery, minus rows whose own ACL denies
SELECT lives_ok($$SELECT agent.enable_allowlist('coll_t.tickets', 'page', 'id')$$, 'enable_allowlist on the rows table');
GRANT USAGE ON SCHEMA coll_t TO agents_app, agents_tool;
GRANT SELECT ON coll_t.tickets TO agents_app;
SET LOCAL ROLE agents_app;
SELECT set_config('pg_agents.workspace', 'ws-c1', true);
SELECT set_config('pg_agents.actor', 'agent:7600001', true);
SELECT is((SELECT array_agg(id ORDER BY id) FROM coll_t.tickets), ARRAY[1, 2, 4, 5, 7, 8]::bigint[],
          'an agent reads the rows of its collections, its own granted rows, not the rows its owner may not read');
SELECT is((SELECT array_agg(id ORDER BY id) FROM coll_t.tickets WHERE priority = 'high'), ARRAY[1]::bigint[],
          'filtered before the query''s own filter: no row of a collection not granted, no row of the other workspace');
SELECT set_config('pg_agents.workspace', 'ws-c2', true);
SELECT set_config('pg_agents.actor', 'agent:7600003', true);
SELECT is((SELECT count(*)::int FROM coll_t.tickets), 0, 'an agent of another workspace sees none of them');
SELECT set_config('pg_agents.workspace', 'ws-c1', true);
SELECT set_config('pg_agents.actor', 'agent:7600004', true);
SELECT is((SELECT count(*)::int FROM coll_t.tickets), 0, 'a suspended agent sees none of them');
SELECT set_config('pg_agents.actor', '', true);
SELECT set_config('pg_agents.workspace', '', true);
RESET ROLE;
INSERT INTO coll_t.tickets VALUES (10, 'tickets', 'ws-c1', 'New', 'added later', NULL, 'high', NULL);
SET LOCAL ROLE agents_app;
SELECT set_config('pg_agents.workspace', 'ws-c1', true);
SELECT set_config('pg_agents.actor', 'agent:7600001', true);
SELECT is((SELECT array_agg(id ORDER BY id) FROM coll_t.tickets WHERE priority = 'high'), ARRAY[1, 10]::bigint[],
          'a row added to a granted collection is readable at the next statement');
SELECT is((SELECT array_agg(id ORDER BY id) FROM coll_t.tickets WHERE priority = 'high'), ARRAY[1, 10]::bigint[],
          'and again (the set is not kept across the application''s changes)');
SELECT set_config('pg_agents.actor', '', true);
SELECT set_config('pg_agents.workspace', '', true);
RESET ROLE;
UPDATE coll_t.tickets SET collection_id = 'other' WHERE id = 10;
SET LOCAL ROLE agents_app;
SELECT set_config('pg_agents.workspace', 'ws-c1', true);
SELECT set_config('pg_agents.actor', 'agent:7600001', true);
SELECT is((SELECT count(*)::int FROM coll_t.tickets WHERE id = 10), 0,
          'a row moved out of a granted collection is no longer readable at the next statement');
SELECT set_config('pg_agents.actor', '', true);
SELECT set_config('pg_agents.workspace', '', true);
RESET ROLE;
SELECT agent.disable_allowlist('coll_t.tickets');

-- row events of a watched table registered with a parent are on the row's
-- collection: a trigger watches one collection, with a property filter
SELECT agent.watch_table('coll_t.tickets', 'collection', 'id', workspace_column => 'workspace_id');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, resource_id, filter, prompt) VALUES
  (7600001, 7600001, 'event', 'collection.row_added', 'collection', 'tickets',
   '{"all": [{"property": "priority", "op": "eq", "value": "high"}]}', 'Triage the new ticket');
INSERT INTO coll_t.tickets VALUES
  (20, 'tickets', 'ws-c1', 'Urgent', 'the high one', NULL, 'high', NULL),
  (21, 'tickets', 'ws-c1', 'Later', 'a low one', NULL, 'low', NULL),
  (22, 'other', 'ws-c1', 'Elsewhere', 'high, another collection', NULL, 'high', NULL),
  (23, 'tickets-ws2', 'ws-c2', 'Second workspace', 'high, the other workspace', NULL, 'high', NULL);
SELECT results_eq($$SELECT input ->> 'resource_type', input ->> 'resource_id', input -> 'payload' ->> 'row_id',
                           input -> 'payload' -> 'row' ->> 'title'
                      FROM agent.runs WHERE trigger_id = 7600001$$,
                  $$VALUES ('collection', 'tickets', '20', 'Urgent')$$,
                  'one run, for the high-priority row of the watched collection, its row not withheld (granted through the collection)');
SELECT agent.unwatch_table('coll_t.tickets');
DELETE FROM agent.triggers WHERE id = 7600001;

-- moved to another collection, revoked at run time: decided afresh
UPDATE coll_t.tickets SET collection_id = 'other' WHERE id = 1;
SELECT is((SELECT reason FROM agent.explain_access(7600001, 'page', '1', 'read')), 'not_granted',
          'a row moved to a collection not granted is no longer readable');
UPDATE coll_t.tickets SET collection_id = 'tickets' WHERE id = 1;
DELETE FROM agent.access WHERE agent_id = 7600001 AND resource_type = 'collection' AND resource_id = 'tickets';
SELECT is((SELECT reason FROM agent.explain_access(7600001, 'page', '1', 'read')), 'not_granted',
          'the collection grant revoked: its rows are no longer readable');
SELECT is(agent.can_access(7600001, 'page', '4', 'read'), true, 'the row''s own grant stays');

-- unregistered: a row is its own resource again
SELECT agent.unregister_resource_table('coll_t.tickets');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7600001, 'collection', 'tickets', 'edit');
SELECT is((SELECT reason FROM agent.explain_access(7600001, 'page', '1', 'read')), 'not_granted',
          'without the registration a collection grant does not cover the rows');

SELECT * FROM finish();
ROLLBACK;
