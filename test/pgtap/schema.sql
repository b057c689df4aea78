-- The data model: tables, keys and the constraints that refuse bad data.
BEGIN;
SELECT plan(15);

SELECT has_schema('agent');
SELECT has_table('agent', t, 'table agent.' || t) FROM unnest(ARRAY[
  'agents','access','shares','group_members','resource_acl','versions',
  'triggers','runs','run_steps','approvals']) AS t;
SELECT col_not_null('agent', 'runs', 'workspace_id', 'runs.workspace_id is NOT NULL');

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (900001, 'ws-schema', 'u1', 'schema test');
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES (900001, 'page', 'p1');
SELECT is((SELECT workspace_id FROM agent.access WHERE agent_id = 900001), 'ws-schema',
          'a direct INSERT without workspace_id gets the agent''s workspace');
SELECT throws_ok($$INSERT INTO agent.shares (agent_id, user_id, group_id, level)
                  VALUES (900001, 'u2', 'g1', 'full')$$, '23514', NULL,
                 'a share names exactly one of user and group');
SELECT throws_ok($$INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
                  VALUES (900001, 'page', 'p2', 'admin')$$, '23514', NULL,
                 'access is read or edit');

SELECT * FROM finish();
ROLLBACK;
