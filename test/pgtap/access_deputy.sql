-- The confused deputy (issue 14, attack 9): a sharee who may edit an agent's
-- settings grants it resources they cannot read themselves, then rewrites
-- its instructions to copy them out.  Granting -- agent.grant, save_settings
-- with "access" (and an instruction page, delegable agents), restore_version
-- -- requires by_user's own access, as agent.duplicate does; what the agent
-- already holds is kept.  The tenant boundary of the same functions.
BEGIN;
SET LOCAL client_min_messages = warning;  -- restore_version's NOTICE: the version note and audit row are checked
SELECT plan(58);

-- ---------------------------------------------------------------- setup
CREATE ROLE dep_tap_app NOLOGIN IN ROLE agents_app;
CREATE ROLE dep_tap_nogrant NOLOGIN;

INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-dep-a', 'page', 'p_pub', 'user:dp_owner', 'edit'),
  ('ws-dep-a', 'page', 'p_pub', 'user:dp_edit', 'edit'),
  ('ws-dep-a', 'page', 'p_pub', 'user:dp_full', 'edit'),
  ('ws-dep-a', 'page', 'p_ro', 'user:dp_owner', 'edit'),
  ('ws-dep-a', 'page', 'p_ro', 'user:dp_edit', 'read'),
  ('ws-dep-a', 'page', 'p_secret', 'user:dp_owner', 'edit'),
  ('ws-dep-a', 'collection', 'c_secret', 'user:dp_owner', 'read');

SELECT agent.create_agent('ws-dep-a', 'dp_owner', 'Deputy') AS aid \gset
SELECT agent.create_agent('ws-dep-a', 'dp_owner', 'Hidden helper') AS hid \gset
SELECT agent.create_agent('ws-dep-b', 'dp_bowner', 'Tenant B') AS bid \gset
SELECT id AS bver FROM agent.versions WHERE agent_id = :bid \gset
SELECT agent.share(:aid, 'user:dp_edit', 'edit', 'dp_owner') AS _ \gset
SELECT agent.share(:aid, 'user:dp_full', 'full', 'dp_owner') AS _ \gset
SELECT agent.share(:aid, 'user:dp_interact', 'interact', 'dp_owner') AS _ \gset
CREATE FUNCTION pg_temp.held(bigint, text) RETURNS text LANGUAGE sql
  AS $$ SELECT coalesce((SELECT access FROM agent.access WHERE agent_id = $1 AND resource_id = $2), 'none') $$;

SET LOCAL ROLE dep_tap_app;
SELECT set_config('pg_agents.workspace', 'ws-dep-a', true) AS _ \gset

-- ------------------------------------------------------------ agent.grant
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_secret', 'read', 'dp_edit')$$, :aid),
                 '42501', 'user "dp_edit" cannot read page "p_secret"',
                 'an edit sharee cannot grant a page they cannot read');
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_secret', 'read', 'dp_full')$$, :aid),
                 '42501', 'user "dp_full" cannot read page "p_secret"',
                 'nor can a full sharee: the level on the agent is not access to the page');
SELECT throws_ok(format($$SELECT agent.grant(%s, 'collection', 'c_secret', 'read', 'dp_edit')$$, :aid),
                 '42501', 'user "dp_edit" cannot read collection "c_secret"', 'nor a collection');
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_ro', 'edit', 'dp_edit')$$, :aid),
                 '42501', 'user "dp_edit" cannot edit page "p_ro"',
                 'edit on a page the sharee may only read is refused');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'page', 'p_ro', 'read', 'dp_edit')$$, :aid),
                'read on it is granted');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'page', 'p_pub', 'edit', 'dp_edit')$$, :aid),
                'edit on a page the sharee edits is granted');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'workspace_shared', '*', 'read', 'dp_edit')$$, :aid),
                'workspace_shared (what the whole workspace reads) is granted');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'page', 'p_secret', 'read', 'dp_owner')$$, :aid),
                'the owner, who reads the page, grants it');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'page', 'p_owner_cannot', 'read', 'dp_owner')$$, :aid),
                'the owner''s grants are not checked (the agent reaches grants and the owner''s ACL only)');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'page', 'p_secret', 'read', 'dp_edit')$$, :aid),
                'the sharee may grant again what the agent already holds (nothing new)');
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_secret', 'edit', 'dp_edit')$$, :aid),
                 '42501', 'user "dp_edit" cannot edit page "p_secret"', 'but not raise it to edit');
SELECT lives_ok(format($$SELECT agent.revoke(%s, 'page', 'p_secret', 'dp_edit')$$, :aid),
                'revoking is never the deputy''s attack');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'collection', 'c_secret', 'read', NULL)$$, :aid),
                'by_user NULL: the application vouches, unchecked');
