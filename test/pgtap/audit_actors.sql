-- Actors on lifecycle changes (issue 30, finding 8): every API function that
-- takes a user id names that user as actor_id (actor_kind human) in its
-- audit rows, whether or not the application set pg_agents.actor; called
-- from an agent's session the agent stays the actor (the user is
-- on_behalf_of), and no caller can set the acting user itself.
-- Also (finding 9): audit_log.target_id is redacted; a change of a trigger's
-- conversation setting is versioned like its other settings.
BEGIN;
SELECT plan(44);

-- ---------------------------------------------------------------- setup
-- two workspaces, the application role with the documented grants
-- (membership of agents_app), a role with no grants, an agent session
CREATE ROLE act_tap_app NOLOGIN IN ROLE agents_app;
CREATE ROLE act_tap_nobody NOLOGIN;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (840001, 'ws-act-a', 'alice', 'a agent'), (840002, 'ws-act-b', 'bella', 'b agent');
INSERT INTO agent.shares (workspace_id, agent_id, user_id, level) VALUES
  ('ws-act-a', 840001, 'erin', 'edit'), ('ws-act-b', 840002, 'erin', 'full');
-- actor_kind/actor_id/on_behalf_of of the last row of an action ('-': NULL)
CREATE FUNCTION pg_temp.last_actor(p_action text) RETURNS text
LANGUAGE sql AS $$
  SELECT concat_ws('/', l.actor_kind, coalesce(l.actor_id, '-'), coalesce(l.on_behalf_of, '-'))
    FROM agent.audit_log l
   WHERE l.action = p_action ORDER BY l.id DESC LIMIT 1 $$;
GRANT EXECUTE ON FUNCTION pg_temp.last_actor(text) TO PUBLIC;

-- ------------------------------------ the application, no pg_agents.actor
SET LOCAL ROLE act_tap_app;
SELECT set_config('pg_agents.workspace', 'ws-act-a', true);
SELECT set_config('pg_agents.actor', '', true);

SELECT agent.share(840001, 'user:frank', 'interact', 'alice');
SELECT agent."grant"(840001, 'page', 'p1', 'read', 'alice');
SELECT agent.save_settings(840001, '{"instructions": "be brief"}', 'erin', 'tap') AS v_saved \gset
SELECT agent.set_trigger(840001, '{"kind": "api", "prompt": "go"}', 'erin') AS trig \gset
SELECT agent.restore_version(:v_saved, 'alice');
SELECT agent.set_status(840001, 'suspended', 'alice');
SELECT agent.set_status(840001, 'active', 'alice');
SELECT agent.unshare(840001, 'user:frank', 'alice');
SELECT agent.revoke(840001, 'page', 'p1', 'alice');
SELECT agent.delete_trigger(:trig, 'erin');
RESET ROLE;

SELECT is(pg_temp.last_actor('agent.share'), 'human/alice/-', 'share: actor is by_user, human');
SELECT is(pg_temp.last_actor('agent.grant'), 'human/alice/-', 'grant: actor is by_user');
SELECT is(pg_temp.last_actor('agent.save_settings'), 'human/erin/-', 'save_settings: actor is by_user');
SELECT is(pg_temp.last_actor('agent.trigger.create'), 'human/erin/-', 'set_trigger: actor is by_user');
SELECT is(pg_temp.last_actor('agent.restore_version'), 'human/alice/-', 'restore_version: actor is by_user');
SELECT is(pg_temp.last_actor('agent.set_status'), 'human/alice/-', 'set_status: actor is by_user');
SELECT is(pg_temp.last_actor('agent.unshare'), 'human/alice/-', 'unshare: actor is by_user');
SELECT is(pg_temp.last_actor('agent.revoke'), 'human/alice/-', 'revoke: actor is by_user');
SELECT is(pg_temp.last_actor('agent.trigger.delete'), 'human/erin/-', 'delete_trigger: actor is by_user');
-- the row triggers' rows of the same call (the grant's access row) too
SELECT is((SELECT count(*)::int FROM agent.audit_log l
            WHERE l.workspace_id = 'ws-act-a' AND l.txid = txid_current() AND l.actor_id IS NULL),
          0, 'no audit row of these calls is left without an actor');

