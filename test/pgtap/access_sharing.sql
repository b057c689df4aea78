-- §7.4: sharing levels, cell by cell, and the functions they gate.
--
-- Matrix decision (docs/access.md, P3-T05): full may do everything,
-- Activity and Insights included; edit may chat, view and edit settings and
-- duplicate; interact may chat, view settings and duplicate; edit and
-- interact see only their own manual runs (activity_scope own_manual);
-- no access: nothing.  The owner holds full; group shares count; the best
-- level wins; a deleted agent gives nothing to anyone.
BEGIN;
SELECT plan(146);

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7300001, 'ws-share', 'sh_owner', 'Shared agent');
INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES
  ('ws-share', 'g_full', 'sh_gfull'), ('ws-share', 'g_edit', 'sh_gedit'),
  ('ws-share', 'g_interact', 'sh_ginteract'), ('ws-share', 'g_full', 'sh_best'),
  ('ws-share', 'g_interact', 'sh_best2'), ('ws-elsewhere', 'g_full', 'sh_foreign');
SELECT lives_ok($$SELECT agent.share(7300001, 'user:sh_full', 'full', 'sh_owner')$$, 'the owner shares at full');
SELECT lives_ok($$SELECT agent.share(7300001, 'user:sh_edit', 'edit', 'sh_owner')$$, 'the owner shares at edit');
SELECT lives_ok($$SELECT agent.share(7300001, 'user:sh_interact', 'interact', 'sh_owner')$$, 'the owner shares at interact');
SELECT lives_ok($$SELECT agent.share(7300001, 'group:g_full', 'full', 'sh_owner')$$, 'the owner shares with a group at full');
SELECT lives_ok($$SELECT agent.share(7300001, 'group:g_edit', 'edit', 'sh_owner')$$, 'the owner shares with a group at edit');
SELECT lives_ok($$SELECT agent.share(7300001, 'group:g_interact', 'interact', 'sh_owner')$$, 'the owner shares with a group at interact');
SELECT lives_ok($$SELECT agent.share(7300001, 'user:sh_best', 'interact', 'sh_full')$$, 'a full user shares too');
SELECT lives_ok($$SELECT agent.share(7300001, 'user:sh_best2', 'edit', 'sh_owner')$$, 'edit share for a member of an interact group');

