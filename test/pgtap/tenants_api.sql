-- Tenants: every API path of activity, insights, drafts, teams, duplicate and
-- delegation works inside the session's workspace (pg_agents.workspace); an
-- object of another workspace named in an argument is refused exactly like an
-- unknown one.  Delegation lists name only agents of the same workspace;
-- workspace_shared covers only what is shared with the agent's own
-- workspace, and the NULL workspace_id rule of docs/tenants.md.  Delegation
-- attachments the child may not read reach it withheld.
--
-- Three workspaces (ten-a, ten-b, ten-c).  The same user u-t owns agents in
-- ten-a and ten-b: the attack is the application's request for ten-a naming
-- ten-b's objects, which u-t could reach in ten-b.
BEGIN;
SELECT plan(94);

CREATE ROLE ten_app NOLOGIN IN ROLE agents_app;          -- the application
CREATE ROLE ten_exec NOLOGIN IN ROLE agents_executor;    -- an external executor
CREATE ROLE ten_reader NOLOGIN IN ROLE agents_reader;    -- analytics
CREATE ROLE ten_nobody NOLOGIN;                          -- no grants at all
SELECT agent.bind_reader('ten_reader', 'ten-a');         -- the workspace analytics is told

INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation) VALUES
  (8150001, 'ten-a', 'u-t', 'a lead', '[8150002]'),
  (8150002, 'ten-a', 'u-t', 'a helper', '[]'),
  (8150003, 'ten-a', 'u-t', 'a retired', '[]'),
  (8150011, 'ten-b', 'u-t', 'b lead', '[8150012]'),
  (8150012, 'ten-b', 'u-t', 'b helper', '[]'),
  (8150021, 'ten-c', 'u-c', 'c agent', '[]');
UPDATE agent.agents SET deleted_at = now() WHERE id = 8150003;
-- a list written before the rule (directly): names an agent of ten-b
UPDATE agent.agents SET delegation = '[8150002, 8150011]' WHERE id = 8150001;

INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, requested_by, status, root_run_id, depth) VALUES
  (81500001, 'ten-a', 8150001, 'manual', 'chat', 'u-t', 'running', 81500001, 0),
  (81500011, 'ten-b', 8150011, 'manual', 'chat', 'u-t', 'running', 81500011, 0),
  (81500021, 'ten-c', 8150021, 'manual', 'chat', 'u-c', 'running', 81500021, 0);
-- a forged child in ten-b of ten-a's run: the composite parent key refuses
-- it (test/pgtap/scaling_schema.sql), written here with the keys off, as a
-- hand-edited database could hold it
SET LOCAL session_replication_role = replica;
INSERT INTO agent.runs (id, workspace_id, agent_id, parent_run_id, regime, origin, requested_by, status, root_run_id, depth) VALUES
  (81500012, 'ten-b', 8150012, 81500001, 'autonomous', 'delegation', 'agent:8150001', 'running', 81500001, 1);
RESET session_replication_role;
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status) VALUES
  (81500001, 1, 'llm', 'm', '{}', '{"text": "a"}', 'ok'),
  (81500011, 1, 'llm', 'm', '{}', '{"text": "b"}', 'ok');

-- grants and ACL rows: workspace_shared and the NULL workspace_id rule
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (8150001, 'workspace_shared', '*', 'read'),
  (8150011, 'workspace_shared', '*', 'read'),
  (8150001, 'page', 'ten-grp', 'read'),
  (8150001, 'page', 'ten-grp-b', 'read'),
  (8150001, 'page', 'ten-secret', 'read'),
  (8150002, 'page', 'ten-open', 'read');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ten-a', 'page', 'ten-shared-a',    'workspace', 'read'),
  ('ten-b', 'page', 'ten-shared-b',    'workspace', 'read'),
  (NULL,    'page', 'ten-shared-null', 'workspace', 'read'),
  (NULL,    'page', 'ten-shared-a',    'user:u-t',  'read'),
  (NULL,    'page', 'ten-shared-b',    'user:u-t',  'read'),
  (NULL,    'page', 'ten-shared-null', 'user:u-t',  'read'),
  (NULL,    'page', 'ten-secret',      'user:u-t',  'read'),
  (NULL,    'page', 'ten-open',        'user:u-t',  'read'),
  ('ten-a', 'page', 'ten-grp',         'group:ten-g',  'read'),
  ('ten-a', 'page', 'ten-grp-b',       'group:ten-gb', 'read');
INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES
  (NULL, 'ten-g', 'u-t'),          -- a membership of no workspace: counts everywhere
  ('ten-b', 'ten-gb', 'u-t');      -- a membership in ten-b: not in ten-a

-- a draft run of ten-b (a superuser session without a workspace is unbound)
SELECT agent.generate_draft('triage the tickets', 'u-t', 'ten-b') AS draft_b \gset

-- ------------------------------------------------------------------------
-- 1. workspace_shared and NULL rows (can_access, the readable set)
-- ------------------------------------------------------------------------
SELECT results_eq($$SELECT allowed, reason FROM agent.explain_access(8150001, 'page', 'ten-shared-a')$$,
                  $$VALUES (true, 'granted_workspace_shared')$$,
                  'workspace_shared: a page shared with the agent''s own workspace counts');
SELECT results_eq($$SELECT allowed, reason FROM agent.explain_access(8150001, 'page', 'ten-shared-b')$$,
                  $$VALUES (false, 'not_granted')$$,
                  'workspace_shared: a page shared with another workspace does not count');
SELECT ok(agent.can_access(8150011, 'page', 'ten-shared-b'), 'and it counts for an agent of that workspace');
SELECT results_eq($$SELECT allowed, reason FROM agent.explain_access(8150001, 'page', 'ten-shared-null')$$,
                  $$VALUES (false, 'not_granted')$$,
                  'workspace_shared: a "workspace" row with workspace_id NULL shares with no workspace');
SELECT ok(NOT agent.can_access(8150011, 'page', 'ten-shared-null'), 'in no workspace');
SELECT is(ARRAY(SELECT agent.readable_resources(8150001, 'page') x ORDER BY x),
          ARRAY['ten-grp', 'ten-secret', 'ten-shared-a'],
          'the readable set: the own workspace''s share, no other''s, no NULL "workspace" row');
SELECT ok(agent.can_access(8150001, 'page', 'ten-secret'), 'a user: row with workspace_id NULL counts (the owner''s ACL)');
SELECT ok(agent.can_access(8150001, 'page', 'ten-grp'), 'a group_members row with workspace_id NULL counts');
SELECT ok(NOT agent.can_access(8150001, 'page', 'ten-grp-b'), 'a membership of another workspace does not');

-- ------------------------------------------------------------------------
-- 2. the application, in ten-a
-- ------------------------------------------------------------------------
SET LOCAL ROLE ten_app;
SET LOCAL pg_agents.workspace = 'ten-a';

-- activity, run_detail, insights
SELECT is((SELECT count(*)::int FROM agent.activity(8150001, 'u-t')), 1, 'activity of an agent of the session''s workspace');
SELECT is((SELECT count(*)::int FROM agent.activity(8150011, 'u-t')), 0, 'activity of an agent of ten-b: nothing, like an unknown agent');
SELECT is((SELECT count(*)::int FROM agent.run_detail(81500001, 'u-t')), 1, 'run_detail of a run of the session''s workspace');
SELECT is((SELECT count(*)::int FROM agent.run_detail(81500011, 'u-t')), 0, 'run_detail of a run of ten-b: nothing, like an unknown run');
SELECT ok((SELECT count(*) FROM agent.insights(8150001, 'u-t')) > 0, 'insights of an agent of the session''s workspace');
SELECT throws_ok($$SELECT * FROM agent.insights(8150011, 'u-t')$$, '42501',
                 'user "u-t" cannot view the insights of agent 8150011',
                 'insights of an agent of ten-b: refused like an unknown agent');
SELECT throws_ok($$SELECT * FROM agent.insights(8159999, 'u-t')$$, '42501',
                 'user "u-t" cannot view the insights of agent 8159999', '(an unknown agent)');

-- send_to_run
SELECT ok(agent.send_to_run(81500001, 'also this', 'u-t') > 0, 'send_to_run to a run of the session''s workspace');
SELECT throws_ok($$SELECT agent.send_to_run(81500011, 'also this', 'u-t')$$, '42704',
                 'run 81500011 does not exist', 'send_to_run to a run of ten-b: unknown run');
SELECT throws_ok($$SELECT agent.send_to_run(81599999, 'also this', 'u-t')$$, '42704',
                 'run 81599999 does not exist', '(an unknown run)');