-- approve and deny: a pending approval of a running run
SET LOCAL pg_agents.workspace = 'ws-act-a';
SELECT agent.start_run(840001, NULL, '{}', 'autonomous', 'api') AS r1 \gset
UPDATE agent.runs SET status = 'running', attempts = 1 WHERE id = :r1;
SELECT agent.request_approval(:r1, 'act_tap_tool', '{"n": 1}') AS k1 \gset
SELECT agent.request_approval(:r1, 'act_tap_tool', '{"n": 2}') AS k2 \gset
SET LOCAL ROLE act_tap_app;
SELECT agent.approve(:'k1', 'alice', :r1);
SELECT agent.deny(:'k2', 'erin', :r1, 'no');
RESET ROLE;
SELECT is((SELECT ROW(l.actor_kind, l.actor_id)::text FROM agent.audit_log l
            WHERE l.action LIKE '%approv%' AND l.inputs::text LIKE '%' || :'k1' || '%' ORDER BY l.id DESC LIMIT 1),
          '(human,alice)', 'approve: actor is by_user');
SELECT is((SELECT ROW(l.actor_kind, l.actor_id)::text FROM agent.audit_log l
            WHERE l.action LIKE '%den%' AND l.inputs::text LIKE '%' || :'k2' || '%' ORDER BY l.id DESC LIMIT 1),
          '(human,erin)', 'deny: actor is by_user');
SET LOCAL ROLE act_tap_app;
SELECT agent.cancel_run(:r1, 'alice');
RESET ROLE;
SELECT is((SELECT ROW(l.actor_kind, l.actor_id)::text FROM agent.audit_log l
            WHERE l.action = 'run.finish' AND l.target_id = :'r1'
            ORDER BY l.id DESC LIMIT 1),
          '(human,alice)', 'cancel_run: actor is by_user');

-- duplicate, send_message, create_agent, delete_agent
SET LOCAL ROLE act_tap_app;
SELECT d.agent_id AS dup FROM agent.duplicate(840001, 'erin') d \gset
SELECT agent.send_message(840001, 'erin', 'hello');
SELECT agent.create_agent('ws-act-a', 'gina', 'g agent') AS gid \gset
SELECT agent.delete_agent(:dup, 'erin');
RESET ROLE;
SELECT is(pg_temp.last_actor('agent.duplicate'), 'human/erin/-', 'duplicate: actor is by_user');
SELECT is(pg_temp.last_actor('agent.create'), 'human/gina/-', 'create_agent: actor is owner_id');
SELECT is(pg_temp.last_actor('agent.delete'), 'human/erin/-', 'delete_agent: actor is by_user');
SELECT is((SELECT count(*)::int FROM agent.audit_log l
            WHERE l.txid = txid_current() AND l.action LIKE 'run.%' AND l.target_id IN
                  (SELECT x.id::text FROM agent.runs x WHERE x.agent_id = 840001 AND x.requested_by = 'erin')
              AND l.actor_id IS DISTINCT FROM 'erin'),
          0, 'send_message: the run it queues is audited with the user as actor');

-- --------------------------- by_user wins over an application's actor GUC
SET LOCAL ROLE act_tap_app;
SELECT set_config('pg_agents.actor', 'user:app-service', true);
SELECT agent."grant"(840001, 'page', 'p2', 'read', 'alice');
RESET ROLE;
SELECT is(pg_temp.last_actor('agent.grant'), 'human/alice/-',
          'the user passed is the actor, not the application''s pg_agents.actor');
SET LOCAL ROLE act_tap_app;
SELECT agent."grant"(840001, 'page', 'p3', 'read', NULL);
RESET ROLE;
SELECT is(pg_temp.last_actor('agent.grant'), 'human/app-service/-',
          'by_user NULL (an application call): pg_agents.actor as before');

