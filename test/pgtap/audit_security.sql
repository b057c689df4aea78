-- Audit log security: append-only for everyone, the unprivileged role case,
-- tenant scoping (audit_events and RLS), the kill switch, retention purge.
BEGIN;
SELECT plan(41);

-- ---------------------------------------------------------------- setup
-- the application role (the documented grants: membership of agents_app)
-- and an analytics role bound to ws-tap-a only
CREATE ROLE audit_tap_app NOLOGIN IN ROLE agents_app;
CREATE ROLE audit_tap_reader NOLOGIN IN ROLE agents_reader;
SELECT agent.bind_reader('audit_tap_reader', 'ws-tap-a');
CREATE ROLE audit_tap_owner NOLOGIN;
GRANT USAGE ON SCHEMA public TO audit_tap_app, audit_tap_reader, audit_tap_owner;
CREATE TABLE public.audit_tap_items (id int PRIMARY KEY, workspace_id text, title text, secret_note text);
ALTER TABLE public.audit_tap_items OWNER TO audit_tap_app;

-- ------------------------------------------- the unprivileged role's table
SET LOCAL ROLE audit_tap_app;
SELECT lives_ok($$SELECT agent.audit_table('public.audit_tap_items', 'item')$$,
                'the table owner (no privilege on the log) can audit its table');
SELECT agent.set_identity('user:bob', 'ws-tap-a');
SELECT lives_ok($$INSERT INTO public.audit_tap_items VALUES (1, 'ws-tap-a', 'one', 'hush')$$,
                'the unprivileged role writes its table');
SELECT lives_ok($$UPDATE public.audit_tap_items SET title = 'uno' WHERE id = 1$$, 'and updates it');
SELECT throws_ok($$INSERT INTO agent.audit_log (actor_kind, action) VALUES ('human', 'forged')$$,
                 '42501', NULL, 'the role cannot insert forged audit rows');
SELECT throws_ok($$SELECT agent._audit_event('forged')$$, '42501', NULL,
                 'nor call the internal _audit_event');
SELECT throws_ok($$SELECT agent.purge_audit()$$, '42501', NULL, 'nor purge');
SELECT throws_ok($$SELECT agent._audit_backdate(ARRAY[1::bigint], '1 day')$$, '42501', NULL, 'nor backdate');
SELECT throws_ok($$UPDATE agent.audit_log SET summary = 'x'$$, '42501', NULL, 'nor update the log');
SELECT throws_ok($$DELETE FROM agent.audit_log$$, '42501', NULL, 'nor delete from it');
SELECT throws_ok($$SELECT agent.audit_table('agent.agents')$$, '42501', 'must be owner of table agent.agents',
                 'nor audit somebody else''s table');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'item'), 2,
          'its two changes are in the log, and it reads them (its workspace)');
SELECT is((SELECT changes -> 'secret_note' FROM agent.audit_log WHERE target_type = 'item' AND action = 'insert'),
          '"[REDACTED]"'::jsonb, 'redacted column');
RESET ROLE;
SELECT is((SELECT db_user FROM agent.audit_log WHERE target_type = 'item' AND action = 'update'),
          session_user::text, 'db_user is the session user');
SELECT is((SELECT actor_id FROM agent.audit_log WHERE target_type = 'item' AND action = 'update'),
          'bob', 'actor from the identity GUC');

-- ----------------------------------------------- append-only for the owner
SELECT throws_ok($$UPDATE agent.audit_log SET summary = 'x' WHERE target_type = 'item'$$, '42501',
                 'agent.audit_log is append-only', 'superuser: UPDATE refused');
SELECT throws_ok($$DELETE FROM agent.audit_log WHERE target_type = 'item'$$, '42501',
                 'agent.audit_log is append-only', 'superuser: DELETE refused');
SELECT throws_ok($$TRUNCATE agent.audit_log$$, '42501', 'agent.audit_log is append-only',
                 'superuser: TRUNCATE refused');
ALTER TABLE agent.audit_log OWNER TO audit_tap_owner;
SET LOCAL ROLE audit_tap_owner;
SELECT throws_ok($$UPDATE agent.audit_log SET summary = 'x' WHERE target_type = 'item'$$, '42501', NULL,
                 'table owner: UPDATE refused');
SELECT throws_ok($$DELETE FROM agent.audit_log WHERE target_type = 'item'$$, '42501', NULL,
                 'table owner: DELETE refused');
