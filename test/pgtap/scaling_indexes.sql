-- Issue 24: the indexes the C code scans directly (agents_pkey, access_pkey,
-- resource_acl_pkey, resource_acl_principal_idx, group_members_user_idx,
-- triggers_event_idx) are found by name and their leading columns checked
-- by name and type: an index recreated with another first column, another
-- type, or dropped gives a clear error naming it (SQLSTATE 55000), never a
-- crash (the code before this check segfaulted).  Then a table managed by
-- Citus (a row in pg_catalog.pg_dist_partition, simulated here without
-- Citus) is never read or written directly: the same answers come through
-- SPI, even with its index broken, and audit rows go in through an INSERT.
-- Two workspaces; the application role (membership of agents_app), a role
-- with no grants, and an agent session (agents_tool).
BEGIN;
SELECT plan(45);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.workspace = '';
SET LOCAL client_min_messages = warning;
CREATE ROLE tap_ix_app NOLOGIN IN ROLE agents_app;
CREATE ROLE tap_ix_nobody NOLOGIN;
GRANT USAGE ON SCHEMA public TO tap_ix_app;

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (4241001, 'ws-ix-a', 'ix-owner', 'a'), (4241002, 'ws-ix-b', 'ix-owner', 'b');
INSERT INTO agent.access (workspace_id, agent_id, resource_type, resource_id, access) VALUES
  ('ws-ix-a', 4241001, 'page', 'ix-p1', 'read'),
  ('ws-ix-a', 4241001, 'page', 'ix-p2', 'edit'),
  ('ws-ix-b', 4241002, 'page', 'ix-p1', 'read');
INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws-ix-a', 'ix-g', 'ix-owner');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  (NULL, 'page', 'ix-p1', 'user:ix-owner', 'read'),
  ('ws-ix-a', 'page', 'ix-p2', 'group:ix-g', 'edit');
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, resource_id) VALUES
  (4241101, 'ws-ix-a', 4241001, 'event', 'ix.happened', 'page', NULL),
  (4241102, 'ws-ix-b', 4241002, 'event', 'ix.happened', 'page', NULL);
CREATE TABLE public.tap_ix_items (id int PRIMARY KEY, workspace_id text, note text);
ALTER TABLE public.tap_ix_items OWNER TO tap_ix_app;
SELECT agent.audit_table('public.tap_ix_items', 'ix_item');

-- how many events fire_event launched for the session's workspace
CREATE FUNCTION pg_temp.fire(p_ws text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM set_config('pg_agents.workspace', p_ws, true);
  SELECT count(*) INTO n FROM agent.fire_event('ix.happened', 'page', 'ix-p1',
                                               jsonb_build_object('n', clock_timestamp()::text));
  RETURN n;
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.fire(text) TO PUBLIC;

-- ---------------- first, before any check of the transaction: agents_pkey with
-- another first column (the code before the check segfaulted here)
SAVEPOINT s;
ALTER TABLE agent.agents DROP CONSTRAINT agents_pkey CASCADE;
CREATE UNIQUE INDEX agents_pkey ON agent.agents (workspace_id, id);
SET LOCAL ROLE tap_ix_app;
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.agents_pkey" does not have the columns pg_agents needs',
                 'agents_pkey with another first column: the clear error, not a crash');
RESET ROLE;
SELECT throws_like($$SELECT agent._readable_ids(4241001, 'page', 'read')$$,
                   '%agents_pkey%does not have the columns%', 'the readable set (search) too');
ROLLBACK TO SAVEPOINT s;

-- --------------------------------------------------------- the answers, intact
SET LOCAL ROLE tap_ix_app;
SET LOCAL pg_agents.workspace = 'ws-ix-a';
SELECT is(agent.can_access(4241001, 'page', 'ix-p1'), true, 'the application: a granted page the owner may read');
SELECT is(agent.can_access(4241001, 'page', 'ix-p2', 'edit'), true, 'an edit grant, the owner''s group may edit');
SELECT is(agent.can_access(4241001, 'page', 'ix-p3'), false, 'no grant');
SELECT is((SELECT reason FROM agent.explain_access(4241001, 'page', 'ix-p1', 'read', 'manual', 'ix-owner')),
          'granted', 'a manual run reads the user''s ACL');
