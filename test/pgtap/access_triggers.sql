-- Triggers are settings (issue 15): agent.set_trigger / agent.delete_trigger
-- by each sharing level, the tenant boundary, one version and one audit row
-- per change, direct writes to agent.triggers versioned and audited the same
-- way (and no way to hold them out of history), agent.restore_version
-- bringing triggers back (recreate, update, disable), agent.duplicate keeping
-- its rules.
BEGIN;
SELECT plan(88);

-- ---------------------------------------------------------------- setup
CREATE ROLE trg_tap_app NOLOGIN IN ROLE agents_app;
CREATE ROLE trg_tap_nogrant NOLOGIN;

INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'ws-trg-a', 'collection', 'c_open', 'user:' || u, 'read'
  FROM unnest(ARRAY['trg_owner', 'trg_full', 'trg_edit', 'trg_interact']) u;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-trg-a', 'collection', 'c_secret', 'user:trg_owner', 'read');

SELECT agent.create_agent('ws-trg-a', 'trg_owner', 'Trigger agent') AS aid \gset
SELECT agent.create_agent('ws-trg-a', 'trg_owner', 'Other agent') AS aid2 \gset
SELECT agent.create_agent('ws-trg-b', 'trg_bowner', 'Tenant B agent') AS bid \gset
SELECT agent.share(:aid, 'user:trg_full', 'full', 'trg_owner') AS _ \gset
SELECT agent.share(:aid, 'user:trg_edit', 'edit', 'trg_owner') AS _ \gset
SELECT agent.share(:aid, 'user:trg_interact', 'interact', 'trg_owner') AS _ \gset
SELECT agent.set_trigger(:bid, '{"kind": "schedule", "schedule": "0 8 * * *", "prompt": "B"}', 'trg_bowner') AS btrig \gset

CREATE VIEW public.trg_tap_hidden AS SELECT 'r1'::text AS id;
REVOKE ALL ON public.trg_tap_hidden FROM PUBLIC;
CREATE VIEW public.trg_tap_open AS SELECT 'r1'::text AS id;
GRANT SELECT ON public.trg_tap_open TO agents_app;
CREATE TEMP TABLE trg_ids (name text PRIMARY KEY, id bigint);
GRANT ALL ON trg_ids TO PUBLIC;
CREATE FUNCTION pg_temp.versions(bigint) RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM agent.versions WHERE agent_id = $1 $$;
CREATE FUNCTION pg_temp.audits(text, bigint) RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM agent.audit_log WHERE action = $1 AND target_type = 'trigger' AND target_id = $2::text $$;

-- ------------------------------------------ set_trigger by each level (app)
SET LOCAL ROLE trg_tap_app;
SELECT set_config('pg_agents.workspace', 'ws-trg-a', true) AS _ \gset
INSERT INTO trg_ids
SELECT u, agent.set_trigger(:aid, jsonb_build_object('kind', 'event', 'event_name', 'collection.row_added',
                                                    'resource_type', 'collection', 'resource_id', 'c_open',
                                                    'prompt', 'from ' || u), u)
  FROM unnest(ARRAY['trg_owner', 'trg_full', 'trg_edit']) u;
SELECT is((SELECT count(*)::int FROM trg_ids), 3, 'owner, full and edit create a trigger');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "api"}', 'trg_interact')$$, :aid),
                 '42501', format('user "trg_interact" cannot edit the settings of agent %s', :aid),
                 'interact cannot create a trigger');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "api"}', 'trg_none')$$, :aid),
                 '42501', format('user "trg_none" cannot edit the settings of agent %s', :aid),
                 'a user without access cannot create a trigger');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, jsonb_build_object('id', %s, 'prompt', 'x'), 'trg_interact')$$,
                        :aid, (SELECT id FROM trg_ids WHERE name = 'trg_edit')),
                 '42501', NULL, 'interact cannot change a trigger');
SELECT throws_ok(format($$SELECT agent.delete_trigger(%s, 'trg_interact')$$, (SELECT id FROM trg_ids WHERE name = 'trg_edit')),
                 '42501', NULL, 'interact cannot delete a trigger');
SELECT throws_ok(format($$SELECT agent.delete_trigger(%s, 'trg_none')$$, (SELECT id FROM trg_ids WHERE name = 'trg_edit')),
                 '42501', NULL, 'a user without access cannot delete a trigger');
