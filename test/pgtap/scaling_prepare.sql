-- Issue 24: agent.prepare_distribution(), the procedure's first call on a
-- Citus coordinator (docs/scaling.md).  It rewrites the read policies
-- without their scalar subquery (Citus refuses one in the policy of a
-- distributed table) and disables the history triggers of agent.triggers;
-- the policies must still keep every role to its own workspace, readable
-- ones only.  Superuser only.  Two workspaces; the application role
-- (membership of agents_app), a role with no grants, an analytics role
-- bound to one workspace, and an agent session (agents_tool).  Everything
-- is rolled back.
BEGIN;
SELECT plan(14);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.workspace = '';
SET LOCAL client_min_messages = warning;
CREATE ROLE tap_pd_app NOLOGIN IN ROLE agents_app;
CREATE ROLE tap_pd_nobody NOLOGIN;
CREATE ROLE tap_pd_reader NOLOGIN IN ROLE agents_reader;
CREATE ROLE tap_pd_tool NOLOGIN IN ROLE agents_tool;
SELECT agent.bind_reader('tap_pd_reader', 'ws-pd-a');

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (4242001, 'ws-pd-a', 'pd-owner', 'a'), (4242002, 'ws-pd-b', 'pd-owner', 'b');
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status) VALUES
  ('ws-pd-a', 4242001, 'autonomous', 'api', 'succeeded'), ('ws-pd-a', 4242001, 'autonomous', 'api', 'failed'),
  ('ws-pd-b', 4242002, 'autonomous', 'api', 'succeeded');

-- who may call it
SET LOCAL ROLE tap_pd_nobody;
SELECT throws_ok($$SELECT * FROM agent.prepare_distribution()$$, '42501', NULL,
                 'a role with no grants may not prepare the distribution');
RESET ROLE;
SET LOCAL ROLE tap_pd_app;
SELECT throws_ok($$SELECT * FROM agent.prepare_distribution()$$, '42501', NULL,
                 'the application may not prepare the distribution');
RESET ROLE;
SET LOCAL ROLE tap_pd_tool;
SELECT throws_ok($$SELECT * FROM agent.prepare_distribution()$$, '42501', NULL,
                 'an agent session may not prepare the distribution');
RESET ROLE;

SELECT ok((SELECT count(*) FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
            WHERE c.relnamespace = 'agent'::regnamespace
              AND pg_get_expr(p.polqual, p.polrelid) LIKE '%SELECT%') >= 5,
          'before: the read policies check the workspace in a subquery');

SELECT set_eq($$SELECT object_name, change FROM agent.prepare_distribution()$$,
  $$VALUES ('policy audit_log_workspace_read on agent.audit_log', 'workspace check per row (no subquery)'),
           ('policy conversations_workspace_read on agent.conversations', 'workspace check per row (no subquery)'),
           ('policy messages_workspace_read on agent.messages', 'workspace check per row (no subquery)'),
           ('policy run_steps_workspace_read on agent.run_steps', 'workspace check per row (no subquery)'),
           ('policy runs_workspace_read on agent.runs', 'workspace check per row (no subquery)'),
           ('policy access_workspace on agent.access', 'workspace check per row (no subquery)'),
           ('policy agents_workspace on agent.agents', 'workspace check per row (no subquery)'),
           ('policy approvals_workspace on agent.approvals', 'workspace check per row (no subquery)'),
           ('policy event_overlaps_workspace on agent.event_overlaps', 'workspace check per row (no subquery)'),
           ('policy group_members_workspace on agent.group_members', 'workspace check per row (no subquery)'),
           ('policy resource_acl_workspace on agent.resource_acl', 'workspace check per row (no subquery)'),
           ('policy run_messages_workspace on agent.run_messages', 'workspace check per row (no subquery)'),
           ('policy shares_workspace on agent.shares', 'workspace check per row (no subquery)'),
           ('policy triggers_workspace on agent.triggers', 'workspace check per row (no subquery)'),
           ('policy versions_workspace on agent.versions', 'workspace check per row (no subquery)'),
           ('trigger triggers_history_del on agent.triggers', 'disabled'),
           ('trigger triggers_history_ins on agent.triggers', 'disabled'),
           ('trigger triggers_history_upd on agent.triggers', 'disabled')$$,
  'the superuser''s call rewrites the fifteen workspace policies and disables the three history triggers');
SELECT is((SELECT count(*) FROM agent.prepare_distribution()), 0::bigint, 'a second call changes nothing');
SELECT is((SELECT count(*) FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
            WHERE c.relnamespace = 'agent'::regnamespace
              AND pg_get_expr(p.polqual, p.polrelid) LIKE '%SELECT%'), 0::bigint,
          'after: no policy of the extension holds a subquery');
SELECT is((SELECT string_agg(tgenabled::text, '' ORDER BY tgname) FROM pg_trigger
            WHERE tgrelid = 'agent.triggers'::regclass AND tgname LIKE 'triggers_history_%'), 'DDD',
          'the history triggers are disabled');

-- the rewritten policies still keep each role to its workspace
SET LOCAL ROLE tap_pd_app;
SELECT set_config('pg_agents.workspace', 'ws-pd-a', true);
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id IN (4242001, 4242002)), 2::bigint,
          'the application in workspace A reads A''s two runs');
SELECT set_config('pg_agents.workspace', 'ws-pd-b', true);
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id IN (4242001, 4242002)), 1::bigint,
          'the application in workspace B reads B''s one run');
SELECT set_config('pg_agents.workspace', '', true);
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id IN (4242001, 4242002)), 0::bigint,
          'the application bound to no workspace reads no run');
RESET ROLE;
SET LOCAL ROLE tap_pd_reader;
SELECT set_config('pg_agents.workspace', 'ws-pd-a', true);
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id IN (4242001, 4242002)), 2::bigint,
          'the analytics role reads the workspace bound to it');
SELECT set_config('pg_agents.workspace', 'ws-pd-b', true);
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id IN (4242001, 4242002)), 0::bigint,
          'the analytics role reads nothing of a workspace not bound to it, though it names it');
RESET ROLE;
SET LOCAL ROLE tap_pd_nobody;
SELECT throws_ok($$SELECT count(*) FROM agent.runs$$, '42501', NULL, 'a role with no grants reads no run');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
