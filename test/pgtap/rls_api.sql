-- Allowlist API: registration, enable/disable and what they restore, id
-- types, application policies kept, relations, custom ACL functions, errors.
BEGIN;
SELECT plan(68);

CREATE ROLE rls_a_app NOLOGIN IN ROLE agents_app;
CREATE SCHEMA rls_a;
GRANT USAGE ON SCHEMA rls_a TO rls_a_app;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (980201, 'ws-rls-a', 'u1', 'api agent'), (980202, 'ws-rls-a', 'u1', 'other agent');
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status)
  VALUES (99980201, 'ws-rls-a', 980201, 'autonomous', 'event', 'running');

-- Runs a query as rls_a_app acting as an agent (or not); returns its first column as text.
CREATE FUNCTION pg_temp.as_agent(p_actor text, q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE r text;
BEGIN
  PERFORM set_config('pg_agents.actor', coalesce(p_actor, ''), true);
  PERFORM set_config('pg_agents.run_id', CASE WHEN p_actor = 'agent:980201' THEN '99980201' ELSE '' END, true);
  PERFORM set_config('role', 'rls_a_app', true);
  EXECUTE q INTO r;
  PERFORM set_config('role', 'none', true);
  PERFORM set_config('pg_agents.actor', '', true);
  RETURN r;
END
$f$;

-- ------------------------------------------------------------ registration
CREATE TABLE rls_a.pages (id bigint PRIMARY KEY, title text, body text, links jsonb, parent bigint, related bigint[]);
GRANT ALL ON rls_a.pages TO rls_a_app;
SELECT lives_ok($$SELECT agent.register_resource_table('page', 'rls_a.pages', 'id', 'title', 'body')$$,
                'register_resource_table');
SELECT is((SELECT resource_type || ' ' || id_column || ' ' || title_column || ' ' || body_column
             FROM agent.resource_tables WHERE tbl = 'rls_a.pages'::regclass),
          'page id title body', 'the registration is recorded');
SELECT ok(has_table_privilege('agents_tool', 'rls_a.pages', 'SELECT') AND has_table_privilege('agents_tool', 'rls_a.pages', 'UPDATE')
          AND NOT has_table_privilege('agents_tool', 'rls_a.pages', 'DELETE')
          AND has_schema_privilege('agents_tool', 'rls_a', 'USAGE'),
          'registration grants agents_tool SELECT and UPDATE (not DELETE) and the schema');
SELECT lives_ok($$SELECT agent.register_resource_table('page', 'rls_a.pages', 'id', 'body', 'title')$$,
                'registering again replaces it');
SELECT is((SELECT title_column::text FROM agent.resource_tables WHERE tbl = 'rls_a.pages'::regclass), 'body', 'replaced');
CREATE TABLE rls_a.more_pages (id text PRIMARY KEY, title text, body text);
SELECT agent.register_resource_table('page', 'rls_a.more_pages', 'id', 'title', 'body');
SELECT is((SELECT count(*)::int FROM agent.resource_tables WHERE resource_type = 'page'), 2, 'a type may span several tables');
SELECT lives_ok($$SELECT agent.unregister_resource_table('rls_a.more_pages')$$, 'unregister a table');
SELECT ok(NOT has_table_privilege('agents_tool', 'rls_a.more_pages', 'SELECT'), 'unregistering revokes agents_tool''s access');
SELECT throws_ok($$SELECT agent.register_resource_table('page', 'rls_a.pages', 'id', 'nope', 'body')$$,
                 '42703', 'column "nope" of relation "rls_a.pages" does not exist', 'unknown column');
SELECT throws_ok($$SELECT agent.register_resource_table('workspace_shared', 'rls_a.pages', 'id', 'title', 'body')$$,
                 '22023', 'invalid resource type "workspace_shared"', 'workspace_shared is not a resource table type');
CREATE VIEW rls_a.v AS SELECT * FROM rls_a.pages;
SELECT throws_ok($$SELECT agent.register_resource_table('view', 'rls_a.v', 'id', 'title', 'body')$$,
                 '42809', '"rls_a.v" is not a table', 'a view is not a resource table');
SELECT throws_ok($$SELECT agent.unregister_resource_table('rls_a.more_pages')$$, '42704',
                 'table "rls_a.more_pages" is not a registered resource table', 'unregister a table not registered');

-- ---------------------------------------------------- enable and disable
SELECT lives_ok($$SELECT agent.enable_allowlist('rls_a.pages', 'page', 'id')$$, 'enable_allowlist');
SELECT throws_ok($$SELECT agent.enable_allowlist('rls_a.pages', 'page', 'id')$$, '42710',
                 'allowlist is already enabled on table "rls_a.pages"', 'enabling twice is an error');
SELECT throws_ok($$SELECT agent.enable_allowlist('rls_a.v', 'page', 'id')$$, '42809', NULL, 'not on a view');
SELECT throws_ok($$SELECT agent.disable_allowlist('rls_a.v')$$, '42704',
                 'allowlist is not enabled on table "rls_a.v"', 'disable where not enabled');
SELECT lives_ok($$SELECT agent.disable_allowlist('rls_a.pages')$$, 'disable_allowlist');
SELECT ok((SELECT NOT relrowsecurity AND NOT relforcerowsecurity FROM pg_class WHERE oid = 'rls_a.pages'::regclass),
          'disable restores a table without RLS');
SELECT is((SELECT count(*)::int FROM pg_policy WHERE polrelid = 'rls_a.pages'::regclass), 0, 'and drops every policy');
SELECT is((SELECT count(*)::int FROM agent.allowlist_tables WHERE tbl = 'rls_a.pages'::regclass), 0, 'and the registry row');

-- an application with its own RLS: enabling never widens what it allows
CREATE TABLE rls_a.tickets (id text PRIMARY KEY, tenant text NOT NULL, body text);
GRANT ALL ON rls_a.tickets TO rls_a_app;
INSERT INTO rls_a.tickets VALUES ('t1', 'acme', 'one'), ('t2', 'acme', 'two'), ('t3', 'globex', 'three');
ALTER TABLE rls_a.tickets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON rls_a.tickets USING (tenant = current_setting('app.tenant', true));
SELECT agent.enable_allowlist('rls_a.tickets', 'collection', 'id');
SELECT is((SELECT base_policy FROM agent.allowlist_tables WHERE tbl = 'rls_a.tickets'::regclass),
          'pg_agents_allowlist_owner', 'RLS on but not forced: a pass-through for the owner only');
SELECT set_config('app.tenant', 'acme', true);
SELECT is(pg_temp.as_agent(NULL, 'SELECT string_agg(id, '','' ORDER BY id) FROM rls_a.tickets'), 't1,t2',
          'a non-agent session still sees only what the application policy allows');
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES (980201, 'collection', 't2'), (980201, 'collection', 't3');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal) VALUES ('collection', 't2', 'user:u1'), ('collection', 't3', 'user:u1');
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT string_agg(id, '','' ORDER BY id) FROM rls_a.tickets'), 't2',
          'an agent session gets the intersection of the application policy and its grants');
