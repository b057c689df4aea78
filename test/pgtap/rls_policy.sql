-- Allowlist policies: every command x regime x grant state, plan caching,
-- FORCE for a non-superuser owner, grants effective at the next statement.
BEGIN;
SELECT plan(284);

-- ---------------------------------------------------------------- fixtures
CREATE ROLE rls_t_owner NOLOGIN;
CREATE ROLE rls_t_app NOLOGIN;
CREATE ROLE rls_t_bypass NOLOGIN BYPASSRLS;
CREATE SCHEMA rls_t AUTHORIZATION rls_t_owner;
GRANT USAGE ON SCHEMA rls_t TO rls_t_app, agents_tool, rls_t_bypass;
SET LOCAL ROLE rls_t_owner;
CREATE TABLE rls_t.docs (id text PRIMARY KEY, title text NOT NULL, body text NOT NULL);
GRANT ALL ON rls_t.docs TO rls_t_app, agents_tool, rls_t_bypass;
RESET ROLE;

-- one agent per grant state, all owned by u1 in workspace ws-rls; state s
-- is about document d_<s>
CREATE TEMP TABLE states (st text PRIMARY KEY, aid bigint, sel text, ins text, upd text, del text);
INSERT INTO states VALUES
 ('none',        980101, 'filtered', 'denied',  'filtered', 'filtered'),
 ('read',        980102, 'allowed',  'denied',  'filtered', 'filtered'),
 ('edit',        980103, 'allowed',  'allowed', 'allowed',  'allowed'),
 ('ws_read',     980104, 'allowed',  'denied',  'filtered', 'filtered'),
 ('ws_edit',     980105, 'allowed',  'allowed', 'allowed',  'allowed'),
 ('ws_grant_ro', 980106, 'allowed',  'denied',  'filtered', 'filtered'),
 ('ws_other',    980107, 'filtered', 'denied',  'filtered', 'filtered'),
 ('owner_none',  980108, 'filtered', 'denied',  'filtered', 'filtered'),
 ('owner_read',  980109, 'allowed',  'denied',  'filtered', 'filtered'),
 ('group',       980110, 'allowed',  'allowed', 'allowed',  'allowed'),
 ('suspended',   980111, 'filtered', 'denied',  'filtered', 'filtered'),
 ('deleted',     980112, 'filtered', 'denied',  'filtered', 'filtered');
INSERT INTO agent.agents (id, workspace_id, owner_id, name)
  SELECT aid, 'ws-rls', 'u1', 'rls ' || st FROM states;
INSERT INTO rls_t.docs SELECT 'd_' || st, 'title ' || st, 'body ' || st FROM states;
INSERT INTO rls_t.docs VALUES ('d_other', 'other', 'nobody is granted this');
-- grants
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
 (980102, 'page', 'd_read', 'read'),
 (980103, 'page', 'd_edit', 'edit'),
 (980104, 'workspace_shared', '*', 'read'),
 (980105, 'workspace_shared', '*', 'edit'),
 (980106, 'workspace_shared', '*', 'read'),
 (980107, 'workspace_shared', '*', 'edit'),
 (980108, 'page', 'd_owner_none', 'edit'),
 (980109, 'page', 'd_owner_read', 'edit'),
 (980110, 'page', 'd_group', 'edit'),
 (980111, 'page', 'd_suspended', 'edit'),
 (980112, 'page', 'd_deleted', 'edit');
-- the owner's ACL
INSERT INTO agent.group_members (group_id, user_id) VALUES ('g-rls', 'u1');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
 (NULL,       'page', 'd_none',       'user:u1',   'edit'),
 (NULL,       'page', 'd_read',       'user:u1',   'edit'),
 (NULL,       'page', 'd_edit',       'user:u1',   'edit'),
 ('ws-rls',   'page', 'd_ws_read',    'workspace', 'read'),
 ('ws-rls',   'page', 'd_ws_edit',    'workspace', 'edit'),
 ('ws-rls',   'page', 'd_ws_grant_ro','workspace', 'edit'),
 ('ws-other', 'page', 'd_ws_other',   'workspace', 'edit'),
 (NULL,       'page', 'd_owner_none', 'user:u2',   'edit'),
 (NULL,       'page', 'd_owner_read', 'user:u1',   'read'),
 (NULL,       'page', 'd_group',      'group:g-rls','edit'),
 (NULL,       'page', 'd_suspended',  'user:u1',   'edit'),
 (NULL,       'page', 'd_deleted',    'user:u1',   'edit'),
 (NULL,       'page', 'd_other',      'user:u1',   'edit');
