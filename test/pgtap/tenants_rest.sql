-- Tenants: the remaining API paths (levels, visible agents, lifecycle, runs,
-- approvals, readable resources) work inside the session's workspace.  The
-- same user owns an agent in each of two workspaces; a request of ws-tr-a
-- names ws-tr-b's objects, which must look exactly like missing ones.
BEGIN;
SELECT plan(22);

SET LOCAL client_min_messages = warning;
CREATE ROLE ten_rest_app NOLOGIN IN ROLE agents_app;
CREATE ROLE ten_rest_exec NOLOGIN IN ROLE agents_executor;
CREATE ROLE ten_rest_nobody NOLOGIN;
RESET client_min_messages;

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (987001, 'ws-tr-a', 'u-both', 'agent of a'),
  (987002, 'ws-tr-b', 'u-both', 'agent of b');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (987002, 'page', 'pb', 'read');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  VALUES ('ws-tr-b', 'page', 'pb', 'user:u-both', 'read');
SELECT agent.start_run(987002, 'u-both', '{"prompt": "b"}', 'manual', 'chat') AS run_b \gset
UPDATE agent.runs SET status = 'running', started_at = now() WHERE id = :run_b;
SELECT agent.request_approval(:run_b, 'send_mail', '{"to": "x"}') AS key_b \gset
SELECT agent.start_run(987002, 'u-both', '{"prompt": "b2"}', 'manual', 'chat') AS run_b2 \gset

SET LOCAL ROLE ten_rest_app;
SELECT set_config('pg_agents.workspace', 'ws-tr-a', true);
SELECT ok(agent.user_can('u-both', 987001, 'edit_settings'), 'the owner may edit its agent of the session''s workspace');
SELECT ok(NOT agent.user_can('u-both', 987002, 'view_settings'), 'but holds no level on its agent of another workspace');
SELECT is(agent.activity_scope('u-both', 987002), NULL, 'and sees none of its activity');
SELECT is((SELECT array_agg(agent_id) FROM agent.visible_agents('u-both')), ARRAY[987001::bigint],
          'visible_agents lists the session''s workspace only');
SELECT throws_ok($$SELECT agent.share(987002, 'user:mallory', 'full', 'u-both')$$, '42704', 'agent 987002 does not exist',
                 'share: an agent of another workspace does not exist');
SELECT throws_ok($$SELECT agent.grant(987002, 'page', 'px', 'read', 'u-both')$$, '42704', 'agent 987002 does not exist',
                 'grant: the same');
SELECT throws_ok($$SELECT agent.save_settings(987002, '{"instructions": "x"}', 'u-both', 'n')$$, '42704',
                 'agent 987002 does not exist', 'save_settings: the same');
SELECT throws_ok($$SELECT agent.set_status(987002, 'suspended', 'u-both')$$, '42704', 'agent 987002 does not exist',
                 'set_status: the same');
SELECT throws_ok($$SELECT agent.delete_agent(987002, 'u-both')$$, '42704', 'agent 987002 does not exist',
                 'delete_agent: the same');
SELECT throws_ok($$SELECT agent.start_run(987002, 'u-both', '{}')$$, '42704', 'agent 987002 does not exist',
                 'start_run: the same');
SELECT throws_ok(format('SELECT agent.rerun(%s, %L)', :run_b, 'u-both'), '42704', format('run %s does not exist', :run_b),
                 'rerun: a run of another workspace does not exist');
SELECT throws_ok(format('SELECT agent.cancel_run(%s, %L)', :run_b2, 'u-both'), '42704', format('run %s does not exist', :run_b2),
                 'cancel_run: the same');
SELECT throws_ok(format('SELECT agent.approve(%L, %L)', :'key_b', 'u-both'), '42704',
                 format('no pending approval with key "%s"', :'key_b'), 'approve: an approval of another workspace does not exist');
SELECT throws_ok(format('SELECT agent.deny(%L, %L)', :'key_b', 'u-both'), '42704',
                 format('no pending approval with key "%s"', :'key_b'), 'deny: the same');
SELECT is((SELECT count(*)::int FROM agent.readable_resources(987002, 'page')), 0,
          'readable_resources of an agent of another workspace: nothing');
SELECT throws_ok($$SELECT agent.create_agent('ws-tr-b', 'u-both', 'planted')$$, '42501', NULL,
                 'create_agent in another workspace than the session''s is refused');
RESET ROLE;
SET LOCAL ROLE ten_rest_exec;
SELECT set_config('pg_agents.workspace', 'ws-tr-a', true);
SELECT throws_ok(format('SELECT agent.finish_run(%s, %L)', :run_b, 'succeeded'), '42704', format('run %s does not exist', :run_b),
                 'an executor working in ws-tr-a cannot finish a run of ws-tr-b');
SELECT throws_ok(format('SELECT agent.add_usage(%s, 10, 10)', :run_b), '42704', format('run %s does not exist', :run_b),
                 'nor add usage to it');
SELECT set_config('pg_agents.workspace', 'ws-tr-b', true);
SELECT lives_ok(format('SELECT agent.add_usage(%s, 10, 10)', :run_b), 'in the run''s own workspace it can');
RESET ROLE;
SET LOCAL ROLE ten_rest_app;
SELECT set_config('pg_agents.workspace', '', true);
SELECT throws_ok($$SELECT agent.user_can('u-both', 987001, 'chat')$$, '42501', 'pg_agents.workspace is not set',
                 'an application session that sets no workspace is refused');
RESET ROLE;
SET LOCAL ROLE ten_rest_nobody;
SELECT throws_ok($$SELECT agent.user_can('u-both', 987001, 'chat')$$, '42501', NULL, 'a role with no grants is refused');
RESET ROLE;
SELECT is((SELECT status FROM agent.runs WHERE id = :run_b2), 'queued', 'nothing of ws-tr-b changed');

SELECT * FROM finish();
ROLLBACK;