SELECT throws_ok($$TRUNCATE agent.audit_log$$, '42501', NULL, 'table owner: TRUNCATE refused');
GRANT UPDATE, DELETE, TRUNCATE ON agent.audit_log TO audit_tap_owner;
SELECT throws_ok($$DELETE FROM agent.audit_log WHERE target_type = 'item'$$, '42501',
                 'agent.audit_log is append-only', 'table owner re-granting itself DELETE: still refused');
SELECT throws_ok($$TRUNCATE agent.audit_log$$, '42501', 'agent.audit_log is append-only',
                 'table owner re-granting itself TRUNCATE: still refused');
RESET ROLE;
ALTER TABLE agent.audit_log OWNER TO CURRENT_USER;

-- ------------------------------------------------------------- scoping
SELECT agent.set_identity('user:carol', 'ws-tap-b');
INSERT INTO public.audit_tap_items VALUES (2, 'ws-tap-b', 'two', NULL);
SELECT agent._audit_event('x.tap_scope', p_workspace_id => 'ws-tap-b');
SELECT is((SELECT count(*)::int FROM agent.audit_events(target_type => 'item')), 1,
          'audit_events: only the caller''s workspace');
SELECT is((SELECT target_id FROM agent.audit_events(target_type => 'item')), '2', 'the ws-tap-b row');
SELECT is((SELECT count(*)::int FROM agent.audit_events(action => 'x.tap_scope')), 1, 'action filter');
SELECT is((SELECT count(*)::int FROM agent.audit_events(actor_kind => 'agent')), 0, 'actor_kind filter');
SELECT is((SELECT count(*)::int FROM agent.audit_events(target_type => 'item', lim => 1, since => now() - interval '1 hour')),
          1, 'since and limit');
SELECT agent.set_identity('user:carol', NULL);
SELECT is((SELECT count(*)::int FROM agent.audit_events()), 0, 'no workspace identity: nothing matches');
SET LOCAL ROLE audit_tap_reader;
SELECT agent.set_identity('user:dave', 'ws-tap-a');
SELECT is((SELECT array_agg(DISTINCT workspace_id) FROM agent.audit_log), ARRAY['ws-tap-a'],
          'RLS: an analytics role selecting the log sees its workspace only');
SELECT is((SELECT sum(events)::int FROM agent.audit_summary WHERE action IN ('insert', 'update')), 2,
          'audit_summary goes through RLS too');
SELECT agent.set_identity('user:dave', 'ws-tap-b');
SELECT is((SELECT count(*)::int FROM agent.audit_log), 0,
          'RLS: naming a workspace it is not bound to opens nothing');
SELECT agent.set_identity('user:dave', NULL);
SELECT is((SELECT count(*)::int FROM agent.audit_log), 0, 'RLS: no workspace, no rows');
RESET ROLE;

-- ---------------------------------------------------------- kill switch
SET LOCAL pg_agents.audit_enabled = off;
INSERT INTO public.audit_tap_items VALUES (3, 'ws-tap-a', 'three', NULL);
SELECT agent._audit_event('x.tap_killed');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE (target_type = 'item' AND target_id = '3')
                                                       OR action = 'x.tap_killed'), 0,
          'audit_enabled = off: neither trigger nor _audit_event write');
SET LOCAL pg_agents.audit_enabled = on;
UPDATE public.audit_tap_items SET title = 'tres' WHERE id = 3;
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'item' AND target_id = '3'), 1,
          'audit_enabled = on again: recorded');

-- ---------------------------------------------------------- retention
SELECT agent._audit_backdate(array_agg(id), '400 days') FROM agent.audit_log WHERE target_type = 'item' AND target_id = '1';
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'item' AND at < now() - interval '399 days'), 2,
          '_audit_backdate aged the two rows of item 1');
SELECT throws_ok($$UPDATE agent.audit_log SET summary = 'x' WHERE target_type = 'item'$$, '42501', NULL,
                 'backdating opened nothing for anybody else');
SET LOCAL pg_agents.audit_retention_days = 0;
SELECT is(agent.purge_audit(), 0::bigint, 'retention 0 keeps everything');
SET LOCAL pg_agents.audit_retention_days = 365;
SELECT is(agent.purge_audit(), 2::bigint, 'purge removes exactly the rows past the retention period');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'item'), 2, 'younger rows stay');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'audit.purge' AND inputs @> '{"deleted": 2}'),
          'the purge itself is audited');
SELECT throws_ok($$DELETE FROM agent.audit_log WHERE target_type = 'item'$$, '42501', NULL,
                 'after the purge the log is append-only again');

SELECT * FROM finish();
ROLLBACK;