UPDATE agent.agents SET status = 'suspended' WHERE id = 980111;
UPDATE agent.agents SET deleted_at = now() WHERE id = 980112;
-- runs: an autonomous one per agent, and a manual one of agent 980101
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status)
  SELECT aid + 1000000, 'ws-rls', aid, 'autonomous', 'event', 'running' FROM states;
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status, requested_by)
  VALUES (99980101, 'ws-rls', 980101, 'manual', 'chat', 'running', 'u1');

SELECT lives_ok($$SELECT agent.enable_allowlist('rls_t.docs', 'page', 'id')$$, 'enable_allowlist on a table');
SELECT ok((SELECT relrowsecurity AND relforcerowsecurity FROM pg_class WHERE oid = 'rls_t.docs'::regclass),
          'row level security is enabled and forced');
SELECT is((SELECT count(*)::int FROM pg_policy WHERE polrelid = 'rls_t.docs'::regclass AND polname LIKE 'pg_agents_allowlist_%'),
          5, 'four restrictive policies and a pass-through base policy');

-- Runs one command as role p_role with an identity, then undoes it.
-- Returns allowed (1 row), filtered (0 rows, no error) or denied (42501).
CREATE FUNCTION pg_temp.rls_try(p_cmd text, p_role text, p_actor text, p_run bigint, p_doc text)
RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  n   bigint;
  res text;
BEGIN
  BEGIN
    IF p_cmd = 'INSERT' THEN
      DELETE FROM rls_t.docs WHERE id = p_doc;
    END IF;
    PERFORM set_config('pg_agents.actor', coalesce(p_actor, ''), true);
    PERFORM set_config('pg_agents.run_id', coalesce(p_run::text, ''), true);
    PERFORM set_config('role', p_role, true);
    CASE p_cmd
      WHEN 'SELECT' THEN
        EXECUTE 'SELECT count(*) FROM rls_t.docs WHERE id = $1' INTO n USING p_doc;
      WHEN 'INSERT' THEN
        EXECUTE 'INSERT INTO rls_t.docs (id, title, body) VALUES ($1, ''new'', ''new'')' USING p_doc;
        GET DIAGNOSTICS n = ROW_COUNT;
      WHEN 'UPDATE' THEN
        EXECUTE 'UPDATE rls_t.docs SET body = body || ''!'' WHERE id = $1' USING p_doc;
        GET DIAGNOSTICS n = ROW_COUNT;
      WHEN 'DELETE' THEN
        EXECUTE 'DELETE FROM rls_t.docs WHERE id = $1' USING p_doc;
        GET DIAGNOSTICS n = ROW_COUNT;
    END CASE;
    RAISE EXCEPTION USING ERRCODE = 'P0R01', MESSAGE = CASE WHEN n = 1 THEN 'allowed' ELSE 'filtered' END;
  EXCEPTION
    WHEN SQLSTATE 'P0R01' THEN res := SQLERRM;
    WHEN insufficient_privilege THEN res := 'denied';
  END;
  RETURN res;
END
$f$;

-- --------------------------------------------- the matrix: agent sessions
SELECT is(pg_temp.rls_try(c.cmd, 'rls_t_app', 'agent:' || s.aid, s.aid + 1000000, 'd_' || s.st),
          CASE c.cmd WHEN 'SELECT' THEN s.sel WHEN 'INSERT' THEN s.ins WHEN 'UPDATE' THEN s.upd ELSE s.del END,
          format('autonomous agent, %s, grant state %s', c.cmd, s.st))
  FROM states s CROSS JOIN (VALUES (1, 'SELECT'), (2, 'INSERT'), (3, 'UPDATE'), (4, 'DELETE')) c(o, cmd)
 ORDER BY s.aid, c.o;

-- the same under the worker's tool role
SELECT is(pg_temp.rls_try(c.cmd, 'agents_tool', 'agent:' || s.aid, s.aid + 1000000, 'd_' || s.st),
          CASE c.cmd WHEN 'SELECT' THEN s.sel WHEN 'INSERT' THEN s.ins WHEN 'UPDATE' THEN s.upd ELSE s.del END,
          format('agents_tool role, %s, grant state %s', c.cmd, s.st))
  FROM states s CROSS JOIN (VALUES (1, 'SELECT'), (2, 'INSERT'), (3, 'UPDATE'), (4, 'DELETE')) c(o, cmd)
 ORDER BY s.aid, c.o;