SELECT is(pg_temp.fire('ws-ix-a'), 1::bigint, 'fire_event finds the watcher of its workspace only');
RESET ROLE;
SELECT is(agent._readable_ids(4241001, 'page', 'read'), ARRAY['ix-p1', 'ix-p2'], 'the readable set');
SET LOCAL ROLE tap_ix_nobody;
SELECT throws_ok($$SELECT agent.readable_resources(4241001, 'page', 'read')$$, '42501', NULL,
                 'a role with no grants reads no readable set');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT is(agent.can_access(4241002, 'page', 'ix-p1'), false, 'an agent session bound to one workspace: the other workspace''s agent is not found');
RESET ROLE;

-- ------------------------------------------------- agents_pkey with another shape
SAVEPOINT s;
ALTER TABLE agent.agents DROP CONSTRAINT agents_pkey CASCADE;
CREATE UNIQUE INDEX agents_pkey ON agent.agents ((id::text));
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.agents_pkey" does not have the columns pg_agents needs',
                 'agents_pkey on an expression of another type');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
ALTER TABLE agent.agents DROP CONSTRAINT agents_pkey CASCADE;
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.agents_pkey" does not exist', 'agents_pkey dropped');
ROLLBACK TO SAVEPOINT s;

-- the error's detail and hint
SAVEPOINT s;
ALTER TABLE agent.agents DROP CONSTRAINT agents_pkey CASCADE;
CREATE UNIQUE INDEX agents_pkey ON agent.agents (workspace_id, id);
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text; h text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
  RETURN d || ' | ' || h;
END $$;
SELECT is(pg_temp.err($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$),
          'pg_agents reads agent.agents directly through a valid B-tree index "agent.agents_pkey" whose leading columns are (id bigint); its column 1 is workspace_id. | Restore the index as the install script of pg_agents defines it (or reinstall the extension).',
          'the detail names the expected columns and types, the hint the way back');
ROLLBACK TO SAVEPOINT s;

-- ------------------------------------------------- access_pkey with another shape
SAVEPOINT s;
ALTER TABLE agent.access DROP CONSTRAINT access_pkey;
CREATE UNIQUE INDEX access_pkey ON agent.access (resource_type, resource_id, agent_id);
SET LOCAL ROLE tap_ix_app;
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.access_pkey" does not have the columns pg_agents needs',
                 'access_pkey with another first column');
RESET ROLE;
SELECT throws_ok($$SELECT agent._readable_ids(4241001, 'page', 'read')$$, '55000',
                 'index "agent.access_pkey" does not have the columns pg_agents needs',
                 'and the readable set');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
ALTER TABLE agent.access DROP CONSTRAINT access_pkey;
CREATE UNIQUE INDEX access_pkey ON agent.access (agent_id, (resource_type::bytea), resource_id);
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.access_pkey" does not have the columns pg_agents needs',
                 'access_pkey with an expression of another type as its second column');
ROLLBACK TO SAVEPOINT s;

-- ------------------------------------- resource_acl and group_members indexes
SAVEPOINT s;
ALTER TABLE agent.resource_acl DROP CONSTRAINT resource_acl_pkey;
CREATE UNIQUE INDEX resource_acl_pkey ON agent.resource_acl (principal, resource_type, resource_id);
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.resource_acl_pkey" does not have the columns pg_agents needs',
                 'resource_acl_pkey with another first column');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
DROP INDEX agent.resource_acl_principal_idx;
CREATE INDEX resource_acl_principal_idx ON agent.resource_acl ((length(principal)));
SELECT throws_ok($$SELECT agent._readable_ids(4241001, 'page', 'read')$$, '55000',
                 'index "agent.resource_acl_principal_idx" does not have the columns pg_agents needs',
                 'resource_acl_principal_idx on an integer expression');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
ALTER TABLE agent.group_members ALTER COLUMN user_id TYPE varchar(200);
SELECT throws_ok($$SELECT * FROM agent.explain_access(4241001, 'page', 'ix-p2', 'edit', 'manual', 'ix-owner')$$, '55000',
                 'index "agent.group_members_user_idx" does not have the columns pg_agents needs',
                 'group_members.user_id of another type');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
DROP INDEX agent.group_members_user_idx;
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.group_members_user_idx" does not exist', 'group_members_user_idx dropped');
ROLLBACK TO SAVEPOINT s;

-- ---------------------------------------------------------- triggers_event_idx
SAVEPOINT s;
DROP INDEX agent.triggers_event_idx;
CREATE INDEX triggers_event_idx ON agent.triggers (event_name, workspace_id, resource_type, resource_id);
SET LOCAL ROLE tap_ix_app;
SELECT throws_ok($$SELECT pg_temp.fire('ws-ix-a')$$, '55000',
                 'index "agent.triggers_event_idx" does not have the columns pg_agents needs',
                 'triggers_event_idx with another first column: fire_event''s clear error');