SELECT lives_ok(format($$SELECT agent.revoke(%s, 'collection', 'c_secret', NULL)$$, :aid), 'and revokes');
RESET ROLE;
SELECT is(pg_temp.held(:aid, 'p_secret'), 'none', 'the agent does not hold the secret page');
SELECT is(pg_temp.held(:aid, 'p_ro'), 'read', 'it holds the read-only page at read');
SELECT is(pg_temp.held(:aid, 'c_secret'), 'none', 'nor the secret collection');
SELECT is(agent.can_access(:aid, 'page', 'p_secret'), false, 'so an autonomous run cannot read it');
SELECT is(agent.can_access(:aid, 'page', 'p_owner_cannot'), false,
          'a page granted by the owner beyond their own ACL gives the agent nothing');
SET LOCAL ROLE dep_tap_app;

-- ------------------------------------------------- save_settings "access"
SELECT throws_ok(format($$SELECT agent.save_settings(%s, '{"access": [{"resource_type": "page", "resource_id": "p_pub", "access": "edit"},
                          {"resource_type": "page", "resource_id": "p_secret"}]}', 'dp_edit')$$, :aid),
                 '42501', 'user "dp_edit" cannot read page "p_secret"',
                 'settings cannot grant a page the sharee cannot read');
SELECT throws_ok(format($$SELECT agent.save_settings(%s, '{"access": [{"resource_type": "page", "resource_id": "p_ro", "access": "edit"}]}', 'dp_edit')$$, :aid),
                 '42501', 'user "dp_edit" cannot edit page "p_ro"', 'nor raise one to edit');
SELECT throws_ok(format($$SELECT agent.save_settings(%s, '{"instruction_page_id": "p_secret"}', 'dp_edit')$$, :aid),
                 '42501', 'user "dp_edit" cannot read page "p_secret"', 'nor set an instruction page they cannot read');
SELECT throws_ok(format($$SELECT agent.save_settings(%s, '{"delegation": [%s]}', 'dp_edit')$$, :aid, :hid),
                 '42501', format('user "dp_edit" cannot delegate to agent %s', :hid),
                 'nor add a delegable agent they cannot use');
SELECT throws_ok(format($$SELECT agent.save_settings(%s, '{"instructions": "x"}', 'dp_interact')$$, :aid),
                 '42501', NULL, 'interact cannot save at all');
SELECT lives_ok(format($$SELECT agent.grant(%s, 'page', 'p_secret', 'read', 'dp_owner')$$, :aid), 'the owner grants the secret page');
SELECT lives_ok(format($$SELECT agent.save_settings(%s, '{"delegation": [%s]}', 'dp_owner')$$, :aid, :hid),
                'and a delegable agent');
SELECT lives_ok(format($$SELECT agent.save_settings(%s, '{"instructions": "Be brief.", "delegation": [%s],
                         "access": [{"resource_type": "page", "resource_id": "p_pub", "access": "edit"},
                                    {"resource_type": "page", "resource_id": "p_ro"},
                                    {"resource_type": "page", "resource_id": "p_secret"}]}', 'dp_edit')$$, :aid, :hid),
                'the sharee saves settings that re-list what the agent holds');
SELECT lives_ok(format($$SELECT agent.save_settings(%s, '{"access": [{"resource_type": "page", "resource_id": "p_pub", "access": "read"}]}', 'dp_edit')$$, :aid),
                'and may lower and remove grants');
RESET ROLE;
SELECT is(pg_temp.held(:aid, 'p_secret'), 'none', 'the save removed the secret page');
SELECT is(pg_temp.held(:aid, 'p_pub'), 'read', 'and lowered p_pub');

-- -------------------------------------------------------- restore_version
-- the version to come back to: the owner's grants, instruction page and a
-- trigger on the secret collection; then all of it removed
SELECT agent.save_settings(:aid, '{"instruction_page_id": "p_secret", "access": [
         {"resource_type": "page", "resource_id": "p_secret"}, {"resource_type": "page", "resource_id": "p_ro", "access": "edit"},
         {"resource_type": "page", "resource_id": "p_pub"}]}', 'dp_owner') AS _ \gset
SELECT agent.set_trigger(:aid, '{"kind": "event", "event_name": "collection.row_added", "resource_type": "collection",
                                 "resource_id": "c_secret", "prompt": "copy it"}', 'dp_owner') AS strig \gset
SELECT id AS vfull, version AS vfull_no FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1 \gset
SELECT agent.save_settings(:aid, '{"instruction_page_id": null, "access": []}', 'dp_owner') AS _ \gset
SELECT agent.delete_trigger(:strig, 'dp_owner') AS _ \gset
SELECT coalesce(max(id), 0) AS a0 FROM agent.audit_log \gset