-- duplicate
SELECT throws_ok($$SELECT * FROM agent.duplicate(8150011, 'u-t')$$, '42704',
                 'agent 8150011 does not exist', 'duplicate of an agent of ten-b: unknown agent');
SELECT agent_id AS dup, report AS dup_report FROM agent.duplicate(8150001, 'u-t') \gset
RESET ROLE;
SELECT is((SELECT workspace_id FROM agent.agents WHERE id = :dup), 'ten-a', 'the copy is in the session''s workspace');
SELECT is((SELECT delegation FROM agent.agents WHERE id = :dup), '[8150002]'::jsonb,
          'the copy''s delegation list keeps only agents of the workspace');
SELECT ok(:'dup_report'::jsonb -> 'dropped' @> '[{"kind": "delegation", "agent_id": 8150011, "reason": "no_access"}]',
          'the other workspace''s agent is reported dropped, like one the user cannot see');
SET LOCAL ROLE ten_app;

-- delegation lists, at save
SELECT throws_ok($$SELECT agent.save_settings(8150002, '{"delegation": [8150012]}', 'u-t')$$, '42704',
                 'agent 8150012 does not exist', 'save_settings: a delegation list naming an agent of ten-b is refused');
SELECT throws_ok($$SELECT agent.save_settings(8150002, '{"delegation": [8159999]}', 'u-t')$$, '42704',
                 'agent 8159999 does not exist', '(exactly like an unknown agent)');
SELECT throws_ok($$SELECT agent.save_settings(8150002, '{"delegation": [8150003]}', 'u-t')$$, '42704',
                 'agent 8150003 does not exist', '(and like a deleted one)');
SELECT throws_ok($$SELECT agent.save_settings(8150001, '{"delegation": [8150002, 8150011]}', 'u-t')$$, '42704',
                 'agent 8150011 does not exist', 'saving a list that still holds another workspace''s agent is refused');
SELECT lives_ok($$SELECT agent.save_settings(8150002, '{"delegation": [8150001]}', 'u-t')$$,
                'a list of agents of the same workspace is saved');
SELECT throws_ok($$SELECT agent.create_agent('ten-a', 'u-t', 'grabby', '{"delegation": [8150011]}')$$, '42704',
                 'agent 8150011 does not exist', 'create_agent: the same rule');

-- generate_draft, draft, create_from_draft
SELECT throws_ok($$SELECT agent.generate_draft('triage the tickets', 'u-t', 'ten-b')$$, '42501',
                 'workspace "ten-b" is not the session''s workspace', 'generate_draft in another workspace is refused');
SELECT agent.generate_draft('triage the tickets', 'u-t') AS draft_a \gset
SELECT is(agent.draft(:draft_a, 'u-t') ->> 'ready', 'false', 'draft of a draft run of the session''s workspace');
SELECT throws_ok(format('SELECT agent.draft(%s, %L)', :draft_b, 'u-t'), '42704',
                 format('draft run %s does not exist', :draft_b), 'draft of a draft run of ten-b: unknown draft');
SELECT throws_ok(format('SELECT agent.draft(%s)', :draft_b), '42704',
                 format('draft run %s does not exist', :draft_b), '(without a user too)');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "hand made", "workspace_id": "ten-b"}', 'u-t')$$, '42501',
                 'workspace "ten-b" is not the session''s workspace',
                 'create_from_draft: a hand-made draft with another workspace_id is refused');
SELECT ok(agent.create_from_draft('{"name": "hand made", "workspace_id": "ten-a"}', 'u-t') > 0,
          'a draft naming the session''s workspace is saved');
SELECT agent.create_from_draft('{"name": "hand made 2"}', 'u-t') AS fd \gset
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "grab", "access": [{"resource_type": "agent", "resource_id": "8150011"}]}', 'u-t')$$,
                 '42501', 'invalid draft: access 1: user "u-t" cannot read agent "8150011"',
                 'create_from_draft: a grant on an agent of ten-b is refused (although u-t owns it there)');
RESET ROLE;
SELECT is((SELECT workspace_id FROM agent.runs WHERE id = :draft_a), 'ten-a', 'generate_draft works in the session''s workspace');
SELECT is((SELECT workspace_id FROM agent.agents WHERE id = :fd), 'ten-a', 'a draft without workspace_id goes to the session''s workspace');
SELECT is((SELECT count(*)::int FROM agent.agents WHERE workspace_id = 'ten-b' AND name IN ('hand made', 'grab')), 0,
          'nothing was created in ten-b');