SELECT is((SELECT count(*)::int FROM rls_a.tickets), 3, 'the owner (superuser here) is unaffected');
SELECT agent.disable_allowlist('rls_a.tickets');
SELECT ok((SELECT relrowsecurity AND NOT relforcerowsecurity FROM pg_class WHERE oid = 'rls_a.tickets'::regclass),
          'disable keeps the application''s RLS on, not forced, as it was');
SELECT is((SELECT array_agg(polname::text) FROM pg_policy WHERE polrelid = 'rls_a.tickets'::regclass), ARRAY['tenant'],
          'and keeps the application''s policy');

-- the documented COPY caveat: PostgreSQL refuses COPY FROM under RLS
GRANT pg_read_server_files TO rls_a_app;
SELECT agent.enable_allowlist('rls_a.tickets', 'collection', 'id');
SET LOCAL ROLE rls_a_app;
SELECT throws_ok($$COPY rls_a.tickets FROM '/dev/null'$$, '0A000', 'COPY FROM not supported with row-level security',
                 'caveat: COPY FROM into an allowlisted table is refused for roles subject to RLS');
RESET ROLE;
SELECT agent.disable_allowlist('rls_a.tickets');

-- ------------------------------------------------------------- id types
SELECT agent.enable_allowlist('rls_a.pages', 'page', 'id');
INSERT INTO rls_a.pages (id, title, body) VALUES (1, 't1', 'b1'), (17, 't17', 'b17'), (5000, 'secret', 'secret body');
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES
  (980201, 'page', '1'), (980201, 'page', '017'), (980201, 'page', 'p1'),
  (980201, 'page', '99999999999999999999'), (980201, 'page', '-0'), (980201, 'page', '17 ');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal)
  SELECT 'page', r, 'user:u1' FROM unnest(ARRAY['1', '017', 'p1', '99999999999999999999', '-0', '17 ', '17', '5000']) r;
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT string_agg(id::text, '','' ORDER BY id) FROM rls_a.pages'), '1',
          'bigint ids: only canonical text forms match; stray grants are ignored, never an error');