CREATE TEMP TABLE expect (user_id text, label text, action text, allowed boolean);
INSERT INTO expect VALUES
  ('sh_owner', 'owner', 'chat', true),
  ('sh_owner', 'owner', 'view_settings', true),
  ('sh_owner', 'owner', 'edit_settings', true),
  ('sh_owner', 'owner', 'share', true),
  ('sh_owner', 'owner', 'view_activity', true),
  ('sh_owner', 'owner', 'view_insights', true),
  ('sh_owner', 'owner', 'duplicate', true),
  ('sh_owner', 'owner', 'delete', true),
  ('sh_owner', 'owner', 'suspend', true),
  ('sh_full', 'full share', 'chat', true),
  ('sh_full', 'full share', 'view_settings', true),
  ('sh_full', 'full share', 'edit_settings', true),
  ('sh_full', 'full share', 'share', true),
  ('sh_full', 'full share', 'view_activity', true),
  ('sh_full', 'full share', 'view_insights', true),
  ('sh_full', 'full share', 'duplicate', true),
  ('sh_full', 'full share', 'delete', true),
  ('sh_full', 'full share', 'suspend', true),
  ('sh_edit', 'edit share', 'chat', true),
  ('sh_edit', 'edit share', 'view_settings', true),
  ('sh_edit', 'edit share', 'edit_settings', true),
  ('sh_edit', 'edit share', 'share', false),
  ('sh_edit', 'edit share', 'view_activity', false),
  ('sh_edit', 'edit share', 'view_insights', false),
  ('sh_edit', 'edit share', 'duplicate', true),
  ('sh_edit', 'edit share', 'delete', false),
  ('sh_edit', 'edit share', 'suspend', false),
  ('sh_interact', 'interact share', 'chat', true),
  ('sh_interact', 'interact share', 'view_settings', true),
  ('sh_interact', 'interact share', 'edit_settings', false),
  ('sh_interact', 'interact share', 'share', false),
  ('sh_interact', 'interact share', 'view_activity', false),
  ('sh_interact', 'interact share', 'view_insights', false),
  ('sh_interact', 'interact share', 'duplicate', true),
  ('sh_interact', 'interact share', 'delete', false),
  ('sh_interact', 'interact share', 'suspend', false),
  ('sh_none', 'no access', 'chat', false),
  ('sh_none', 'no access', 'view_settings', false),
  ('sh_none', 'no access', 'edit_settings', false),
  ('sh_none', 'no access', 'share', false),
  ('sh_none', 'no access', 'view_activity', false),
  ('sh_none', 'no access', 'view_insights', false),
  ('sh_none', 'no access', 'duplicate', false),
  ('sh_none', 'no access', 'delete', false),
  ('sh_none', 'no access', 'suspend', false),
  ('sh_gfull', 'full via group', 'chat', true),
  ('sh_gfull', 'full via group', 'view_settings', true),
  ('sh_gfull', 'full via group', 'edit_settings', true),
  ('sh_gfull', 'full via group', 'share', true),
  ('sh_gfull', 'full via group', 'view_activity', true),
  ('sh_gfull', 'full via group', 'view_insights', true),
  ('sh_gfull', 'full via group', 'duplicate', true),
  ('sh_gfull', 'full via group', 'delete', true),
  ('sh_gfull', 'full via group', 'suspend', true),
  ('sh_gedit', 'edit via group', 'chat', true),
  ('sh_gedit', 'edit via group', 'view_settings', true),
  ('sh_gedit', 'edit via group', 'edit_settings', true),
  ('sh_gedit', 'edit via group', 'share', false),
  ('sh_gedit', 'edit via group', 'view_activity', false),
  ('sh_gedit', 'edit via group', 'view_insights', false),
  ('sh_gedit', 'edit via group', 'duplicate', true),
  ('sh_gedit', 'edit via group', 'delete', false),
  ('sh_gedit', 'edit via group', 'suspend', false),
  ('sh_ginteract', 'interact via group', 'chat', true),
  ('sh_ginteract', 'interact via group', 'view_settings', true),
  ('sh_ginteract', 'interact via group', 'edit_settings', false),
  ('sh_ginteract', 'interact via group', 'share', false),
  ('sh_ginteract', 'interact via group', 'view_activity', false),
  ('sh_ginteract', 'interact via group', 'view_insights', false),
  ('sh_ginteract', 'interact via group', 'duplicate', true),
  ('sh_ginteract', 'interact via group', 'delete', false),
  ('sh_ginteract', 'interact via group', 'suspend', false),
  ('sh_best', 'interact share + full via group', 'chat', true),
  ('sh_best', 'interact share + full via group', 'view_settings', true),
  ('sh_best', 'interact share + full via group', 'edit_settings', true),
  ('sh_best', 'interact share + full via group', 'share', true),
  ('sh_best', 'interact share + full via group', 'view_activity', true),
  ('sh_best', 'interact share + full via group', 'view_insights', true),
  ('sh_best', 'interact share + full via group', 'duplicate', true),
  ('sh_best', 'interact share + full via group', 'delete', true),
  ('sh_best', 'interact share + full via group', 'suspend', true),
  ('sh_best2', 'edit share + interact via group', 'chat', true),
  ('sh_best2', 'edit share + interact via group', 'view_settings', true),
  ('sh_best2', 'edit share + interact via group', 'edit_settings', true),
  ('sh_best2', 'edit share + interact via group', 'share', false),
  ('sh_best2', 'edit share + interact via group', 'view_activity', false),
  ('sh_best2', 'edit share + interact via group', 'view_insights', false),
  ('sh_best2', 'edit share + interact via group', 'duplicate', true),
  ('sh_best2', 'edit share + interact via group', 'delete', false),
  ('sh_best2', 'edit share + interact via group', 'suspend', false),
  ('sh_foreign', 'group of another workspace', 'chat', false),
  ('sh_foreign', 'group of another workspace', 'view_settings', false),
  ('sh_foreign', 'group of another workspace', 'edit_settings', false),
  ('sh_foreign', 'group of another workspace', 'share', false),
  ('sh_foreign', 'group of another workspace', 'view_activity', false),
  ('sh_foreign', 'group of another workspace', 'view_insights', false),
  ('sh_foreign', 'group of another workspace', 'duplicate', false),
  ('sh_foreign', 'group of another workspace', 'delete', false),
  ('sh_foreign', 'group of another workspace', 'suspend', false);