-- ------------------------------------------------------ the call's bound
SET LOCAL ROLE act_tap_app;
SELECT set_config('pg_agents.actor', '', true);
SELECT agent."grant"(840001, 'page', 'p4', 'read', 'alice');
SELECT is(current_setting('pg_agents.acting_user'), '', 'the acting user ends with the call');
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access)
VALUES ('ws-act-a', 840001, 'page', 'p5', 'read');
RESET ROLE;
SELECT is((SELECT l.actor_id FROM agent.audit_log l WHERE l.target_type IS NOT NULL AND l.changes::text LIKE '%p5%'
            ORDER BY l.id DESC LIMIT 1), NULL, 'a later direct write of the transaction is not attributed to it');

-- ------------------------------------------------- nobody can forge it
SET LOCAL ROLE act_tap_app;
SELECT throws_ok($$SELECT set_config('pg_agents.acting_user', 'mallory', true)$$, '42501', NULL,
                 'the application cannot set the acting user');
SELECT throws_ok($$SET LOCAL pg_agents.acting_user = 'mallory'$$, '42501', NULL, 'nor with SET');
RESET ROLE;
SET LOCAL ROLE act_tap_nobody;
SELECT throws_ok($$SELECT set_config('pg_agents.acting_user', 'mallory', true)$$, '42501', NULL,
                 'nor a role with no grants');
SELECT throws_ok($$SELECT agent."grant"(840001, 'page', 'p6', 'read', 'mallory')$$, '42501', NULL,
                 'which cannot call the API either');
RESET ROLE;

-- ------------------------------------------------- from an agent session
-- the agent acts; the user it names is on_behalf_of, never the actor
SET LOCAL ROLE act_tap_app;
SELECT agent.set_identity('agent:840001', 'ws-act-a');
SELECT agent."grant"(840001, 'page', 'p7', 'read', 'alice');
SELECT agent.save_settings(840001, '{"instructions": "from the run"}', 'erin');
RESET ROLE;
SELECT is(pg_temp.last_actor('agent.grant'), 'agent/840001/alice',
          'agent session: the agent is the actor, the user on_behalf_of');
SELECT is(pg_temp.last_actor('agent.save_settings'), 'agent/840001/erin',
          'agent session: save_settings too');
SET LOCAL ROLE act_tap_app;
SELECT agent.set_identity('agent:840001', 'ws-act-a', NULL, 'tool', 'frank');
SELECT agent."grant"(840001, 'page', 'p8', 'read', 'alice');
RESET ROLE;
SELECT is(pg_temp.last_actor('agent.grant'), 'agent/840001/frank',
          'agent session: an on_behalf_of already set stays');

-- ------------------------------------------- second workspace untouched
SET LOCAL ROLE act_tap_app;
SELECT set_config('pg_agents.actor', '', true), set_config('pg_agents.on_behalf_of', '', true), set_config('pg_agents.workspace', 'ws-act-a', true);
SELECT throws_ok($$SELECT agent."grant"(840002, 'page', 'p1', 'read', 'erin')$$, '42704', NULL,
                 'the other workspace''s agent is unknown');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE workspace_id = 'ws-act-b' AND actor_id = 'erin'), 0,
          'and nothing is recorded there in its name');

-- ----------------------------------------------- target_id is redacted
SELECT agent._audit_event('x.tap_target', 'success', 'url',
                          'https://bob:hunter2secret@example.com/x', 'ws-act-a');
SELECT agent._audit_event('x.tap_target', 'success', 'token',
                          'sk-abcdefghijklmnopqrstuvwxyz0123456789', 'ws-act-a');
SELECT agent._audit_event('x.tap_target', 'success', 'long', repeat('x', 5000), 'ws-act-a');
SELECT agent._audit_event('x.tap_target', 'success', 'uuid', 'a3bb189e-8bf9-3888-9912-ace4e6543002', 'ws-act-a');
SELECT agent._audit_event('x.tap_target', 'success', 'plain', '42', 'ws-act-a');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE action = 'x.tap_target' AND target_id LIKE '%hunter2%'),
          0, 'a URL password in a target id is redacted');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE action = 'x.tap_target' AND target_id LIKE '%abcdefghijklmnop%'),
          0, 'a key in a target id is redacted');