CREATE TABLE rls_a.counters (id int4 PRIMARY KEY, name text);
GRANT ALL ON rls_a.counters TO rls_a_app;
INSERT INTO rls_a.counters VALUES (40001, 'granted'), (40002, 'not granted'), (-7, 'granted negative');
SELECT agent.enable_allowlist('rls_a.counters', 'collection', 'id');
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES
  (980201, 'collection', '40001'), (980201, 'collection', '3000000000'), (980201, 'collection', '-7');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal)
  SELECT resource_type, resource_id, 'user:u1' FROM agent.access
   WHERE agent_id = 980201 AND resource_type = 'collection' AND resource_id IN ('40001', '3000000000', '-7');
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT string_agg(name, '','' ORDER BY id) FROM rls_a.counters'),
          'granted negative,granted',
          'integer ids: compared through the bigint array (an id beyond the column''s range matches nothing, never an error)');
SELECT ok((SELECT indexable FROM agent.allowlist_tables WHERE tbl = 'rls_a.counters'::regclass), 'integer ids are indexable');
CREATE TABLE rls_a.files (id uuid PRIMARY KEY, name text);
GRANT ALL ON rls_a.files TO rls_a_app;
INSERT INTO rls_a.files VALUES ('6f1c5a34-9a8e-4c1f-9a55-2d2f1f0b7a01', 'granted'), ('0b4b8f0e-1111-4c1f-9a55-2d2f1f0b7a02', 'not granted');
SELECT agent.enable_allowlist('rls_a.files', 'skill', 'id');
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES
  (980201, 'skill', '6f1c5a34-9a8e-4c1f-9a55-2d2f1f0b7a01'), (980201, 'skill', '0B4B8F0E-1111-4C1F-9A55-2D2F1F0B7A02'),
  (980201, 'skill', 'not-a-uuid');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal)
  SELECT resource_type, resource_id, 'user:u1' FROM agent.access WHERE agent_id = 980201 AND resource_type = 'skill';
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT string_agg(name, '','') FROM rls_a.files'), 'granted',
          'uuid ids: compared as uuids, canonical lowercase only');
SELECT ok((SELECT indexable FROM agent.allowlist_tables WHERE tbl = 'rls_a.files'::regclass), 'uuid ids are indexable');
CREATE TABLE rls_a.notes (id numeric PRIMARY KEY, body text);
GRANT ALL ON rls_a.notes TO rls_a_app;
INSERT INTO rls_a.notes VALUES (1, 'granted'), (2, 'not granted');
SET LOCAL client_min_messages = warning;
SELECT agent.enable_allowlist('rls_a.notes', 'agent', 'id');
RESET client_min_messages;
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES (980201, 'agent', '1');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal) VALUES ('agent', '1', 'user:u1');
SELECT ok((SELECT NOT indexable FROM agent.allowlist_tables WHERE tbl = 'rls_a.notes'::regclass),
          'other id types are compared as text');
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT string_agg(body, '','') FROM rls_a.notes'), 'granted',
          'and are filtered just the same');

-- ------------------------------------------------------------ relations
UPDATE rls_a.pages SET parent = 5000, related = ARRAY[17, 1, 5000], links = '["1", 5000, "x", null]' WHERE id = 1;
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES (980201, 'page', '17') ON CONFLICT DO NOTHING;
SELECT lives_ok($$SELECT agent.register_relation('page', 'rls_a.pages', 'parent', 'page')$$, 'register a scalar relation');
SELECT agent.register_relation('page', 'rls_a.pages', 'related', 'page');
SELECT agent.register_relation('page', 'rls_a.pages', 'links', 'page');
SELECT throws_ok($$SELECT agent.register_relation('page', 'rls_a.v', 'parent', 'page')$$, '42809', NULL,
                 'relations only on tables');
SELECT throws_ok($$SELECT agent.register_relation('page', 'rls_a.pages', 'nope', 'page')$$, '42703', NULL,
                 'relations need an existing column');
SELECT throws_ok($$SELECT * FROM agent.follow_relation('page', '1', 'nope')$$, '42704',
                 'relation "nope" of resource type "page" does not exist', 'following an unknown relation');