-- ------------------- non-agent sessions and manual runs are unaffected
SELECT is(pg_temp.rls_try(c.cmd, 'rls_t_app', r.actor, r.run, 'd_' || s.st), 'allowed',
          format('%s session, %s, grant state %s', r.label, c.cmd, s.st))
  FROM states s
 CROSS JOIN (VALUES (1, 'SELECT'), (2, 'INSERT'), (3, 'UPDATE'), (4, 'DELETE')) c(o, cmd)
 CROSS JOIN (VALUES (1, 'no identity', NULL, NULL::bigint),
                    (2, 'manual run (user identity)', 'user:u1', 99980101),
                    (3, 'system', 'system', NULL)) r(o, label, actor, run)
 ORDER BY r.o, s.aid, c.o;

-- what an agent sees is exactly its readable set
SET LOCAL ROLE rls_t_app;
SELECT set_config('pg_agents.actor', 'agent:980102', true);
SELECT is((SELECT array_agg(id ORDER BY id) FROM rls_t.docs), ARRAY['d_read'], 'a read grant shows one row');
SELECT set_config('pg_agents.actor', 'agent:980105', true);
SELECT is((SELECT array_agg(id ORDER BY id) FROM rls_t.docs),
          ARRAY['d_ws_edit', 'd_ws_grant_ro', 'd_ws_read'], 'workspace_shared shows what is shared with the workspace, and no other workspace''s');
SELECT set_config('pg_agents.actor', 'agent:980101', true);
SELECT is((SELECT count(*)::int FROM rls_t.docs), 0, 'no grant: no row, not even through count(*)');
SELECT set_config('pg_agents.actor', 'agent:424242424', true);
SELECT is((SELECT count(*)::int FROM rls_t.docs), 0, 'an unknown agent sees nothing');
SELECT set_config('pg_agents.actor', 'user:u1', true);
SELECT is((SELECT count(*)::int FROM rls_t.docs), 13, 'a user session sees every row');
-- a manual run of an agent acting under the agent identity is still filtered
SELECT set_config('pg_agents.actor', 'agent:980101', true);
SELECT set_config('pg_agents.run_id', '99980101', true);
SELECT is((SELECT count(*)::int FROM rls_t.docs), 0, 'the agent identity is always filtered, whatever the run');
SELECT set_config('pg_agents.run_id', '', true);

-- ------------------------------ grants take effect at the next statement
SELECT set_config('pg_agents.actor', 'agent:980101', true);
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_none'), 0, 'before the grant: invisible');
RESET ROLE;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (980101, 'page', 'd_none', 'read')
  ON CONFLICT DO NOTHING;
SET LOCAL ROLE rls_t_app;
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_none'), 1, 'granted: visible at the next statement');
RESET ROLE;
UPDATE agent.resource_acl SET principal = 'user:u2' WHERE resource_id = 'd_none';
SET LOCAL ROLE rls_t_app;
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_none'), 0, 'owner loses the page: invisible at the next statement');
RESET ROLE;
UPDATE agent.resource_acl SET principal = 'user:u1' WHERE resource_id = 'd_none';
UPDATE agent.agents SET status = 'suspended' WHERE id = 980101;
SET LOCAL ROLE rls_t_app;
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_none'), 0, 'suspended: invisible at the next statement');
RESET ROLE;
UPDATE agent.agents SET status = 'active' WHERE id = 980101;
DELETE FROM agent.access WHERE agent_id = 980101;
SET LOCAL ROLE rls_t_app;
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_none'), 0, 'revoked: invisible at the next statement');
RESET ROLE;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (980101, 'workspace_shared', '*', 'read');
SET LOCAL ROLE rls_t_app;
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_other'), 0, 'workspace_shared: a page not shared stays invisible');
RESET ROLE;
-- (a "workspace" share names its workspace: one with workspace_id NULL shares with none, docs/tenants.md)
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES ('ws-rls', 'page', 'd_other', 'workspace', 'read');
SET LOCAL ROLE rls_t_app;
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_other'), 1, 'workspace_shared: sharing a page with the workspace shows it at the next statement');
RESET ROLE;
DELETE FROM agent.resource_acl WHERE resource_id = 'd_other' AND principal = 'workspace';
SET LOCAL ROLE rls_t_app;
SELECT is((SELECT count(*)::int FROM rls_t.docs WHERE id = 'd_other'), 0, 'workspace_shared: unsharing hides it at the next statement');