INSERT INTO trg_ids VALUES ('app', agent.set_trigger(:aid, '{"kind": "schedule", "schedule": "0 9 * * 1", "prompt": "weekly"}', NULL));
SELECT ok((SELECT id FROM trg_ids WHERE name = 'app') IS NOT NULL, 'by_user NULL: an application call creates a trigger');
SELECT lives_ok(format($$SELECT agent.set_trigger(%s, jsonb_build_object('id', %s, 'prompt', 'edited', 'enabled', false), 'trg_edit')$$,
                       :aid, (SELECT id FROM trg_ids WHERE name = 'trg_owner')),
                'edit changes a trigger (keys given)');
SELECT lives_ok(format($$SELECT agent.delete_trigger(%s, 'trg_edit')$$, (SELECT id FROM trg_ids WHERE name = 'trg_full')),
                'edit deletes a trigger');

-- the deputy rule on what a trigger watches
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "event", "event_name": "collection.row_added",
                          "resource_type": "collection", "resource_id": "c_secret"}', 'trg_edit')$$, :aid),
                 '42501', 'user "trg_edit" cannot read collection "c_secret"',
                 'edit cannot make a trigger watch a collection they cannot read');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, jsonb_build_object('id', %s, 'resource_id', 'c_secret'), 'trg_edit')$$,
                        :aid, (SELECT id FROM trg_ids WHERE name = 'trg_edit')),
                 '42501', 'user "trg_edit" cannot read collection "c_secret"',
                 'nor point an existing trigger at it');
INSERT INTO trg_ids VALUES ('secret', agent.set_trigger(:aid, '{"kind": "event", "event_name": "collection.row_added",
                          "resource_type": "collection", "resource_id": "c_secret", "prompt": "secret"}', 'trg_owner'));
SELECT lives_ok(format($$SELECT agent.set_trigger(%s, jsonb_build_object('id', %s, 'prompt', 'reworded'), 'trg_edit')$$,
                       :aid, (SELECT id FROM trg_ids WHERE name = 'secret')),
                'edit may still change the prompt of a trigger the owner pointed there (it watches nothing new)');

-- validation, as every trigger write
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "event", "event_name": "x", "colour": "red"}', 'trg_edit')$$, :aid),
                 '22023', 'unknown trigger key "colour"', 'an unknown key is refused');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "webhook"}', 'trg_edit')$$, :aid),
                 '22023', 'invalid trigger kind "webhook"', 'an unknown kind is refused');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"prompt": "no kind"}', 'trg_edit')$$, :aid),
                 '22023', 'invalid trigger: kind is required', 'a new trigger needs a kind');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "schedule"}', 'trg_edit')$$, :aid),
                 '22023', 'invalid schedule trigger: schedule is required', 'a schedule trigger needs a schedule');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "schedule", "schedule": "61 * * * *"}', 'trg_edit')$$, :aid),
                 '22023', NULL, 'a bad cron expression is refused');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "event"}', 'trg_edit')$$, :aid),
                 '22023', 'invalid event trigger: event_name is required', 'an event trigger needs an event name');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "event", "event_name": "x", "filter": {"nope": 1}}', 'trg_edit')$$, :aid),
                 '22023', NULL, 'an invalid filter is refused');
-- (a filter's view is checked for the session's role: the application logs in as itself)
RESET ROLE;
SET LOCAL SESSION AUTHORIZATION trg_tap_app;
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "event", "event_name": "x", "filter": {"view": "public.trg_tap_hidden"}}', 'trg_edit')$$, :aid),
                 '42501', 'invalid filter: permission denied for view "public.trg_tap_hidden"',
                 'a filter view the application cannot read is refused, as on a direct write');
SELECT throws_ok(format($$INSERT INTO agent.triggers (workspace_id, agent_id, kind, event_name, filter)
                          VALUES ('ws-trg-a', %s, 'event', 'x', '{"view": "public.trg_tap_hidden"}')$$, :aid),
                 '42501', 'invalid filter: permission denied for view "public.trg_tap_hidden"',
                 '(the direct write)');
SELECT lives_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "event", "event_name": "x", "enabled": false,
                         "filter": {"view": "public.trg_tap_open"}}', 'trg_edit')$$, :aid),
                'a filter view it reads is accepted');