SELECT is(agent.user_can(e.user_id, 7300001, e.action), e.allowed,
          format('%s (%s): %s %s', e.label, e.user_id, e.action, CASE WHEN e.allowed THEN 'allowed' ELSE 'refused' END))
FROM expect e;

SELECT throws_ok($$SELECT agent.user_can('sh_owner', 7300001, 'fly')$$, '22023', 'unknown action "fly"', 'an unknown action is an error');
SELECT is(agent.user_can(NULL, 7300001, 'chat'), false, 'no user: false');
SELECT is(agent.user_can('sh_owner', 7399999, 'chat'), false, 'unknown agent: false');

-- activity visibility
SELECT is(agent.activity_scope('sh_full', 7300001), 'all', 'full sees all the activity');
SELECT is(agent.activity_scope('sh_edit', 7300001), 'own_manual', 'edit sees its own manual runs');
SELECT is(agent.activity_scope('sh_ginteract', 7300001), 'own_manual', 'interact sees its own manual runs');
SELECT is(agent.activity_scope('sh_none', 7300001), NULL, 'no access: no activity');

-- visible_agents: best level first, never an agent without access
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7300002, 'ws-share', 'sh_list', 'Mine'), (7300003, 'ws-share', 'sh_other', 'Edited'),
  (7300004, 'ws-share', 'sh_other', 'Used'), (7300005, 'ws-share', 'sh_other', 'Hidden');
INSERT INTO agent.shares (agent_id, user_id, level) VALUES (7300003, 'sh_list', 'edit'), (7300004, 'sh_list', 'interact');
SELECT results_eq($$SELECT agent_id, name, level FROM agent.visible_agents('sh_list')$$,
                  $$VALUES (7300002::bigint, 'Mine'::text, 'full'::text), (7300003, 'Edited', 'edit'), (7300004, 'Used', 'interact')$$,
                  'visible_agents: owned, edit, interact, best level first; the unshared agent is absent');
SELECT is((SELECT level FROM agent.visible_agents('sh_best') WHERE agent_id = 7300001), 'full', 'visible_agents: the best of a user share and a group share');
SELECT is((SELECT count(*)::int FROM agent.visible_agents('sh_none')), 0, 'visible_agents: nothing for a user without access');
SELECT is((SELECT count(*)::int FROM agent.visible_agents('sh_foreign')), 0, 'visible_agents: a group of another workspace gives nothing');

-- the functions each level gates
SELECT throws_ok($$SELECT agent.save_settings(7300001, '{"model": "m2"}', 'sh_interact')$$, '42501',
                 'user "sh_interact" cannot edit the settings of agent 7300001', 'interact cannot save settings');
SELECT lives_ok($$SELECT agent.save_settings(7300001, '{"model": "m2"}', 'sh_gedit')$$, 'edit via group saves settings');
SELECT throws_ok($$SELECT agent.share(7300001, 'user:x', 'interact', 'sh_edit')$$, '42501',
                 'user "sh_edit" cannot share agent 7300001', 'edit cannot share');
SELECT throws_ok($$SELECT agent.unshare(7300001, 'user:sh_interact', 'sh_edit')$$, '42501',
                 'user "sh_edit" cannot share agent 7300001', 'edit cannot unshare');
SELECT throws_ok($$SELECT agent.grant(7300001, 'page', 'p1', 'read', 'sh_interact')$$, '42501',
                 'user "sh_interact" cannot edit the settings of agent 7300001', 'interact cannot grant');