SELECT ok((SELECT target_id LIKE '%[REDACTED]%' FROM agent.audit_log WHERE action = 'x.tap_target' AND target_type = 'token'),
          'with the redaction marker');
SELECT cmp_ok((SELECT octet_length(target_id) FROM agent.audit_log WHERE action = 'x.tap_target' AND target_type = 'long'),
              '<=', 2048, 'an oversized target id is cut');
SELECT is((SELECT target_id FROM agent.audit_log WHERE action = 'x.tap_target' AND target_type = 'uuid'),
          'a3bb189e-8bf9-3888-9912-ace4e6543002', 'a uuid target id is kept');
SELECT is((SELECT target_id FROM agent.audit_log WHERE action = 'x.tap_target' AND target_type = 'plain'),
          '42', 'a plain id is kept');
-- a row trigger's key: an audited table whose key holds a credential
CREATE TABLE public.act_tap_keys (k text PRIMARY KEY, workspace_id text);
SELECT agent.audit_table('public.act_tap_keys', 'tap_key');
INSERT INTO public.act_tap_keys VALUES ('postgres://u:s3cretpass@db/x', 'ws-act-a');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'tap_key' AND target_id LIKE '%s3cretpass%'),
          0, 'a row trigger''s target id is redacted too');

-- ------------------------------- triggers.conversation is versioned
SET LOCAL ROLE act_tap_app;
SELECT set_config('pg_agents.actor', '', true), set_config('pg_agents.on_behalf_of', '', true), set_config('pg_agents.workspace', 'ws-act-a', true);
SELECT agent.set_trigger(840001, '{"kind": "api", "prompt": "conv"}', 'erin') AS ctrig \gset
SELECT max(id) AS v_before FROM agent.versions WHERE agent_id = 840001 \gset
SELECT agent.set_trigger(840001, jsonb_build_object('id', :ctrig, 'conversation', 'trigger'), 'erin');
RESET ROLE;
SELECT is((SELECT conversation FROM agent.triggers WHERE id = :ctrig), 'trigger', 'set_trigger sets conversation');
SELECT is((SELECT count(*)::int FROM agent.versions WHERE agent_id = 840001 AND id > :v_before), 1,
          'set_trigger: a change of conversation writes a version');
SELECT is((SELECT s.t ->> 'conversation' FROM agent.versions v, jsonb_array_elements(v.snapshot -> 'triggers') s(t)
            WHERE v.agent_id = 840001 AND (s.t ->> 'id')::bigint = :ctrig ORDER BY v.id DESC LIMIT 1),
          'trigger', 'the snapshot holds the trigger''s conversation');
SELECT max(id) AS v_mid FROM agent.versions WHERE agent_id = 840001 \gset
SET LOCAL ROLE act_tap_app;
UPDATE agent.triggers SET conversation = 'agent' WHERE id = :ctrig;
RESET ROLE;
SELECT is((SELECT count(*)::int FROM agent.versions WHERE agent_id = 840001 AND id > :v_mid), 1,
          'a direct UPDATE of conversation writes a version');
SELECT is((SELECT l.inputs ->> 'changed' FROM agent.audit_log l WHERE l.action = 'agent.trigger.update'
            AND l.target_id = :'ctrig' ORDER BY l.id DESC LIMIT 1), 'conversation',
          'and an audit row naming the change');
SET LOCAL ROLE act_tap_app;
SELECT agent.restore_version(:v_mid, 'alice');
RESET ROLE;
SELECT is((SELECT conversation FROM agent.triggers WHERE id = :ctrig), 'trigger',
          'restore_version brings the conversation setting back');
SELECT throws_ok(format($$SELECT agent.set_trigger(840001, '{"id": %s, "conversation": "elsewhere"}', 'erin')$$, :ctrig),
                 '22023', 'trigger key "conversation" must be agent or trigger', 'a bad conversation value is refused');

SELECT * FROM finish();
ROLLBACK;