RESET ROLE;
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
DROP INDEX agent.triggers_event_idx;
SELECT throws_ok($$SELECT pg_temp.fire('ws-ix-a')$$, '55000',
                 'index "agent.triggers_event_idx" does not exist', 'triggers_event_idx dropped');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
DROP INDEX agent.triggers_event_idx;
CREATE INDEX triggers_event_idx ON agent.triggers (workspace_id, event_name, resource_type, resource_id)
  WHERE enabled AND kind = 'mention';
SELECT throws_ok($$SELECT pg_temp.fire('ws-ix-a')$$, '55000',
                 'index "agent.triggers_event_idx" does not have the columns pg_agents needs',
                 'triggers_event_idx with a predicate that leaves out event triggers: the error, not a silent miss');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
DROP INDEX agent.triggers_event_idx;
CREATE INDEX triggers_event_idx ON agent.triggers (workspace_id, event_name, resource_type, resource_id, id)
  WHERE kind IN ('event', 'mention', 'api') AND enabled;
SELECT is(pg_temp.fire('ws-ix-a'), 1::bigint,
          'triggers_event_idx with a wider predicate and a trailing column: still read directly, the watcher found');
ROLLBACK TO SAVEPOINT s;

SAVEPOINT s;
ALTER TABLE agent.agents DROP CONSTRAINT agents_pkey CASCADE;
CREATE UNIQUE INDEX agents_pkey ON agent.agents (id, workspace_id) WHERE deleted_at IS NULL;
SELECT throws_ok($$SELECT agent.can_access(4241001, 'page', 'ix-p1')$$, '55000',
                 'index "agent.agents_pkey" does not have the columns pg_agents needs',
                 'a partial agents_pkey (it would hide deleted agents): the error');
ROLLBACK TO SAVEPOINT s;

-- restored (rolled back): the answers again, in the same transaction
SET LOCAL ROLE tap_ix_app;
SELECT is(agent.can_access(4241001, 'page', 'ix-p1'), true, 'after the rollback the check answers again');
SELECT is(pg_temp.fire('ws-ix-a'), 1::bigint, 'and fire_event finds its watcher');
RESET ROLE;

-- ------------------------------------------------- the audit trigger's writer
-- it scans no index (the executor inserts into whatever indexes the log has):
-- a log index recreated with another shape changes nothing
SAVEPOINT s;
DROP INDEX agent.audit_log_workspace_at_idx;
CREATE INDEX audit_log_workspace_at_idx ON agent.audit_log (at, workspace_id);
SET LOCAL ROLE tap_ix_app;
SELECT agent.set_identity('user:ix-owner', 'ws-ix-a');
SELECT lives_ok($$INSERT INTO public.tap_ix_items VALUES (1, 'ws-ix-a', 'one')$$, 'an audited write with a reshaped log index');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'ix_item' AND target_id = '1'), 1,
          'its audit row is written');
ROLLBACK TO SAVEPOINT s;

-- ------------------------------------------ a table managed by Citus (simulated)
-- pg_catalog.pg_dist_partition as Citus has it, a row per managed table, and
-- the relcache invalidation Citus sends when it records one
SAVEPOINT citus;
SET LOCAL allow_system_table_mods = on;
CREATE TABLE pg_catalog.pg_dist_partition (logicalrelid regclass NOT NULL, partmethod "char");
INSERT INTO pg_catalog.pg_dist_partition
  SELECT r, 'h' FROM unnest(ARRAY['agent.agents', 'agent.access', 'agent.resource_acl', 'agent.group_members',
                                  'agent.access_config', 'agent.triggers', 'agent.audit_log']::regclass[]) r;