-- a page sh_edit reads themselves (the deputy rule: test/pgtap/access_deputy.sql)
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
VALUES ('ws-share', 'page', 'p1', 'user:sh_edit', 'read');
SELECT lives_ok($$SELECT agent.grant(7300001, 'page', 'p1', 'read', 'sh_edit')$$, 'edit grants');
SELECT lives_ok($$SELECT agent.grant(7300001, 'page', 'p2', 'edit')$$, 'an application call without a user grants');
SELECT throws_ok($$SELECT agent.revoke(7300001, 'page', 'p1', 'sh_none')$$, '42501',
                 'user "sh_none" cannot edit the settings of agent 7300001', 'no access cannot revoke');
SELECT throws_ok($$SELECT agent.set_status(7300001, 'suspended', 'sh_edit')$$, '42501',
                 'user "sh_edit" cannot change the status of agent 7300001', 'edit cannot suspend');
SELECT lives_ok($$SELECT agent.set_status(7300001, 'suspended', 'sh_gfull')$$, 'full via group suspends');
SELECT is((SELECT status FROM agent.agents WHERE id = 7300001), 'suspended', 'the agent is suspended');
SELECT is(agent.user_can('sh_interact', 7300001, 'chat'), true, 'a suspended agent can still be chatted with');
SELECT lives_ok($$SELECT agent.set_status(7300001, 'active', 'sh_owner')$$, 'the owner resumes it');
SELECT throws_ok($$SELECT agent.duplicate(7300001, 'sh_none')$$, '42501',
                 'user "sh_none" cannot duplicate agent 7300001', 'no access cannot duplicate');
CREATE TEMP TABLE dup AS SELECT * FROM agent.duplicate(7300001, 'sh_interact');
SELECT is((SELECT a.owner_id FROM dup d JOIN agent.agents a ON a.id = d.agent_id),
          'sh_interact', 'interact duplicates: the copy is theirs');
SELECT is(agent.user_can('sh_owner', (SELECT agent_id FROM dup), 'chat'), false,
          'the copy is private: the source''s owner has no access to it');
SELECT is(agent.unshare(7300001, 'user:sh_interact', 'sh_owner'), true, 'unshare removes the share');
SELECT is(agent.user_can('sh_interact', 7300001, 'chat'), false, 'after unshare: no chat');
SELECT is(agent.unshare(7300001, 'user:sh_interact', 'sh_owner'), false, 'unshare of nothing: false');
SELECT lives_ok($$SELECT agent.share(7300001, 'user:sh_edit', 'interact', 'sh_owner')$$, 'sharing again replaces the level');
SELECT is(agent.user_can('sh_edit', 7300001, 'edit_settings'), false, 'the lowered level applies');
SELECT throws_ok($$SELECT agent.delete_agent(7300001, 'sh_gedit')$$, '42501',
                 'user "sh_gedit" cannot delete agent 7300001', 'edit cannot delete');
SELECT lives_ok($$SELECT agent.delete_agent(7300001, 'sh_full')$$, 'full deletes');

-- a deleted agent: nothing for anyone
SELECT is((SELECT count(*)::int FROM expect e WHERE agent.user_can(e.user_id, 7300001, e.action)), 0,
          'deleted agent: every user_can is false');
SELECT is((SELECT count(*)::int FROM agent.visible_agents('sh_owner') WHERE agent_id = 7300001), 0,
          'deleted agent: not listed, even for its owner');
SELECT throws_ok($$SELECT agent.save_settings(7300001, '{}', 'sh_owner')$$, '42704',
                 'agent 7300001 does not exist', 'deleted agent: 42704');
SELECT throws_ok($$SELECT agent.share(7399999, 'user:x', 'full', 'sh_owner')$$, '42704',
                 'agent 7399999 does not exist', 'unknown agent: 42704');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'agent' AND target_id = '7300001'
            AND action IN ('agent.share', 'agent.unshare', 'agent.save_settings', 'agent.grant',
                           'agent.set_status', 'agent.delete')), 17,
          'every share, unshare, save, grant, status change and deletion wrote an audit row');

SELECT * FROM finish();
ROLLBACK;
