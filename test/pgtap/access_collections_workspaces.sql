-- Security (issues 30, 31): rows of collections in a table shared by two
-- workspaces whose collections have the same id ('tickets').  Registered
-- with workspace_column, agent.can_access/explain_access refuse a row of
-- another workspace (other_workspace), in both regimes and for a direct
-- grant on the row's id too; the readable set keeps the agent's
-- workspace's rows.  Without workspace_column the decision is by id alone
-- (documented: ids unique across the database).  A superuser, the
-- application role bound to each workspace, and a role with no grants.
BEGIN;
SELECT plan(17);

CREATE SCHEMA collws_t;
CREATE TABLE collws_t.rows (id text PRIMARY KEY, workspace_id text, collection_id text NOT NULL,
                            title text NOT NULL, body text NOT NULL, status text);
CREATE ROLE collws_t_nobody NOLOGIN;
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'collws_t.rows', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id', workspace_column => 'nope')$$,
                 '42703', NULL, 'the workspace column must exist');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'collws_t.rows', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id', workspace_column => 'collection_id')$$,
                 '22023', NULL, 'the workspace column is not the parent column');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'collws_t.rows', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id',
                   writable_columns => ARRAY['workspace_id']::name[], workspace_column => 'workspace_id')$$,
                 '22023', NULL, 'the workspace column is never writable');
SELECT lives_ok($$SELECT agent.register_resource_table('page', 'collws_t.rows', 'id', 'title', 'body',
                   parent_type => 'collection', parent_column => 'collection_id',
                   writable_columns => ARRAY['status']::name[], workspace_column => 'workspace_id')$$,
                'register with a workspace column');

INSERT INTO collws_t.rows VALUES
  ('r1', 'ws-w1', 'tickets', 'Printer', 'of w1', NULL),
  ('r2', 'ws-w2', 'tickets', 'Wombat', 'of w2', NULL),
  ('r3', NULL,    'tickets', 'Orphan', 'of no workspace', NULL);
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7610001, 'ws-w1', 'o1', 'w1 triage'), (7610002, 'ws-w2', 'o2', 'w2 triage');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (7610001, 'collection', 'tickets', 'edit'), (7610001, 'page', 'r2', 'edit'),
  (7610002, 'collection', 'tickets', 'edit');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-w1', 'collection', 'tickets', 'user:o1', 'edit'), ('ws-w1', 'page', 'r2', 'user:o1', 'edit'),
  ('ws-w2', 'collection', 'tickets', 'user:o2', 'edit'), ('ws-w1', 'collection', 'tickets', 'user:u1', 'edit');

SELECT is(ARRAY(SELECT reason FROM unnest(ARRAY['r1', 'r2', 'r3']) r, agent.explain_access(7610001, 'page', r, 'edit')),
          ARRAY['granted', 'other_workspace', 'other_workspace'],
          'superuser: the w1 agent reaches its row, not w2''s (despite a direct grant on its id) nor a row of no workspace');
SELECT is(ARRAY(SELECT reason FROM unnest(ARRAY['r1', 'r2']) r, agent.explain_access(7610002, 'page', r, 'read')),
          ARRAY['other_workspace', 'granted'], 'superuser: the w2 agent, the other way');
SELECT is(agent.can_access(7610001, 'page', 'r2', 'read'), false, 'can_access agrees');
SELECT is((SELECT reason FROM agent.explain_access(7610001, 'page', 'r2', 'read', 'manual', 'u1')), 'other_workspace',
          'manual regime: a person of w1 does not reach w2''s row either');
SELECT is((SELECT reason FROM agent.explain_access(7610001, 'page', 'r1', 'read', 'manual', 'u1')), 'granted',
          'manual regime: the person''s own workspace''s row through the collection');
SELECT is(ARRAY(SELECT agent.readable_resources(7610001, 'page', 'edit') ORDER BY 1), ARRAY['r1'],
          'the readable set holds the agent''s workspace''s rows only');
SELECT alike((SELECT detail FROM agent.explain_access(7610001, 'page', 'r2', 'read')), '%another workspace%',
            'the detail says why');

SET LOCAL ROLE agents_app;
SELECT set_config('pg_agents.workspace', 'ws-w1', true);
SELECT is(ARRAY(SELECT reason FROM unnest(ARRAY['r1', 'r2']) r, agent.explain_access(7610001, 'page', r, 'edit')),
          ARRAY['granted', 'other_workspace'], 'agents_app bound to ws-w1: the same decisions');
SELECT set_config('pg_agents.workspace', '', true);
RESET ROLE;
SET LOCAL ROLE collws_t_nobody;
SELECT set_config('pg_agents.workspace', 'ws-w1', true);
SELECT is(agent.can_access(7610001, 'page', 'r2', 'read'), false, 'a role with no grants: refused too');
SELECT set_config('pg_agents.workspace', '', true);
RESET ROLE;

-- a row moved to another workspace leaves the kept readable set at once
SELECT is(ARRAY(SELECT agent.readable_resources(7610001, 'page', 'read') ORDER BY 1), ARRAY['r1'],
          'the readable set holds r1');
UPDATE collws_t.rows SET workspace_id = 'ws-w2' WHERE id = 'r1';
SELECT is(ARRAY(SELECT agent.readable_resources(7610001, 'page', 'read') ORDER BY 1), '{}'::text[],
          'r1 moved to ws-w2: the w1 agent''s readable set drops it');
UPDATE collws_t.rows SET workspace_id = 'ws-w1' WHERE id = 'r1';

-- without workspace_column: by id alone (the documented requirement: unique ids)
SELECT agent.register_resource_table('page', 'collws_t.rows', 'id', 'title', 'body',
  parent_type => 'collection', parent_column => 'collection_id');
SELECT is((SELECT reason FROM agent.explain_access(7610001, 'page', 'r2', 'read')), 'granted',
          'without workspace_column the row is decided by its ids alone');
-- a table with a workspace column and no parent: rows of other workspaces refused
SELECT agent.register_resource_table('page', 'collws_t.rows', 'id', 'title', 'body', workspace_column => 'workspace_id');
SELECT is(ARRAY(SELECT reason FROM unnest(ARRAY['r1', 'r2']) r, agent.explain_access(7610001, 'page', r, 'read')),
          ARRAY['not_granted', 'other_workspace'], 'a table without a parent: its other workspace''s rows are refused, even granted');
SELECT agent.unregister_resource_table('collws_t.rows');
SELECT * FROM finish();
ROLLBACK;