SELECT is((SELECT count(*)::int FROM agent.run_messages WHERE run_id = 81500011), 0, 'no message reached ten-b''s run');

-- ------------------------------------------------------------------------
-- 3. delegation, as an executor in ten-a
-- ------------------------------------------------------------------------
SET LOCAL ROLE ten_exec;
SET LOCAL pg_agents.workspace = 'ten-a';
SELECT throws_ok($$SELECT agent.delegate(81500011, 8150012, 'work for b')$$, '42704',
                 'run 81500011 does not exist', 'delegate from a run of ten-b: unknown run');
SELECT throws_ok($$SELECT agent.try_delegate(81500011, 8150012, 'work for b')$$, '42704',
                 'run 81500011 does not exist', 'try_delegate from a run of ten-b: unknown run');
SELECT throws_ok($$SELECT agent.delegation_context(81500011)$$, '42704',
                 'run 81500011 does not exist', 'delegation_context of a run of ten-b: unknown run');
SELECT throws_ok($$SELECT agent.delegate(81500001, 8150011, 'work for b')$$, '42704',
                 'agent 8150011 does not exist', 'delegate to an agent of ten-b, even listed: unknown agent');
SELECT is((agent.delegation_context(81500001) -> 'delegates'), '[{"name": "a helper", "agent_id": 8150002}]'::jsonb,
          'delegation_context offers only the agents of the workspace');
-- attachments are checked against the child's own access
SELECT agent.try_delegate(81500001, 8150002, 'summarise',
         '[{"resource_type": "page", "resource_id": "ten-secret", "content": "the secret text"},
           {"resource_type": "page", "resource_id": "ten-open"},
           {"page": "ten-secret"},
           {"resource_type": "page"},
           "a note of the parent"]') ->> 'child_run_id' AS child \gset
RESET ROLE;
SELECT is((SELECT input -> 'attachments' FROM agent.runs WHERE id = :child),
          '[{"resource_type": "page", "resource_id": "ten-secret", "withheld": "not_granted"},
            {"resource_type": "page", "resource_id": "ten-open"},
            {"resource_type": "page", "resource_id": "ten-secret", "withheld": "not_granted"},
            {"resource_type": "page", "resource_id": null, "withheld": "invalid_reference"},
            "a note of the parent"]'::jsonb,
          'the child receives what it may read as given, the rest withheld (its content dropped)');
SELECT is((SELECT input -> 'attachments' FROM agent.run_steps WHERE run_id = 81500001 AND kind = 'delegate'
            AND (input ->> 'child_run_id')::bigint = :child),
          (SELECT input -> 'attachments' FROM agent.runs WHERE id = :child),
          'the parent''s delegate step records the same, withheld, attachments');
SELECT ok(position('the secret text' IN (SELECT input::text FROM agent.runs WHERE id = :child)) = 0,
          'the withheld content is nowhere in the child''s input');