-- ---------------------------------------------------- cached plans
SELECT set_config('pg_agents.actor', '', true);
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE rls_count AS SELECT count(*)::int FROM rls_t.docs;
CREATE TEMP TABLE rls_prep_out0 AS EXECUTE rls_count;
SELECT is((SELECT count FROM rls_prep_out0), 13, 'a prepared generic plan made as non-agent sees every row');
CREATE FUNCTION pg_temp.rls_count() RETURNS int LANGUAGE plpgsql AS $f$
DECLARE n int; BEGIN SELECT count(*) INTO n FROM rls_t.docs; RETURN n; END $f$;
SELECT is(pg_temp.rls_count(), 13, 'a plpgsql function planned as non-agent sees every row');
SELECT set_config('pg_agents.actor', 'agent:980102', true);
SELECT is(pg_temp.rls_count(), 1, 'the same cached function run as an agent is filtered');
SELECT set_config('pg_agents.actor', 'agent:980105', true);
SELECT is(pg_temp.rls_count(), 3, 'the same cached function run as another agent is filtered for that agent');
SELECT set_config('pg_agents.actor', '', true);
SELECT is(pg_temp.rls_count(), 13, 'and back to non-agent: every row again');
SELECT set_config('pg_agents.actor', 'agent:980102', true);
CREATE TEMP TABLE rls_prep_out AS EXECUTE rls_count;
SELECT is((SELECT count FROM rls_prep_out), 1, 'a prepared generic plan made as non-agent is re-planned for an agent');
DEALLOCATE rls_count;