SELECT is(pg_temp.as_agent(NULL, $$SELECT string_agg(x, ',') FROM agent.follow_relation('page', '1', 'related') x$$),
          '17,1,5000', 'a non-agent session follows every target');
SELECT is(pg_temp.as_agent('agent:980201', $$SELECT coalesce(string_agg(x, ','), '') FROM agent.follow_relation('page', '1', 'parent') x$$),
          '', 'scalar relation to a non-granted page: nothing');
SELECT is(pg_temp.as_agent('agent:980201', $$SELECT string_agg(x, ',') FROM agent.follow_relation('page', '1', 'related') x$$),
          '17,1', 'array relation: granted targets only, in order');
SELECT is(pg_temp.as_agent('agent:980201', $$SELECT string_agg(x, ',') FROM agent.follow_relation('page', '1', 'links') x$$),
          '1', 'jsonb relation: granted targets only');
SELECT is((SELECT array_agg(output->>'reason' ORDER BY seq) FROM agent.run_steps WHERE run_id = 99980201 AND kind = 'denied'),
          ARRAY['not_granted', 'not_granted', 'not_granted', 'not_granted'],
          'each cut target is a denied step of the run (parent, related, links x2)');
SELECT is((SELECT count(*)::int FROM agent.run_steps WHERE run_id = 99980201 AND name = 'follow_relation'
              AND output ? 'resource_type' AND output - 'resource_type' - 'reason' = '{}'::jsonb), 4,
          'a denied step holds the type and the reason, nothing of the target');
SELECT is((SELECT array_agg(seq ORDER BY seq) FROM agent.run_steps WHERE run_id = 99980201), ARRAY[1, 2, 3, 4],
          'steps are numbered in order');
SELECT ok((SELECT count(*) >= 4 FROM agent.audit_log WHERE action = 'agent.follow_relation' AND status = 'denied'
              AND error_code = 'not_granted'), 'cut targets are audited as denials');
SELECT is(pg_temp.as_agent('agent:980201', $$SELECT coalesce(string_agg(x, ','), '') FROM agent.follow_relation('page', '5000', 'related') x$$),
          '', 'nothing is followed out of a page the agent may not read');
UPDATE agent.agents SET status = 'suspended' WHERE id = 980201;
SELECT is(pg_temp.as_agent('agent:980201', $$SELECT coalesce(string_agg(x, ','), '') FROM agent.follow_relation('page', '1', 'related') x$$),
          '', 'a suspended agent follows nothing');
SELECT is((SELECT output->>'reason' FROM agent.run_steps WHERE run_id = 99980201 ORDER BY seq DESC LIMIT 1),
          'agent_suspended', 'and the denied step says why');
UPDATE agent.agents SET status = 'active' WHERE id = 980201;
SELECT is(pg_temp.as_agent('agent:980202', $$SELECT coalesce(string_agg(x, ','), '') FROM agent.follow_relation('page', '1', 'related') x$$),
          '', 'another agent without grants: nothing');
CREATE TEMP TABLE steps_before AS SELECT count(*) AS n FROM agent.run_steps WHERE run_id = 99980201;
SELECT set_config('pg_agents.actor', 'agent:980202', true);
SELECT set_config('pg_agents.run_id', '99980201', true);
SELECT set_config('role', 'rls_a_app', true);
SELECT count(*) FROM agent.follow_relation('page', '1', 'related');
RESET ROLE;
SELECT set_config('pg_agents.actor', '', true);
SELECT set_config('pg_agents.run_id', '', true);
SELECT is((SELECT count(*) FROM agent.run_steps WHERE run_id = 99980201), (SELECT n FROM steps_before),
          'no denied step lands in a run of another agent');

-- ---------------------------------------------------- custom ACL function
CREATE FUNCTION rls_a.acl(user_id text, resource_type text, resource_id text, mode text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN user_id IS NULL THEN resource_id = '17'           -- 17 is shared with the workspace
              ELSE user_id = 'u1' AND resource_id IN ('1', '17') AND mode = 'read' END $$;
DELETE FROM agent.access WHERE agent_id = 980201 AND resource_type = 'page' AND resource_id = '17';
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES (980201, 'workspace_shared', '*');
CREATE FUNCTION pg_temp.ids() RETURNS text LANGUAGE plpgsql AS $f$
DECLARE r text; BEGIN SELECT string_agg(id::text, ',' ORDER BY id) INTO r FROM rls_a.pages; RETURN r; END $f$;
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT pg_temp.ids()'), '1', 'default ACL, a cached plan: the grants');
SELECT agent.set_acl_function('rls_a.acl(text,text,text,text)'::regprocedure);
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT pg_temp.ids()'), '1,17',
          'set_acl_function invalidates the cached plan: the custom function''s workspace share shows');
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT string_agg(id::text, '','' ORDER BY id) FROM rls_a.pages'), '1,17',
          'custom ACL function: direct grants it allows, and what it shares with the workspace');