-- ------------------------------------------------------------------------
-- 4. teams internals and manage_jobs, as the worker (a superuser session
--    bound to the run's workspace)
-- ------------------------------------------------------------------------
SET LOCAL pg_agents.workspace = 'ten-a';
SELECT throws_ok($$SELECT agent._teams_send(81500001, 81500012, 'hello')$$, '42704',
                 'run 81500012 does not exist', 'agent_teams send to a (forged) child in ten-b: unknown run');
SELECT throws_ok($$SELECT agent._teams_ask_parent(81500012, 'what now?')$$, '42704',
                 'run 81500012 does not exist', 'ask_parent of a run of ten-b: unknown run');
SELECT throws_ok($$SELECT agent._teams_manage_jobs(81500011, 'list', '{}')$$, '42704',
                 'run 81500011 does not exist', 'manage_jobs list of a run of ten-b: unknown run');
SELECT throws_ok($$SELECT agent._teams_manage_jobs(81500011, 'create', '{"schedule": "0 9 * * *"}')$$, '42704',
                 'run 81500011 does not exist', 'manage_jobs create for a run of ten-b: unknown run');
SELECT is(agent._teams_manage_jobs(81500001, 'list', '{}'), '{"jobs": []}'::jsonb, 'manage_jobs in the session''s workspace');
SELECT is((SELECT count(*)::int FROM agent.run_tree(81500011)), 0, 'run_tree of a run of ten-b: nothing, like an unknown run');
SELECT ok(EXISTS (SELECT 1 FROM agent.run_tree(81500001) WHERE run_id = :child), 'run_tree of a run of the session''s workspace, with its child');
SELECT ok(NOT EXISTS (SELECT 1 FROM agent.run_tree(81500001) WHERE run_id = 81500012), 'run_tree never crosses into ten-b (the forged child)');
SELECT throws_ok($$SELECT * FROM agent.duplicate(8150011, 'u-t')$$, '42704',
                 'agent 8150011 does not exist', 'a superuser session bound to ten-a is refused ten-b''s agent too');
SET LOCAL pg_agents.workspace = 'ten-b';
SELECT throws_ok($$SELECT agent._teams_send(81500001, 81500012, 'hello')$$, '42501',
                 'run 81500012 is not a child of run 81500001',
                 'in ten-b: a run of ten-a is no parent to send from');
SELECT throws_ok($$SELECT agent._teams_ask_parent(81500012, 'what now?')$$, '22023',
                 'run 81500012 has no parent run', 'in ten-b: a parent in ten-a is no parent to ask');
SET LOCAL pg_agents.workspace = '';
SELECT is((SELECT count(*)::int FROM agent.run_messages WHERE run_id IN (81500001, 81500012)
             AND sender IN ('run:81500001', 'run:81500012')), 0, 'no message crossed the workspaces');
SELECT is((SELECT count(*)::int FROM agent.triggers WHERE agent_id = 8150011), 0, 'no job was created in ten-b');
-- a superuser session without a workspace is not bound (maintenance)
SELECT is((SELECT count(*)::int FROM agent.activity(8150011, 'u-t')), 1, 'an unbound superuser session reads any workspace');

-- ------------------------------------------------------------------------
-- 5. analytics: the insights view, of the workspace told
-- ------------------------------------------------------------------------
SET LOCAL ROLE ten_reader;
SET LOCAL pg_agents.workspace = 'ten-a';
SELECT ok((SELECT count(*) FROM agent.insights WHERE workspace_id = 'ten-a') > 0, 'the reader sees its workspace''s runs');
SELECT is((SELECT count(*)::int FROM agent.insights WHERE workspace_id <> 'ten-a'), 0, 'and no other workspace''s');
SET LOCAL pg_agents.workspace = 'ten-b';
SELECT is((SELECT count(*)::int FROM agent.insights), 0, 'naming a workspace it is not bound to shows nothing');
SET LOCAL pg_agents.workspace = '';
SELECT throws_ok($$SELECT count(*) FROM agent.insights$$, '42501', 'pg_agents.workspace is not set',
                 'a reader that sets no workspace is refused (instead of seeing every workspace)');
RESET ROLE;

-- ------------------------------------------------------------------------
-- 6. a non-superuser session that sets no workspace is refused
-- ------------------------------------------------------------------------
SET LOCAL ROLE ten_app;
SET LOCAL pg_agents.workspace = '';
SELECT throws_ok($$SELECT * FROM agent.activity(8150001, 'u-t')$$, '42501', 'pg_agents.workspace is not set', 'activity without a workspace');
SELECT throws_ok($$SELECT * FROM agent.run_detail(81500001, 'u-t')$$, '42501', 'pg_agents.workspace is not set', 'run_detail without a workspace');
SELECT throws_ok($$SELECT * FROM agent.insights(8150001, 'u-t')$$, '42501', 'pg_agents.workspace is not set', 'insights without a workspace');
SELECT throws_ok($$SELECT agent.send_to_run(81500001, 'x', 'u-t')$$, '42501', 'pg_agents.workspace is not set', 'send_to_run without a workspace');
SELECT throws_ok($$SELECT * FROM agent.duplicate(8150001, 'u-t')$$, '42501', 'pg_agents.workspace is not set', 'duplicate without a workspace');
SELECT throws_ok($$SELECT agent.generate_draft('x', 'u-t')$$, '42501', 'pg_agents.workspace is not set', 'generate_draft without a workspace');
SELECT throws_ok($$SELECT agent.generate_draft('x', 'u-t', 'ten-a')$$, '42501', 'pg_agents.workspace is not set', 'generate_draft naming one, without a session workspace');
SELECT throws_ok(format('SELECT agent.draft(%s)', :draft_a), '42501', 'pg_agents.workspace is not set', 'draft without a workspace');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ten-a"}', 'u-t')$$, '42501',
                 'pg_agents.workspace is not set', 'create_from_draft without a workspace');
