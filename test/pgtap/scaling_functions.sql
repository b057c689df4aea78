-- Scale-out readiness of the functions (issue 24, docs/scaling.md): read
-- from the catalog (pg_proc.prosrc of schema agent), without Citus.
--
--   1. No LANGUAGE sql function reads or writes a distributed table: Citus
--      cannot run a non-inlined SQL function's parameterised statements on
--      a distributed table (citus issue #1179); such functions are plpgsql.
--   2. No FOR UPDATE / FOR SHARE statement on a distributed table locks by
--      id alone: its WHERE names workspace_id (Citus routes a locking
--      statement to one shard only by the distribution column).
--
-- The distributed tables are those agent.distribution_plan() names
-- 'distributed'; while that function does not exist, the list below.
-- Known exceptions are listed explicitly (each with its reason) and must
-- still be offenders, so the list cannot rot.  Both checks are shown to
-- fail on planted functions.  Then the rewritten functions keep their
-- tenant behaviour: two workspaces, the application role, a role with no
-- grants, an agent session.
BEGIN;
SELECT plan(23);

CREATE ROLE sf_app NOLOGIN IN ROLE agents_app;   -- the application
CREATE ROLE sf_nobody NOLOGIN;                   -- no grants at all

-- ---------------------------------------------------------------- the tables
CREATE TEMP TABLE sf_distributed (t text PRIMARY KEY);
DO $$
BEGIN
  IF pg_catalog.to_regprocedure('agent.distribution_plan()') IS NOT NULL THEN
    EXECUTE $q$INSERT INTO sf_distributed
               SELECT DISTINCT c.relname FROM agent.distribution_plan() d
                 JOIN pg_catalog.pg_class c ON c.oid = d.table_name
                WHERE d.kind = 'distributed'$q$;
  ELSE
    -- until agent.distribution_plan() exists (keys): every table whose
    -- workspace_id is NOT NULL, per /work/wt/CITUS.md
    INSERT INTO sf_distributed
    SELECT c.relname FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = 'workspace_id' AND a.attnotnull
     WHERE n.nspname = 'agent' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
       -- role bindings are cluster configuration (a reference table)
       AND c.relname <> 'reader_workspaces'
    UNION
    SELECT 'audit_log';
  END IF;
END
$$;
-- views of schema agent over a distributed table are read like one
DO $$
BEGIN
  FOR i IN 1..3 LOOP   -- views over views
    INSERT INTO sf_distributed
    SELECT DISTINCT v.relname
      FROM pg_catalog.pg_rewrite rw
      JOIN pg_catalog.pg_class v ON v.oid = rw.ev_class AND v.relkind = 'v'
      JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = rw.oid
      JOIN pg_catalog.pg_class t ON t.oid = d.refobjid AND t.oid <> v.oid
     WHERE v.relnamespace = 'agent'::regnamespace AND t.relnamespace = 'agent'::regnamespace
       AND t.relname IN (SELECT x.t FROM sf_distributed x)
    ON CONFLICT DO NOTHING;
  END LOOP;
END
$$;
SELECT ok((SELECT count(*) FROM sf_distributed WHERE t IN ('agents', 'access', 'shares', 'triggers', 'runs', 'event_dedup')) = 6,
          'the distributed tables include agents, access, shares, triggers, runs and event_dedup');
SELECT ok(EXISTS (SELECT 1 FROM sf_distributed WHERE t = 'run_metrics'), 'a view over runs (run_metrics) is checked like a distributed table');

-- ---------------------------------------------------------------- the checks
-- a function body without its comments and the contents of its string
-- literals ('agent.runs'::regclass names a table, it does not read it)
CREATE FUNCTION pg_temp.sf_code(src text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT pg_catalog.regexp_replace(pg_catalog.regexp_replace(src, '--[^\n]*', '', 'g'), '''[^'']*''', '''''', 'g')
$$;
-- SQL-language functions of schema agent whose body names a distributed table
CREATE FUNCTION pg_temp.sf_sql_offenders() RETURNS TABLE (fn text, tbl text)
LANGUAGE sql STABLE AS $$
  SELECT p.oid::pg_catalog.regprocedure::text, d.t
    FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    JOIN pg_catalog.pg_language l ON l.oid = p.prolang
    JOIN sf_distributed d
      ON pg_temp.sf_code(p.prosrc) ~* ('\magent\.' || d.t || '\M')
   WHERE n.nspname = 'agent' AND l.lanname = 'sql'
   ORDER BY 1, 2
$$;
-- statements (comments stripped, split at ';') of SQL and plpgsql functions
-- of schema agent that lock rows of a distributed table without naming
-- workspace_id
CREATE FUNCTION pg_temp.sf_lock_offenders() RETURNS TABLE (fn text, stmt text)
LANGUAGE sql STABLE AS $$
  SELECT p.oid::pg_catalog.regprocedure::text, pg_catalog.left(pg_catalog.regexp_replace(pg_catalog.btrim(s.stmt), '\s+', ' ', 'g'), 200)
    FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    JOIN pg_catalog.pg_language l ON l.oid = p.prolang,
         pg_catalog.regexp_split_to_table(pg_temp.sf_code(p.prosrc), ';') AS s(stmt)
   WHERE n.nspname = 'agent' AND l.lanname IN ('sql', 'plpgsql')
     AND s.stmt ~* '\mFOR\s+(UPDATE|NO\s+KEY\s+UPDATE|SHARE|KEY\s+SHARE)\M'
     AND s.stmt !~* '\mworkspace_id\M'
     AND EXISTS (SELECT 1 FROM sf_distributed d WHERE s.stmt ~* ('\magent\.' || d.t || '\M'))
   ORDER BY 1, 2
$$;

-- Known exceptions: what truly cannot change (docs/scaling.md, "Known not to
-- work").  Each must still be an offender.
CREATE TEMP TABLE sf_sql_exceptions (fn text PRIMARY KEY, why text NOT NULL);
CREATE TEMP TABLE sf_lock_exceptions (fn text PRIMARY KEY, why text NOT NULL);
-- (none)

SELECT is((SELECT pg_catalog.array_agg(o.fn || ' reads ' || o.tbl ORDER BY o.fn, o.tbl)
             FROM pg_temp.sf_sql_offenders() o
            WHERE o.fn NOT IN (SELECT fn FROM sf_sql_exceptions)),
          NULL,
          'no LANGUAGE sql function of schema agent reads or writes a distributed table (citus #1179: rewrite it in plpgsql)');
SELECT is((SELECT pg_catalog.array_agg(o.fn || ': ' || o.stmt ORDER BY o.fn, o.stmt)
             FROM pg_temp.sf_lock_offenders() o
            WHERE o.fn NOT IN (SELECT fn FROM sf_lock_exceptions)),
          NULL,
          'no FOR UPDATE/SHARE statement on a distributed table locks without naming workspace_id');
SELECT is((SELECT pg_catalog.array_agg(e.fn ORDER BY e.fn) FROM sf_sql_exceptions e
            WHERE e.fn NOT IN (SELECT o.fn FROM pg_temp.sf_sql_offenders() o)),
          NULL, 'every listed SQL-function exception is still one (else remove it from the list)');
SELECT is((SELECT pg_catalog.array_agg(e.fn ORDER BY e.fn) FROM sf_lock_exceptions e
            WHERE e.fn NOT IN (SELECT o.fn FROM pg_temp.sf_lock_offenders() o)),
          NULL, 'every listed FOR UPDATE exception is still one (else remove it from the list)');

-- ---------------------------------------------------------------- the checks fail
-- planted offenders (rolled back with the test)
CREATE FUNCTION agent.sf_planted_sql(p_id bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$ SELECT count(*) FROM agent.runs r WHERE r.id = p_id $$;
CREATE FUNCTION agent.sf_planted_sql_write(p_id bigint) RETURNS void
LANGUAGE sql VOLATILE AS $$ UPDATE AGENT.Triggers SET enabled = false WHERE id = p_id $$;
CREATE FUNCTION agent.sf_planted_lock(p_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM agent.agents a WHERE a.id = p_id FOR UPDATE;
END
$$;
CREATE FUNCTION agent.sf_planted_share(p_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  -- workspace_id only in a comment does not count
  PERFORM 1 FROM agent.runs r
   WHERE r.id = (SELECT q.id FROM agent.runs q WHERE q.id = p_id FOR NO KEY UPDATE SKIP LOCKED);
END
$$;
-- look-alikes that pass: an inlinable SQL helper on no table, a SQL function
-- naming a table that is not distributed or only a prefix of one's name, a
-- lock naming workspace_id, a lock of a table that is not distributed
CREATE FUNCTION agent.sf_fine_sql(p integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT p + 1 $$;
CREATE FUNCTION agent.sf_fine_sql_literal() RETURNS regclass
LANGUAGE sql STABLE AS $$ SELECT 'agent.runs'::regclass -- agent.runs in a comment
$$;
SET LOCAL check_function_bodies = off;
CREATE FUNCTION agent.sf_fine_sql_prefix(p bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$ SELECT p FROM agent.runs_of_nothing WHERE false $$;
RESET check_function_bodies;
CREATE FUNCTION agent.sf_fine_lock(p_ws text, p_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM agent.agents a WHERE a.workspace_id = p_ws AND a.id = p_id FOR UPDATE;
  PERFORM 1 FROM agent.worker_control c WHERE c.id FOR UPDATE;
END
$$;

SELECT is((SELECT pg_catalog.array_agg(o.fn || ' ' || o.tbl ORDER BY o.fn, o.tbl)
             FROM pg_temp.sf_sql_offenders() o WHERE o.fn LIKE 'agent.sf\_%'),
          ARRAY['agent.sf_planted_sql(bigint) runs', 'agent.sf_planted_sql_write(bigint) triggers'],
          'the SQL-function check names the planted reader and writer (any case), not the look-alikes (a regclass literal, a comment, a longer name)');
SELECT is((SELECT pg_catalog.array_agg(o.fn ORDER BY o.fn)
             FROM pg_temp.sf_lock_offenders() o WHERE o.fn LIKE 'agent.sf\_%'),
          ARRAY['agent.sf_planted_lock(bigint)', 'agent.sf_planted_share(bigint)'],
          'the lock check names FOR UPDATE and FOR NO KEY UPDATE by id alone, not a lock naming workspace_id nor one of a local table');
SELECT ok(EXISTS (SELECT 1 FROM pg_temp.sf_lock_offenders() o
                   WHERE o.fn = 'agent.sf_planted_lock(bigint)' AND o.stmt LIKE '%agent.agents a WHERE a.id = p_id FOR UPDATE%'),
          'the lock check quotes the offending statement');
-- an exception that is no longer one is reported
INSERT INTO sf_sql_exceptions VALUES ('agent.sf_fine_sql(integer)', 'planted');
SELECT is((SELECT pg_catalog.array_agg(e.fn ORDER BY e.fn) FROM sf_sql_exceptions e
            WHERE e.fn NOT IN (SELECT o.fn FROM pg_temp.sf_sql_offenders() o)),
          ARRAY['agent.sf_fine_sql(integer)'], 'a stale exception is reported');
DELETE FROM sf_sql_exceptions WHERE why = 'planted';
DROP FUNCTION agent.sf_planted_sql(bigint), agent.sf_planted_sql_write(bigint), agent.sf_planted_lock(bigint),
              agent.sf_planted_share(bigint), agent.sf_fine_sql(integer), agent.sf_fine_sql_prefix(bigint),
              agent.sf_fine_sql_literal(),
              agent.sf_fine_lock(text, bigint);

-- ---------------------------------------------------------------- behaviour kept
-- the functions rewritten from SQL to plpgsql keep their labels
SELECT is((SELECT pg_catalog.array_agg(p.proname || ':' || p.provolatile::text || ':' || p.prosecdef::text
                                        || ':' || coalesce(pg_catalog.array_to_string(p.proconfig, ','), '')
                                        ORDER BY p.proname)
             FROM pg_catalog.pg_proc p
            WHERE p.pronamespace = 'agent'::regnamespace
              AND p.proname IN ('_user_level', '_snapshot', '_user_reads', 'visible_agents')),
          ARRAY['_snapshot:s:false:search_path=pg_catalog, pg_temp',
                '_user_level:s:false:search_path=pg_catalog, pg_temp',
                '_user_reads:s:false:search_path=pg_catalog, pg_temp',
                'visible_agents:s:true:search_path=pg_catalog, pg_temp'],
          'rewritten functions: same volatility, security and search_path');

-- two workspaces; the same user owns an agent in each, and a share in sf-b
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (8240001, 'sf-a', 'u-sf', 'sf a1'),
  (8240011, 'sf-b', 'u-sf', 'sf b1'),
  (8240012, 'sf-b', 'u-other', 'sf b2');
INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by) VALUES
  ('sf-b', 8240012, 'u-sf', 'edit', 'u-other');

-- agent._snapshot builds agent._trigger_json's object inline
INSERT INTO agent.triggers (workspace_id, agent_id, kind, event_name, prompt, filter)
VALUES ('sf-b', 8240011, 'event', 'sf.thing', 'p', '{"all": [{"property": "priority", "op": "eq", "value": "high"}]}');
SELECT is(agent._snapshot(8240011) -> 'triggers',
          (SELECT jsonb_agg(agent._trigger_json(t)) FROM agent.triggers t WHERE t.agent_id = 8240011),
          'a snapshot holds each trigger as agent._trigger_json writes it');

SET LOCAL ROLE sf_app;
SET LOCAL pg_agents.workspace = 'sf-a';
SELECT is((SELECT pg_catalog.array_agg(v.agent_id ORDER BY v.agent_id) FROM agent.visible_agents('u-sf') v),
          ARRAY[8240001::bigint], 'sf-a: visible_agents lists only sf-a''s agent');
SELECT ok(agent.user_can('u-sf', 8240001, 'share'), 'sf-a: the owner may share its agent');
SELECT ok(NOT agent.user_can('u-sf', 8240012, 'chat'), 'sf-a: a share in sf-b does not count (agent of another workspace)');
SELECT throws_ok($$SELECT agent.share(8240011, 'user:u-x', 'interact', 'u-sf')$$, '42704',
                 'agent 8240011 does not exist', 'sf-a: sharing sf-b''s agent is "does not exist"');
SELECT lives_ok($$SELECT agent.grant(8240001, 'page', 'p-sf', 'read', 'u-sf')$$, 'sf-a: grant on its own agent');
SET LOCAL pg_agents.workspace = 'sf-b';
SELECT is((SELECT pg_catalog.array_agg(v.agent_id || ':' || v.level ORDER BY v.agent_id) FROM agent.visible_agents('u-sf') v),
          ARRAY['8240011:full', '8240012:edit'], 'sf-b: visible_agents lists the owned and the shared agent');
SELECT is(agent.activity_scope('u-sf', 8240012), 'own_manual', 'sf-b: an edit share sees its own manual runs');
SELECT throws_ok($$SELECT agent.grant(8240001, 'page', 'p-sf', 'read', 'u-sf')$$, '42704',
                 'agent 8240001 does not exist', 'sf-b: granting on sf-a''s agent is "does not exist"');
RESET ROLE;

-- a superuser session bound to no workspace takes the agent's own
RESET pg_agents.workspace;
SELECT is(agent.activity_scope('u-sf', 8240012), 'own_manual', 'no session workspace (superuser): the agent''s own workspace');

SET LOCAL ROLE sf_nobody;
SET LOCAL pg_agents.workspace = 'sf-a';
SELECT throws_ok($$SELECT * FROM agent.visible_agents('u-sf')$$, '42501',
                 'permission denied for function visible_agents', 'no grant: visible_agents');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SET LOCAL pg_agents.actor = 'agent:8240001';
SET LOCAL pg_agents.workspace = 'sf-a';
SELECT throws_ok($$SELECT agent.share(8240001, 'user:u-x', 'interact', 'u-sf')$$, '42501',
                 'permission denied for function share', 'an agent session cannot share');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