ALTER TABLE agent.agents ALTER COLUMN name SET STATISTICS -1;
ALTER TABLE agent.access ALTER COLUMN access SET STATISTICS -1;
ALTER TABLE agent.resource_acl ALTER COLUMN access SET STATISTICS -1;
ALTER TABLE agent.group_members ALTER COLUMN group_id SET STATISTICS -1;
ALTER TABLE agent.access_config ALTER COLUMN updated_by SET STATISTICS -1;
ALTER TABLE agent.triggers ALTER COLUMN prompt SET STATISTICS -1;
ALTER TABLE agent.audit_log ALTER COLUMN summary SET STATISTICS -1;
-- the local indexes broken: a direct scan would raise the error above
ALTER TABLE agent.agents DROP CONSTRAINT agents_pkey CASCADE;
CREATE UNIQUE INDEX agents_pkey ON agent.agents (workspace_id, id);
ALTER TABLE agent.access DROP CONSTRAINT access_pkey;
CREATE UNIQUE INDEX access_pkey ON agent.access (resource_type, resource_id, agent_id);
DROP INDEX agent.group_members_user_idx;
DROP INDEX agent.resource_acl_principal_idx;
DROP INDEX agent.triggers_event_idx;
-- a row trigger sees what an INSERT writes into the log (a direct write fires none)
CREATE TABLE public.tap_ix_logged (n int);
CREATE FUNCTION public.tap_ix_log_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.tap_ix_logged VALUES (1); RETURN NEW; END $$;
CREATE TRIGGER tap_ix_log_seen BEFORE INSERT ON agent.audit_log FOR EACH ROW EXECUTE FUNCTION public.tap_ix_log_seen();

SET LOCAL ROLE tap_ix_app;
SET LOCAL pg_agents.workspace = 'ws-ix-a';
SELECT is(agent.can_access(4241001, 'page', 'ix-p1'), true, 'managed by Citus: can_access answers through SPI, not agent_not_found');
SELECT is(agent.can_access(4241001, 'page', 'ix-p2', 'edit'), true, 'the edit grant and the owner''s group');
SELECT is(agent.can_access(4241001, 'page', 'ix-p3'), false, 'no grant');
SELECT is((SELECT reason FROM agent.explain_access(4241002, 'page', 'ix-p1')), 'agent_not_found',
          'an agent of another workspace is not found through SPI either (as a missing id)');
SELECT is((SELECT reason FROM agent.explain_access(4241001, 'page', 'ix-p2', 'edit', 'manual', 'ix-owner')),
          'granted', 'a manual run reads the groups and the ACL through SPI');
SELECT is((SELECT reason FROM agent.explain_access(4249999, 'page', 'ix-p1', 'read', 'autonomous', NULL)),
          'agent_not_found', 'an unknown agent');
SELECT is(pg_temp.fire('ws-ix-a'), 1::bigint, 'fire_event finds the watcher through the query');
SELECT is(pg_temp.fire('ws-ix-b'), 1::bigint, 'and the other workspace''s, not the first''s');
RESET ROLE;
SET LOCAL pg_agents.workspace = 'ws-ix-a';
SELECT is(agent._readable_ids(4241001, 'page', 'read'), ARRAY['ix-p1', 'ix-p2'], 'the readable set through SPI');
SET LOCAL ROLE agents_tool;
SELECT is(agent.can_access(4241001, 'page', 'ix-p1'), true, 'an agent session');
RESET ROLE;
SET LOCAL ROLE tap_ix_app;
SELECT agent.set_identity('user:ix-owner', 'ws-ix-a');
SELECT lives_ok($$INSERT INTO public.tap_ix_items SELECT g, 'ws-ix-a', 'row ' || g FROM generate_series(10, 12) g$$,
                'an audited write');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM public.tap_ix_logged), 3, 'its audit rows went in through an INSERT (the row trigger saw them)');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'ix_item' AND workspace_id = 'ws-ix-a'
             AND target_id IN ('10', '11', '12')), 3, 'and they are in the log, with their workspace');
-- in a parallel worker Citus runs no query: a clear error instead of Citus's own
SAVEPOINT par;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', true);
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL pg_agents.workspace = 'ws-ix-a';
SELECT throws_ok($$SELECT count(*) FROM (VALUES ('ix-p1'), ('ix-p2')) v (id) WHERE agent.can_access(4241001, 'page', v.id)$$,
                 '0A000', 'pg_agents cannot read a table managed by Citus in a parallel worker',
                 'managed by Citus, in a parallel worker: the clear error');
ROLLBACK TO SAVEPOINT par;
SET LOCAL ROLE tap_ix_nobody;
SELECT throws_ok($$INSERT INTO agent.audit_log (actor_kind, action) VALUES ('human', 'forged')$$, '42501', NULL,
                 'a role with no grants still cannot write the log itself');
RESET ROLE;
ROLLBACK TO SAVEPOINT citus;

-- without the catalog, direct reads again
SET LOCAL ROLE tap_ix_app;
SET LOCAL pg_agents.workspace = 'ws-ix-a';
SELECT is(agent.can_access(4241001, 'page', 'ix-p1'), true, 'Citus gone: the direct path answers again');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