RESET SESSION AUTHORIZATION;
SET LOCAL ROLE trg_tap_app;
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "api", "enabled": "yes"}', 'trg_edit')$$, :aid),
                 '22023', 'trigger key "enabled" must be a boolean', 'a value of the wrong type is refused');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '[]', 'trg_edit')$$, :aid),
                 '22023', 'trigger must be a JSON object', 'the trigger is an object');

-- the tenant boundary: another workspace's agent or trigger does not exist
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "api"}', 'trg_bowner')$$, :bid),
                 '42704', format('agent %s does not exist', :bid), 'an agent of another workspace does not exist');
SELECT throws_ok($$SELECT agent.set_trigger(990000001, '{"kind": "api"}', 'trg_bowner')$$,
                 '42704', 'agent 990000001 does not exist', 'like a missing agent');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "api"}', NULL)$$, :bid),
                 '42704', format('agent %s does not exist', :bid), 'an application call is bound to its workspace too');
SELECT throws_ok(format($$SELECT agent.delete_trigger(%s, 'trg_bowner')$$, :btrig),
                 '42704', format('trigger %s does not exist', :btrig), 'a trigger of another workspace does not exist');
SELECT throws_ok($$SELECT agent.delete_trigger(990000001, NULL)$$,
                 '42704', 'trigger 990000001 does not exist', 'like a missing trigger');
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, jsonb_build_object('id', %s, 'prompt', 'hijack'), 'trg_owner')$$, :aid, :btrig),
                 '42704', format('trigger %s does not exist', :btrig),
                 'a trigger of another workspace cannot be changed through an agent of this one');
WITH u AS (UPDATE agent.triggers SET prompt = 'hijack' WHERE id = :btrig RETURNING 1)
SELECT is(count(*)::int, 0, 'a direct write to a trigger of another workspace finds no row (row-level security)') FROM u;
SELECT throws_ok(format($$INSERT INTO agent.triggers (workspace_id, agent_id, kind) VALUES ('ws-trg-b', %s, 'api')$$, :bid),
                 '42501', 'permission denied to write a row of workspace ''ws-trg-b'' into agent.triggers',
                 'a direct INSERT for an agent of another workspace is refused, naming the workspace');

-- nobody can hold a write out of history
SELECT throws_ok(format($$INSERT INTO agent._history_holds VALUES (txid_current(), %s, 'ws-trg-a')$$, :aid),
                 '42501', NULL, 'the application cannot hold an agent out of history');
SELECT throws_ok(format($$SELECT agent._history_hold(%s, true)$$, :aid),
                 '42501', NULL, 'nor call the internal hold');
RESET ROLE;

SELECT is((SELECT prompt FROM agent.triggers WHERE id = :btrig), 'B', 'the other workspace''s trigger is untouched');
SELECT is(pg_temp.versions(:bid), 2::bigint, 'and its agent has no new version');

-- ------------------------------------------- one version and one audit row
SELECT is(pg_temp.versions(:aid), 10::bigint,
          'created, then 3 + 1 creates, a change, a deletion, 2 creates and a change: 10 versions, one per change');
SELECT is(pg_temp.audits('agent.trigger.create', (SELECT id FROM trg_ids WHERE name = 'trg_edit')), 1::bigint,
          'one audit row agent.trigger.create for a created trigger');
SELECT is(pg_temp.audits('agent.trigger.update', (SELECT id FROM trg_ids WHERE name = 'trg_owner')), 1::bigint,
          'one audit row agent.trigger.update for a change');
SELECT is(pg_temp.audits('agent.trigger.delete', (SELECT id FROM trg_ids WHERE name = 'trg_full')), 1::bigint,
          'one audit row agent.trigger.delete for a deletion');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE action LIKE 'agent.trigger.%'
             AND (inputs ->> 'agent_id')::bigint = :aid), 9, 'nine trigger audit rows for the agent in all');
SELECT is((SELECT note FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC OFFSET 4 LIMIT 1),
          format('changed trigger %s: enabled, prompt', (SELECT id FROM trg_ids WHERE name = 'trg_owner')),
          'a change''s version note names the trigger and what changed');
SELECT is((SELECT note FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC OFFSET 3 LIMIT 1),
          format('deleted trigger %s (event collection.row_added on collection c_open)', (SELECT id FROM trg_ids WHERE name = 'trg_full')),
          'a deletion''s note names the trigger');