SET LOCAL ROLE dep_tap_app;
SELECT lives_ok(format($$SELECT agent.restore_version(%s, 'dp_edit')$$, :vfull), 'the sharee restores the version');
RESET ROLE;
SELECT is(pg_temp.held(:aid, 'p_secret'), 'none', 'the restore does not grant the page the sharee cannot read');
SELECT is(pg_temp.held(:aid, 'p_ro'), 'read', 'a grant at edit on a page the sharee reads comes back at read');
SELECT is(pg_temp.held(:aid, 'p_pub'), 'read', 'what the sharee reads comes back');
SELECT is((SELECT instruction_page_id FROM agent.agents WHERE id = :aid), NULL, 'the secret instruction page does not come back');
SELECT is((SELECT count(*)::int FROM agent.triggers WHERE agent_id = :aid AND resource_id = 'c_secret'), 0,
          'nor the trigger watching the secret collection');
SELECT is((SELECT note FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1),
          format('restored version %s; left out: page p_secret, instruction page p_secret, trigger %s (watching collection c_secret); read only: page p_ro (changed: access)',
                 :vfull_no, :strig),
          'the version note lists what was left out, and what came back read only');
SELECT is((SELECT jsonb_array_length(inputs -> 'left_out') FROM agent.audit_log
            WHERE id > :a0 AND action = 'agent.restore_version'), 3, 'the audit row lists the three items left out');
SELECT ok((SELECT inputs -> 'left_out' @> '[{"kind": "access", "resource_id": "p_secret", "reason": "no_read_access"}]'
             AND inputs -> 'downgraded' @> '[{"resource_id": "p_ro", "from": "edit", "to": "read"}]'
             FROM agent.audit_log WHERE id > :a0 AND action = 'agent.restore_version'),
          'with the reasons');
SELECT is(agent.can_access(:aid, 'page', 'p_secret'), false, 'an autonomous run still cannot read the secret page');

-- the owner, who reads it all, restores it all
SET LOCAL ROLE dep_tap_app;
SELECT lives_ok(format($$SELECT agent.restore_version(%s, 'dp_owner')$$, :vfull), 'the owner restores the same version');
RESET ROLE;
SELECT is(pg_temp.held(:aid, 'p_secret') || '/' || pg_temp.held(:aid, 'p_ro'), 'read/edit', 'the grants come back whole');
SELECT is((SELECT instruction_page_id FROM agent.agents WHERE id = :aid), 'p_secret', 'the instruction page too');
SELECT is((SELECT prompt FROM agent.triggers WHERE id = :strig), 'copy it', 'and the trigger, under its id');
SELECT matches((SELECT note FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1),
               '^restored version [0-9]+; triggers 1 recreated \(changed: instructions, access, triggers\)$',
               'nothing left out');
-- what the agent holds is kept when the sharee restores again
SET LOCAL ROLE dep_tap_app;
SELECT lives_ok(format($$SELECT agent.restore_version(%s, 'dp_edit')$$, :vfull), 'the sharee restores it once more');
RESET ROLE;
SELECT is(pg_temp.held(:aid, 'p_secret') || '/' || pg_temp.held(:aid, 'p_ro'), 'read/edit',
          'grants the agent holds are kept (restoring them grants nothing)');
SELECT is((SELECT note FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1),
          format('restored version %s (no changes)', :vfull_no), 'and nothing is reported');

-- ----------------------------------------------------- the tenant boundary
SET LOCAL ROLE dep_tap_app;
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_pub', 'read', 'dp_bowner')$$, :bid),
                 '42704', format('agent %s does not exist', :bid), 'grant: an agent of another workspace does not exist');
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_pub', 'read', NULL)$$, :bid),
                 '42704', format('agent %s does not exist', :bid), 'for an application call too');
SELECT throws_ok(format($$SELECT agent.revoke(%s, 'page', 'p_pub', NULL)$$, :bid),
                 '42704', format('agent %s does not exist', :bid), 'revoke');
SELECT throws_ok(format($$SELECT agent.save_settings(%s, '{"instructions": "x"}', 'dp_bowner')$$, :bid),
                 '42704', format('agent %s does not exist', :bid), 'save_settings');
SELECT throws_ok(format($$SELECT agent.restore_version(%s, 'dp_bowner')$$, :bver),
                 '42704', format('version %s does not exist', :bver), 'restore_version: a version of another workspace');
SELECT throws_ok($$SELECT agent.restore_version(990000001, 'dp_bowner')$$,
                 '42704', 'version 990000001 does not exist', 'like a missing one');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM agent.versions WHERE agent_id = :bid), 1, 'the other workspace''s agent is untouched');

-- ------------------------------------------ no grants, and an agent session
SET LOCAL ROLE dep_tap_nogrant;
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_pub', 'read', 'dp_owner')$$, :aid),
                 '42501', NULL, 'a role without grants cannot grant');
SELECT throws_ok(format($$SELECT agent.restore_version(%s, 'dp_owner')$$, :vfull),
                 '42501', NULL, 'nor restore');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT set_config('pg_agents.actor', 'agent:' || :aid, true) AS _ \gset
SELECT throws_ok(format($$SELECT agent.grant(%s, 'page', 'p_secret', 'read', NULL)$$, :aid),
                 '42501', NULL, 'an agent session cannot grant itself anything');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
