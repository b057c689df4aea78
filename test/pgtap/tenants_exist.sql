-- Tenants: agents of other workspaces do not exist (issue 30, finding 4).
-- agent.can_access and agent.explain_access are PUBLIC (the allowlist's
-- custom-ACL policy shape calls them as any querying role), agent.user_can
-- and the API are the application's, the allowlist's readable set is any
-- agent session's: for each, an agent of another workspace than the
-- session's is answered exactly as an id no agent holds (the full
-- explain_access row compared with that of a missing id, the id itself
-- aside), and a session that may name no workspace names no agent (but the
-- one its own pg_agents.actor names, of its workspace or with none).
--
-- The attack (on the code before the fix): from ex-a, a role with no grants
-- learned that ex-b's agent 8170002 exists and is suspended
-- (agent_suspended, not agent_not_found) and enumerated the grants of
-- ex-b's agent 8170003 (can_access(8170003, 'page', 'b-doc') = true).
--
-- Two workspaces (ex-a, ex-b); roles: a superuser, the application, an
-- analytics role bound to ex-a, a role with no grants, an agent session
-- (agents_tool, as the worker runs tool SQL); the worker's own statements
-- are a superuser's bound to no workspace.
BEGIN;
SELECT plan(98);

CREATE ROLE ex_app NOLOGIN IN ROLE agents_app;        -- the application
CREATE ROLE ex_reader NOLOGIN IN ROLE agents_reader;  -- analytics
CREATE ROLE ex_nobody NOLOGIN;                        -- no grants at all
SELECT agent.bind_reader('ex_reader', 'ex-a');

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (8170001, 'ex-a', 'u-a', 'a agent'),
  (8170002, 'ex-b', 'u-b', 'b suspended'),
  (8170003, 'ex-b', 'u-b', 'b agent'),
  (8170004, 'ex-b', 'u-b', 'b deleted');
UPDATE agent.agents SET status = 'suspended' WHERE id = 8170002;
UPDATE agent.agents SET deleted_at = now() WHERE id = 8170004;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (8170001, 'page', 'a-doc', 'edit'),
  (8170002, 'page', 'b-doc', 'edit'),
  (8170003, 'page', 'b-doc', 'edit'),
  (8170003, 'workspace_shared', '*', 'edit'),
  (8170004, 'page', 'b-doc', 'edit');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ex-a', 'page', 'a-doc', 'user:u-a', 'edit'),
  ('ex-b', 'page', 'b-doc', 'user:u-b', 'edit'),
  ('ex-b', 'page', 'b-doc', 'workspace', 'edit');

SELECT ok(NOT EXISTS (SELECT 1 FROM agent.agents WHERE id = 8170099), 'the missing id is held by no agent');

-- ------------------------------------------------------------------------
-- 1. Who sees all: a superuser bound to no workspace (the worker's own
--    statements, maintenance); and the rules hold inside each workspace
-- ------------------------------------------------------------------------
SELECT results_eq($$SELECT allowed, reason FROM agent.explain_access(8170002, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_suspended')$$, 'superuser, no workspace: every agent (ex-b''s suspended one)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), true, 'superuser, no workspace: ex-b''s grant');
SET LOCAL pg_agents.workspace = 'ex-b';
SELECT results_eq($$SELECT allowed, reason FROM agent.explain_access(8170002, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_suspended')$$, 'superuser bound to ex-b: its own suspended agent');
SET LOCAL pg_agents.workspace = 'ex-a';
SELECT is(agent.can_access(8170001, 'page', 'a-doc', 'edit'), true, 'superuser bound to ex-a: its own agent');
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'superuser bound to ex-a: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'superuser bound to ex-a: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'superuser bound to ex-a: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'superuser bound to ex-a: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'superuser bound to ex-a: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'superuser bound to ex-a: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'superuser bound to ex-a: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'superuser bound to ex-a: ex-b''s grant is not enumerable');

-- ------------------------------------------------------------------------
-- 2. The application bound to ex-a
-- ------------------------------------------------------------------------
SET LOCAL ROLE ex_app;
SET LOCAL pg_agents.workspace = 'ex-a';
SELECT is(agent.can_access(8170001, 'page', 'a-doc', 'edit'), true, 'application bound to ex-a: its own agent');
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'application: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'application: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'application: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'application: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'application: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'application: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'application: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'application: ex-b''s grant is not enumerable');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'manual', 'u-b')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'manual', 'u-b')$$,
                  'application: a manual check naming ex-b''s agent is answered as a missing id');
SELECT is(agent.user_can('u-b', 8170003, 'chat'), agent.user_can('u-b', 8170099, 'chat'),
          'application: user_can on ex-b''s agent answers as for a missing id');
SELECT is(agent.user_can('u-b', 8170003, 'chat'), false, 'application: user_can on ex-b''s agent is false');
SELECT throws_ok($$SELECT agent.set_status(8170002, 'active', 'u-b')$$, '42704', 'agent 8170002 does not exist',
                 'application: the API names ex-b''s agent as a missing one');
SELECT throws_ok($$SELECT agent.set_status(8170099, 'active', 'u-b')$$, '42704', 'agent 8170099 does not exist',
                 'application: the API names a missing id so');
SET LOCAL pg_agents.workspace = 'ex-b';
SELECT is(agent.user_can('u-b', 8170003, 'chat'), true, 'application bound to ex-b: user_can on its own agent');
SELECT is(agent.can_access(8170003, 'page', 'b-doc', 'edit'), true, 'application bound to ex-b: its own agent''s grant');
-- bound to no workspace: no agent at all, as row-level security gives it no row
SET LOCAL pg_agents.workspace = '';
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'application, no workspace: ex-b''s agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170001', '#') FROM agent.explain_access(8170001, 'page', 'a-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'a-doc', 'read', 'autonomous')$$,
                  'application, no workspace: ex-a''s agent is answered as a missing id');