SELECT is((SELECT created_by FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC OFFSET 3 LIMIT 1),
          'trg_edit', 'the version is by_user''s');
SELECT is((SELECT inputs -> 'trigger' ->> 'prompt' FROM agent.audit_log
            WHERE action = 'agent.trigger.update' AND target_id = (SELECT id FROM trg_ids WHERE name = 'trg_owner')::text),
          'edited', 'the audit row holds the new trigger');
SELECT is((SELECT snapshot -> 'triggers' FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1),
          (SELECT jsonb_agg(agent._trigger_json(t) ORDER BY t.id) FROM agent.triggers t WHERE t.agent_id = :aid),
          'the last version snapshots the triggers as they are');
SELECT is((SELECT created_by FROM agent.triggers WHERE id = (SELECT id FROM trg_ids WHERE name = 'trg_edit')), 'trg_edit',
          'created_by is by_user');

-- ------------------------------------------------- direct writes (the app)
SELECT pg_temp.versions(:aid) AS v0 \gset
SET LOCAL ROLE trg_tap_app;
INSERT INTO agent.triggers (workspace_id, agent_id, kind, event_name, prompt)
VALUES ('ws-trg-a', :aid, 'event', 'collection.row_added', 'direct') RETURNING id AS d1 \gset
UPDATE agent.triggers SET prompt = 'direct, reworded' WHERE id = :d1;
UPDATE agent.triggers SET last_run_at = now(), last_status = 'succeeded' WHERE id = :d1;
UPDATE agent.triggers SET prompt = prompt WHERE id = :d1;
RESET ROLE;
SELECT is(pg_temp.versions(:aid) - :v0, 2::bigint, 'a direct INSERT and a direct change each write a version; bookkeeping and no-ops none');
SELECT is(pg_temp.audits('agent.trigger.create', :d1), 1::bigint, 'the direct INSERT is audited');
SELECT is(pg_temp.audits('agent.trigger.update', :d1), 1::bigint, 'the direct change is audited once');
SELECT is((SELECT inputs ->> 'direct' FROM agent.audit_log WHERE action = 'agent.trigger.update' AND target_id = :'d1'),
          'true', 'marked as a direct write');
SELECT is((SELECT db_user FROM agent.audit_log WHERE action = 'agent.trigger.update' AND target_id = :'d1'),
          session_user::text, 'with the session user');
SELECT is((SELECT note FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1),
          format('changed trigger %s by a direct write: prompt', :d1), 'the note names the trigger and the direct write');
SELECT is((SELECT snapshot -> 'triggers' FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1),
          (SELECT jsonb_agg(agent._trigger_json(t) ORDER BY t.id) FROM agent.triggers t WHERE t.agent_id = :aid),
          'the version snapshots the direct change');
SET LOCAL ROLE trg_tap_app;
UPDATE agent.triggers SET enabled = false WHERE agent_id = :aid AND id IN (:d1, (SELECT id FROM trg_ids WHERE name = 'app'));
DELETE FROM agent.triggers WHERE id = :d1;
RESET ROLE;
SELECT is(pg_temp.versions(:aid) - :v0, 5::bigint, 'a direct UPDATE of two triggers writes one version each, a DELETE one');
SELECT is(pg_temp.audits('agent.trigger.delete', :d1), 1::bigint, 'the direct DELETE is audited');
SELECT is(pg_temp.audits('agent.trigger.update', (SELECT id FROM trg_ids WHERE name = 'app')), 1::bigint,
          'so is each row of a multi-row UPDATE');
-- a superuser DBA's direct write is history too
UPDATE agent.triggers SET prompt = 'dba' WHERE id = (SELECT id FROM trg_ids WHERE name = 'app');
SELECT is(pg_temp.audits('agent.trigger.update', (SELECT id FROM trg_ids WHERE name = 'app')), 2::bigint,
          'a DBA''s direct write is audited');
SELECT is(pg_temp.versions(:aid) - :v0, 6::bigint, 'and versioned');

-- ------------------------------------------ no grants, and an agent session
SET LOCAL ROLE trg_tap_nogrant;
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "api"}', 'trg_owner')$$, :aid),
                 '42501', NULL, 'a role without grants cannot call set_trigger');