RESET ROLE;
SET LOCAL ROLE ten_exec;
SELECT throws_ok($$SELECT agent.delegate(81500001, 8150002, 'x')$$, '42501', 'pg_agents.workspace is not set', 'delegate without a workspace');
SELECT throws_ok($$SELECT agent.delegation_context(81500001)$$, '42501', 'pg_agents.workspace is not set', 'delegation_context without a workspace');
RESET ROLE;

-- ------------------------------------------------------------------------
-- 7. a role with no grants, and an agent session
-- ------------------------------------------------------------------------
SET LOCAL ROLE ten_nobody;
SET LOCAL pg_agents.workspace = 'ten-a';
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "x"}', 'u-t')$$, '42501',
                 'permission denied for function create_from_draft', 'no grant: create_from_draft');
SELECT throws_ok($$SELECT * FROM agent.duplicate(8150001, 'u-t')$$, '42501',
                 'permission denied for function duplicate', 'no grant: duplicate');
SELECT throws_ok($$SELECT agent.delegate(81500001, 8150002, 'x')$$, '42501',
                 'permission denied for function delegate', 'no grant: delegate');
SELECT throws_ok($$SELECT agent.generate_draft('x', 'u-t')$$, '42501',
                 'permission denied for function generate_draft', 'no grant: generate_draft');
SELECT throws_ok($$SELECT count(*) FROM agent.insights$$, '42501',
                 'permission denied for view insights', 'no grant: the insights view');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SET LOCAL pg_agents.actor = 'agent:8150001';
SET LOCAL pg_agents.workspace = 'ten-a';
SELECT throws_ok($$SELECT * FROM agent.duplicate(8150011, 'u-t')$$, '42501',
                 'permission denied for function duplicate', 'an agent session cannot duplicate');
SELECT throws_ok($$SELECT agent.save_settings(8150001, '{"delegation": [8150011]}', 'u-t')$$, '42501',
                 'permission denied for function save_settings', 'an agent session cannot save settings');
RESET ROLE;
SET LOCAL pg_agents.actor = '';

-- ------------------------------------------------------------------------
-- 8. ten-b's application sees its own, and ten-c nothing of either
-- ------------------------------------------------------------------------
SET LOCAL ROLE ten_app;
SET LOCAL pg_agents.workspace = 'ten-b';
SELECT is((SELECT count(*)::int FROM agent.activity(8150011, 'u-t')), 1, 'ten-b: activity of its own agent');
SELECT is((SELECT count(*)::int FROM agent.activity(8150001, 'u-t')), 0, 'ten-b: nothing of ten-a''s agent');
SELECT is((SELECT count(*)::int FROM agent.run_detail(81500011, 'u-t')), 1, 'ten-b: run_detail of its own run');
SELECT ok(agent.send_to_run(81500011, 'for b', 'u-t') > 0, 'ten-b: send_to_run to its own run');
SELECT is(agent.draft(:draft_b, 'u-t') ->> 'ready', 'false', 'ten-b: its own draft');
SELECT throws_ok(format('SELECT agent.draft(%s)', :draft_a), '42704',
                 format('draft run %s does not exist', :draft_a), 'ten-b: ten-a''s draft is unknown');
SELECT lives_ok($$SELECT agent.save_settings(8150012, '{"delegation": [8150011]}', 'u-t')$$,
                'ten-b: a list of its own agents is saved');
SET LOCAL pg_agents.workspace = 'ten-c';
SELECT is((SELECT count(*)::int FROM agent.activity(8150011, 'u-t')), 0, 'ten-c: nothing of ten-b');
SELECT throws_ok($$SELECT agent.send_to_run(81500001, 'x', 'u-t')$$, '42704', 'run 81500001 does not exist',
                 'ten-c: ten-a''s run is unknown');
SELECT is((SELECT count(*)::int FROM agent.activity(8150021, 'u-c')), 1, 'ten-c: its own agent');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