RESET ROLE;

-- ------------------------------------------------------------------------
-- 3. The analytics role bound to ex-a
-- ------------------------------------------------------------------------
SET LOCAL ROLE ex_reader;
SET LOCAL pg_agents.workspace = 'ex-a';
SELECT is(agent.can_access(8170001, 'page', 'a-doc'), true, 'analytics bound to ex-a: its workspace''s agent');
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'analytics: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'analytics: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'analytics: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'analytics: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'analytics: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'analytics: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'analytics: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'analytics: ex-b''s grant is not enumerable');
-- naming ex-b, which it is not bound to, opens nothing
SET LOCAL pg_agents.workspace = 'ex-b';
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'analytics naming ex-b: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'analytics naming ex-b: ex-b''s agent is answered as a missing id');
RESET ROLE;

-- ------------------------------------------------------------------------
-- 4. A role with no grants: bound to ex-a (the attack), then naming ex-b
-- ------------------------------------------------------------------------
SET LOCAL ROLE ex_nobody;
SET LOCAL pg_agents.workspace = 'ex-a';
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'no grants, ex-a: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants, ex-a: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants, ex-a: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'no grants, ex-a: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants, ex-a: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'no grants, ex-a: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'no grants, ex-a: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'no grants, ex-a: ex-b''s grant is not enumerable');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170001', '#') FROM agent.explain_access(8170001, 'page', 'a-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'a-doc', 'read', 'autonomous')$$,
                  'no grants, ex-a: setting the workspace names no agent (ex-a''s own answered as a missing id)');
SELECT throws_ok($$SELECT agent.can_access(8170003, 'page', 'b-doc', 'read', 'manual', 'u-b')$$, '42501', NULL,
                 'no grants: a user id is refused before any agent is looked at');
SELECT throws_ok($$SELECT agent.can_access(8170099, 'page', 'b-doc', 'read', 'manual', 'u-b')$$, '42501', NULL,
                 'no grants: the same refusal for a missing id');
SET LOCAL pg_agents.workspace = 'ex-b';
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'no grants, naming ex-b: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants, naming ex-b: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants, naming ex-b: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'no grants, naming ex-b: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants, naming ex-b: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'no grants, naming ex-b: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'no grants, naming ex-b: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'no grants, naming ex-b: ex-b''s grant is not enumerable');
SET LOCAL pg_agents.workspace = '';
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants, no workspace: ex-b''s suspended agent is answered as a missing id');
RESET ROLE;

-- ------------------------------------------------------------------------
-- 5. An agent session of ex-a's agent (agents_tool, identity as the worker
--    sets it for tool SQL): explain_access and the allowlist's readable set
-- ------------------------------------------------------------------------
SET LOCAL ROLE agents_tool;
SET LOCAL pg_agents.workspace = 'ex-a';
SET LOCAL pg_agents.actor = 'agent:8170001';
SELECT is(agent.can_access(8170001, 'page', 'a-doc', 'edit'), true, 'agent session: its own agent''s grant');
SELECT is(agent._allowlist_ids_text('page', 'read'), ARRAY['a-doc'], 'agent session: its readable set');
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'agent session: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'agent session: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'agent session: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'agent session: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'agent session: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'agent session: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'agent session: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'agent session: ex-b''s grant is not enumerable');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'manual', 'u-b')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'manual', 'u-b')$$,
                  'agent session: a manual check naming ex-b''s agent is answered as a missing id');