SELECT throws_ok(format($$SELECT agent.delete_trigger(%s, 'trg_owner')$$, (SELECT id FROM trg_ids WHERE name = 'app')),
                 '42501', NULL, 'nor delete_trigger');
SELECT throws_ok(format($$INSERT INTO agent.triggers (workspace_id, agent_id, kind) VALUES ('ws-trg-a', %s, 'api')$$, :aid),
                 '42501', NULL, 'nor write agent.triggers');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT set_config('pg_agents.actor', 'agent:' || :aid, true) AS _ \gset
SELECT throws_ok(format($$SELECT agent.set_trigger(%s, '{"kind": "api"}', 'trg_owner')$$, :aid),
                 '42501', NULL, 'an agent session cannot call set_trigger');
SELECT throws_ok(format($$UPDATE agent.triggers SET enabled = true WHERE agent_id = %s$$, :aid),
                 '42501', NULL, 'nor write its own triggers directly');
RESET ROLE;
SELECT set_config('pg_agents.actor', '', true) AS _ \gset

-- ------------------------------------------------------- restore_version
-- the state to come back to: an event trigger (enabled), a schedule, and
-- one to be moved away
DELETE FROM agent.triggers WHERE agent_id = :aid;
SELECT agent.set_trigger(:aid, '{"kind": "event", "event_name": "collection.row_added", "resource_type": "collection",
                                 "resource_id": "c_open", "prompt": "triage", "filter": {"all": [{"property": "status", "op": "eq", "value": "new"}]}}',
                         'trg_owner') AS r1 \gset
SELECT agent.set_trigger(:aid, '{"kind": "schedule", "schedule": "0 9 * * 1-5", "timezone": "Europe/Paris", "prompt": "daily"}',
                         'trg_owner') AS r2 \gset
SELECT agent.set_trigger(:aid, '{"kind": "api", "prompt": "on call", "show_typing": false}', 'trg_owner') AS r3 \gset
SELECT id AS vkeep, snapshot -> 'triggers' AS snap FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1 \gset
-- then: r1 changed, r2 deleted, r3 moved to another agent, a new one added
SELECT agent.set_trigger(:aid, jsonb_build_object('id', :r1, 'prompt', 'ignore', 'enabled', false,
                                                  'filter', '{}'::jsonb), 'trg_edit') AS _ \gset
SELECT agent.delete_trigger(:r2, 'trg_edit') AS _ \gset
UPDATE agent.triggers SET agent_id = :aid2 WHERE id = :r3;
SELECT agent.set_trigger(:aid, '{"kind": "mention", "prompt": "later"}', 'trg_edit') AS r4 \gset
SELECT pg_temp.versions(:aid) AS v0 \gset
SELECT coalesce(max(id), 0) AS a0 FROM agent.audit_log \gset

SELECT lives_ok(format($$SELECT agent.restore_version(%s, 'trg_edit')$$, :vkeep), 'edit restores the version');
SELECT is(pg_temp.versions(:aid) - :v0, 1::bigint, 'the restore writes one version');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE id > :a0 AND action LIKE 'agent.trigger.%'), 0,
          'and no trigger audit row of its own writes');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE id > :a0 AND action = 'agent.restore_version'), 1,
          'but one agent.restore_version row');
SELECT is((SELECT agent._trigger_json(t) FROM agent.triggers t WHERE t.id = :r1),
          (SELECT e FROM jsonb_array_elements(:'snap'::jsonb) e WHERE (e ->> 'id')::bigint = :r1),
          'a changed trigger is updated back (prompt, filter, enabled)');
SELECT is((SELECT agent._trigger_json(t) FROM agent.triggers t WHERE t.id = :r2),
          (SELECT e FROM jsonb_array_elements(:'snap'::jsonb) e WHERE (e ->> 'id')::bigint = :r2),
          'a deleted trigger is recreated under its id');
SELECT ok((SELECT next_run_at > now() AND next_run_at = agent.cron_next(schedule, now(), timezone)
             FROM agent.triggers WHERE id = :r2), 'the recreated schedule has its next_run_at');
SELECT is((SELECT agent_id FROM agent.triggers WHERE id = :r3), :aid2::bigint,
          'a trigger moved to another agent stays there');