SELECT is((SELECT array_agg(r ORDER BY r) FROM agent.readable_resources(980201, 'page') r), ARRAY['1'],
          'readable_resources lists the direct grants the custom function allows');
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT count(*)::text FROM rls_a.pages WHERE id = 5000'), '0',
          'custom ACL function: the secret stays out');
SELECT agent.set_acl_function(NULL);
SELECT is(pg_temp.as_agent('agent:980201', 'SELECT string_agg(id::text, '','' ORDER BY id) FROM rls_a.pages'), '1',
          'back to the default ACL: the default rules again');

-- ---------------------------------------------- dropped tables are forgotten
SELECT agent.register_resource_table('skill', 'rls_a.files', 'id', 'name', 'name');
DROP TABLE rls_a.files;
SELECT is((SELECT count(*)::int FROM agent.allowlist_tables WHERE tbl::text LIKE '%files%')
        + (SELECT count(*)::int FROM agent.resource_tables WHERE tbl::text LIKE '%files%'), 0,
          'a dropped table leaves no registration behind');
DROP VIEW rls_a.v;
DROP TABLE rls_a.pages;
SELECT is((SELECT count(*)::int FROM agent.relations WHERE from_type = 'page'), 0, 'nor relations');

-- --------------------------------------------- pg_dump keeps registrations
SELECT ok((SELECT count(*) = 3 FROM pg_extension e, unnest(e.extconfig) c
            WHERE e.extname = 'pg_agents'
              AND c IN ('agent.resource_tables'::regclass, 'agent.allowlist_tables'::regclass, 'agent.relations'::regclass)),
          'registries are extension configuration tables (dumped by pg_dump)');
SELECT has_function('agent', 'readable_resources', ARRAY['bigint', 'text', 'text'], 'readable_resources exists');

-- ------------------------------------ the leakproof matches (docs/allowlist.md)
SELECT is((SELECT array_agg(proname::text ORDER BY proname) FROM pg_proc
            WHERE pronamespace = 'agent'::regnamespace AND proleakproof),
          ARRAY['ilike', 'like', 'ts_match'], 'agent.ts_match, agent.like and agent.ilike are the only LEAKPROOF functions');
SELECT is((SELECT count(*)::int FROM (VALUES ('a & b'), ('a | zz'), ('!zz'), ('a <-> b'), ('b <-> a'), ('a:*'), ('zz'), ('a & !b')) q(t)
            WHERE agent.ts_match(to_tsvector('simple', 'a b c'), q.t::tsquery)
                  IS DISTINCT FROM (to_tsvector('simple', 'a b c') @@ q.t::tsquery)), 0,
          'agent.ts_match answers as @@');
SELECT is(agent.ts_match(to_tsvector('simple', 'a'),
                         (repeat('(a & ', 300) || 'a' || repeat(')', 300))::tsquery), false,
          'a query nested deeper than 256 levels matches nothing, and raises nothing');
SELECT is((SELECT count(*)::int FROM (VALUES ('a%'), ('%c'), ('_b_'), ('%x%'), ('a\%'), ('A%')) p(t)
            WHERE agent.like('abc', p.t) IS DISTINCT FROM ('abc' LIKE p.t)
               OR agent.ilike('abc', p.t) IS DISTINCT FROM ('abc' ILIKE p.t)), 0,
          'agent.like and agent.ilike answer as LIKE and ILIKE');
SELECT is(agent.like('a\', 'a\') OR agent.ilike('a\', 'a\'), false,
          'a pattern ending with the escape character matches nothing, and raises nothing');
SELECT is(agent.like(repeat('a', 400), repeat('%a', 300)), false,
          'a pattern with more than 256 % matches nothing');
SELECT throws_ok($$SELECT 'a\' LIKE 'a\'$$, '22025', NULL, 'not vacuous: LIKE itself raises on that pattern');

SELECT * FROM finish();
ROLLBACK;