-- ------------------------------------------------------ plans (EXPLAIN)
CREATE FUNCTION pg_temp.rls_plan(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE l text; out text := ''; BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || q LOOP out := out || l || E'\n'; END LOOP; RETURN out; END $f$;
SELECT set_config('pg_agents.actor', '', true);
SELECT unalike(pg_temp.rls_plan($$SELECT * FROM rls_t.docs WHERE id = 'd_read'$$), '%_allowlist_%',
              'a non-agent session plans no policy at all');
SELECT set_config('pg_agents.actor', 'agent:980102', true);
SELECT matches(pg_temp.rls_plan($$SELECT * FROM rls_t.docs WHERE body LIKE '%x%'$$),
               'agent._allowlist_has\(docs.id, ''page''::text, ''read''::text\)',
               'an agent session tests membership of its readable set');
SELECT set_config('enable_seqscan', 'off', true);
SELECT matches(pg_temp.rls_plan($$SELECT * FROM rls_t.docs WHERE body LIKE '%x%'$$),
               'Index Cond: \(docs.id = ANY \(agent._allowlist_ids_text\(''page''::text, ''read''::text\)\)\)',
               'the planner may probe the id index with the readable set');
SELECT set_config('enable_seqscan', 'on', true);
-- the query's own LIKE and @@ (issue 33): a condition with a leakproof twin is
-- tested as the twin, so that it may start from a text or trigram index; one
-- whose twin would still call a function that is not leakproof, or whose
-- constant the twin refuses, stays as written, after the policy
SELECT matches(pg_temp.rls_plan($$SELECT * FROM rls_t.docs WHERE body LIKE 'body%'$$),
               'agent\."like"\(docs\.body, ''body%''::text\)',
               'an agent''s LIKE with a constant pattern is tested as the leakproof agent.like');
SELECT is((SELECT array_agg(id) FROM rls_t.docs WHERE body LIKE 'body%'), ARRAY['d_read'],
          'and finds only the readable rows');
SELECT matches(pg_temp.rls_plan($$SELECT * FROM rls_t.docs WHERE body ILIKE '%BODY%'$$),
               'agent\."ilike"\(docs\.body, ''%BODY%''::text\)',
               'an agent''s ILIKE is tested as agent.ilike');
SELECT unalike(pg_temp.rls_plan($$SELECT * FROM rls_t.docs WHERE body LIKE 'body\'$$), '%agent."like"%',
               'a pattern that LIKE would raise on stays LIKE (agent.like would answer false)');
SELECT matches(pg_temp.rls_plan($$SELECT * FROM rls_t.docs WHERE to_tsvector('simple', body) @@ to_tsquery('simple', 'body | nobody')$$),
               '\(to_tsvector\(''simple''::regconfig, docs\.body\) @@ ',
               '@@ over a function that is not leakproof stays @@');
SELECT is((SELECT array_agg(id) FROM rls_t.docs WHERE to_tsvector('simple', body) @@ to_tsquery('simple', 'body | nobody')),
          ARRAY['d_read'], 'and finds only the readable rows');
CREATE FUNCTION pg_temp.rls_peek(id text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $f$
BEGIN PERFORM set_config('rls_t.seen', current_setting('rls_t.seen', true) || ' ' || id, true); RETURN true; END $f$;
SELECT set_config('rls_t.seen', '', true);
SELECT is((SELECT array_agg(id) FROM rls_t.docs WHERE body LIKE '%o%' AND pg_temp.rls_peek(id)), ARRAY['d_read'],
          'LIKE beside a cheap function that is not leakproof: only the readable row');
SELECT is(current_setting('rls_t.seen'), ' d_read',
          'that function sees no row outside the readable set (the twin moves ahead of the policy, it does not)');
-- the kept set is searched in place: a statement that makes other sets kept
-- between two rows (the backend keeps 8) replaces its entry, and the test
-- then builds its set again instead of reading freed memory
CREATE FUNCTION pg_temp.rls_churn(id text) RETURNS boolean LANGUAGE plpgsql AS $f$
DECLARE rt text; md text; BEGIN
  FOREACH rt IN ARRAY ARRAY['page', 'collection', 'skill', 'agent'] LOOP
    FOREACH md IN ARRAY ARRAY['read', 'edit'] LOOP
      PERFORM agent._allowlist_ids_text(rt, md), agent._allowlist_ids_int8(rt, md), agent._allowlist_ids_uuid(rt, md);
    END LOOP;
  END LOOP;
  RETURN true; END $f$;
SELECT is((SELECT array_agg(id ORDER BY id) FROM rls_t.docs WHERE body LIKE '%o%' AND pg_temp.rls_churn(id)),
          ARRAY['d_read'], 'sets kept and replaced between the rows of a statement: the same rows');

-- ------------------------------------ FORCE: a non-superuser table owner
SET LOCAL ROLE rls_t_owner;
SELECT set_config('pg_agents.actor', 'agent:980102', true);
SELECT is((SELECT array_agg(id) FROM rls_t.docs), ARRAY['d_read'], 'FORCE: the table owner acting as an agent is filtered');
SELECT set_config('pg_agents.actor', '', true);
SELECT is((SELECT count(*)::int FROM rls_t.docs), 13, 'the table owner not acting as an agent sees every row');
-- the documented caveat: BYPASSRLS roles (and superusers) bypass RLS
SET LOCAL ROLE rls_t_bypass;
SELECT set_config('pg_agents.actor', 'agent:980102', true);
SELECT is((SELECT count(*)::int FROM rls_t.docs), 13, 'caveat: a BYPASSRLS role bypasses the allowlist (never run tool SQL under one)');
RESET ROLE;
SELECT set_config('pg_agents.actor', '', true);
SELECT ok((SELECT NOT rolsuper AND NOT rolbypassrls FROM pg_roles WHERE rolname = 'agents_tool'),
          'agents_tool is neither superuser nor BYPASSRLS');

-- ------------------------------------------------ readable_resources API
SELECT is((SELECT array_agg(r ORDER BY r) FROM agent.readable_resources(980109, 'page') r), ARRAY['d_owner_read'],
          'readable_resources read');
SELECT is((SELECT count(*)::int FROM agent.readable_resources(980109, 'page', 'edit')), 0,
          'readable_resources edit is bounded by the owner''s read-only ACL');
SELECT throws_ok($$SELECT agent.readable_resources(980102, 'page', 'write')$$, '22023', 'invalid mode "write"',
                 'a bad mode is an error');
SELECT set_config('pg_agents.actor', 'agent:980102', true);
SELECT throws_ok($$SELECT agent.readable_resources(980103, 'page')$$, '42501',
                 'an agent session can only list its own resources', 'an agent cannot list another agent''s resources');
SELECT set_config('pg_agents.actor', '', true);
-- agreement with agent.can_access, when the access module is installed
CREATE FUNCTION pg_temp.rls_can_access_check() RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE n int;
BEGIN
  IF to_regprocedure('agent.can_access(bigint,text,text,text,text,text)') IS NULL THEN
    RETURN QUERY SELECT skip('agent.can_access is not installed', 1);
    RETURN;
  END IF;
  EXECUTE $q$SELECT count(*)::int FROM states s, rls_t.docs d, (VALUES ('read'), ('edit')) m(mode)
              WHERE agent.can_access(s.aid, 'page', d.id, m.mode, 'autonomous', NULL)
                    IS DISTINCT FROM EXISTS (SELECT 1 FROM agent.readable_resources(s.aid, 'page', m.mode) r
                                              WHERE r = d.id)$q$ INTO n;
  RETURN QUERY SELECT is(n, 0, 'readable_resources agrees with agent.can_access on every agent, page and mode');
END
$f$;
SELECT pg_temp.rls_can_access_check();

SELECT * FROM finish();
ROLLBACK;