-- an actor naming ex-b's agent in a session of ex-a: the set of a missing id
SET LOCAL pg_agents.actor = 'agent:8170003';
SELECT is(agent._allowlist_ids_text('page', 'read'), '{}'::text[], 'agent session of ex-a acting as ex-b''s agent: an empty set');
SELECT is(agent._allowlist_has('b-doc'::text, 'page', 'read'), false, 'agent session of ex-a acting as ex-b''s agent: b-doc is not in it');
SET LOCAL pg_agents.actor = 'agent:8170099';
SELECT is(agent._allowlist_ids_text('page', 'read'), '{}'::text[], 'acting as a missing id: the same empty set');
-- bound to ex-b, ex-b's agent has its set (kept sets are not shared across the boundary)
SET LOCAL pg_agents.workspace = 'ex-b';
SET LOCAL pg_agents.actor = 'agent:8170003';
SELECT is(agent._allowlist_ids_text('page', 'read'), ARRAY['b-doc'], 'agent session of ex-b''s agent: its readable set');
SET LOCAL pg_agents.workspace = 'ex-a';
SELECT is(agent._allowlist_ids_text('page', 'read'), '{}'::text[], 'then bound to ex-a again: the set kept for ex-b does not show');
-- an agent session bound to no workspace (the worker always sets one):
-- its own agent only (what its readable set shows anyway), no other
SET LOCAL pg_agents.workspace = '';
SET LOCAL pg_agents.actor = 'agent:8170001';
SELECT is(agent._allowlist_ids_text('page', 'read'), ARRAY['a-doc'], 'agent session with no workspace: its own readable set');
SELECT is(agent.can_access(8170001, 'page', 'a-doc', 'edit'), true, 'agent session with no workspace: its own agent''s grant');
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'agent session, no workspace: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'agent session, no workspace: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'agent session, no workspace: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'agent session, no workspace: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'agent session, no workspace: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'agent session, no workspace: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'agent session, no workspace: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'agent session, no workspace: ex-b''s grant is not enumerable');
RESET ROLE;
-- a role with no grants acting as ex-a's agent, bound to ex-b: nothing of
-- it (the same as a missing id), nor of ex-b's agents
SET LOCAL ROLE ex_nobody;
SET LOCAL pg_agents.workspace = 'ex-b';
SET LOCAL pg_agents.actor = 'agent:8170001';
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170001', '#') FROM agent.explain_access(8170001, 'page', 'a-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'a-doc', 'read', 'autonomous')$$,
                  'no grants acting as ex-a''s agent, bound to ex-b: answered as a missing id');
SELECT is(agent._allowlist_ids_text('page', 'read'), '{}'::text[], 'no grants acting as ex-a''s agent, bound to ex-b: an empty set');
SELECT results_eq($$SELECT allowed, reason, detail FROM agent.explain_access(8170099, 'page', 'b-doc')$$,
                  $$VALUES (false, 'agent_not_found', 'agent 8170099 does not exist')$$,
                  'no grants acting as an agent, bound to ex-b: a missing id is agent_not_found');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170002', '#') FROM agent.explain_access(8170002, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants acting as an agent, bound to ex-b: ex-b''s suspended agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants acting as an agent, bound to ex-b: ex-b''s granted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'edit', 'autonomous')$$,
                  'no grants acting as an agent, bound to ex-b: ex-b''s agent, edit: answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170004', '#') FROM agent.explain_access(8170004, 'page', 'b-doc', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'page', 'b-doc', 'read', 'autonomous')$$,
                  'no grants acting as an agent, bound to ex-b: ex-b''s deleted agent is answered as a missing id');
SELECT results_eq($$SELECT allowed, reason, replace(detail, '8170003', '#') FROM agent.explain_access(8170003, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  $$SELECT allowed, reason, replace(detail, '8170099', '#') FROM agent.explain_access(8170099, 'workspace_shared', '*', 'read', 'autonomous')$$,
                  'no grants acting as an agent, bound to ex-b: ex-b''s workspace_shared grant does not show');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), agent.can_access(8170099, 'page', 'b-doc'),
          'no grants acting as an agent, bound to ex-b: can_access on ex-b''s grant answers as for a missing id (false)');
SELECT is(agent.can_access(8170003, 'page', 'b-doc'), false, 'no grants acting as an agent, bound to ex-b: ex-b''s grant is not enumerable');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