SELECT is((SELECT agent._trigger_json(t) - 'id' FROM agent.triggers t WHERE t.agent_id = :aid AND t.id NOT IN (:r1, :r2, :r4)),
          (SELECT e - 'id' FROM jsonb_array_elements(:'snap'::jsonb) e WHERE (e ->> 'id')::bigint = :r3),
          'and is recreated under a new id');
SELECT is((SELECT enabled FROM agent.triggers WHERE id = :r4), false, 'a trigger the version did not have is disabled');
SELECT is((SELECT prompt FROM agent.triggers WHERE id = :r4), 'later', 'not deleted');
SELECT is((SELECT (SELECT jsonb_agg(e - 'id' ORDER BY e ->> 'kind') FROM jsonb_array_elements(v.snapshot -> 'triggers') e
                    WHERE (e ->> 'id')::bigint <> :r4)
             FROM agent.versions v WHERE v.agent_id = :aid ORDER BY v.version DESC LIMIT 1),
          (SELECT jsonb_agg(e - 'id' ORDER BY e ->> 'kind') FROM jsonb_array_elements(:'snap'::jsonb) e),
          'the new version holds the snapshot''s triggers (and the disabled one)');
SELECT matches((SELECT note FROM agent.versions WHERE agent_id = :aid ORDER BY version DESC LIMIT 1),
               '^restored version [0-9]+; triggers 2 recreated, 1 updated, 1 disabled \(changed: triggers\)$',
               'the note says what the restore did to the triggers');
SELECT is((SELECT jsonb_array_length(inputs -> 'triggers' -> 'recreated') FROM agent.audit_log
            WHERE id > :a0 AND action = 'agent.restore_version'), 2, 'the audit row lists the recreated triggers');
SELECT ok((SELECT inputs -> 'triggers' -> 'recreated' @> jsonb_build_array(jsonb_build_object('from_trigger_id', :r3))
             FROM agent.audit_log WHERE id > :a0 AND action = 'agent.restore_version'),
          'with the id each came from');
SELECT is((SELECT count(*)::int FROM agent._history_holds), 0, 'no hold outlives the call');

-- restore across the boundary, and by a level too low
SELECT id AS bver FROM agent.versions WHERE agent_id = :bid ORDER BY version LIMIT 1 \gset
SET LOCAL ROLE trg_tap_app;
SELECT throws_ok(format($$SELECT agent.restore_version(%s, 'trg_interact')$$, :vkeep),
                 '42501', NULL, 'interact cannot restore');
SELECT throws_ok(format($$SELECT agent.restore_version(%s, 'trg_bowner')$$, :bver),
                 '42704', format('version %s does not exist', :bver), 'a version of another workspace does not exist');
RESET ROLE;

-- ----------------------------------------------------- duplicate's rules
SELECT agent.set_trigger(:aid, '{"kind": "event", "event_name": "collection.row_added",
                                 "resource_type": "collection", "resource_id": "c_secret"}', 'trg_owner') AS rs \gset
SELECT coalesce(max(id), 0) AS a0 FROM agent.audit_log \gset
SELECT agent_id AS copy, report FROM agent.duplicate(:aid, 'trg_interact') \gset
SELECT is(pg_temp.versions(:copy), 1::bigint, 'the copy has one version: copying its triggers writes no other');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE id > :a0 AND action LIKE 'agent.trigger.%'), 0,
          'and no trigger audit row');
SELECT is((SELECT count(*)::int FROM agent.triggers WHERE agent_id = :copy AND NOT enabled),
          (SELECT count(*)::int FROM agent.triggers WHERE agent_id = :aid) - 1,
          'every trigger but the one on a collection the duplicating user cannot read is copied, disabled');
SELECT ok(:'report'::jsonb -> 'dropped' @> jsonb_build_array(jsonb_build_object('kind', 'trigger', 'trigger_id', :rs)),
          'the report lists the dropped trigger');
SELECT is((SELECT jsonb_array_length(snapshot -> 'triggers') FROM agent.versions WHERE agent_id = :copy),
          (SELECT count(*)::int FROM agent.triggers WHERE agent_id = :copy), 'the copy''s version 1 records its triggers');
SET LOCAL ROLE trg_tap_app;
SELECT throws_ok(format($$SELECT * FROM agent.duplicate(%s, 'trg_bowner')$$, :bid), '42704',
                 format('agent %s does not exist', :bid), 'an agent of another workspace cannot be duplicated');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
