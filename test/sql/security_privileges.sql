-- The privilege matrix (docs/security.md, "Roles"): for every function and
-- relation of the extension, what each role of the model and a role with
-- nothing but PUBLIC may do.  An object added without a deliberate line in
-- sql/src/990_privileges.sql changes this output.
SET client_min_messages = warning;
CREATE ROLE sec_priv_nobody NOLOGIN;
CREATE ROLE sec_priv_app NOLOGIN IN ROLE agents_app;
CREATE ROLE sec_priv_executor NOLOGIN IN ROLE agents_executor;
CREATE ROLE sec_priv_reader NOLOGIN IN ROLE agents_reader;
RESET client_min_messages;

-- functions: X = may execute
SELECT p.oid::regprocedure AS function,
       CASE WHEN p.prosecdef THEN 'definer' ELSE '' END AS sec,
       CASE WHEN has_function_privilege('sec_priv_nobody', p.oid, 'EXECUTE') THEN 'X' ELSE '-' END AS public,
       CASE WHEN has_function_privilege('sec_priv_app', p.oid, 'EXECUTE') THEN 'X' ELSE '-' END AS app,
       CASE WHEN has_function_privilege('sec_priv_executor', p.oid, 'EXECUTE') THEN 'X' ELSE '-' END AS executor,
       CASE WHEN has_function_privilege('sec_priv_reader', p.oid, 'EXECUTE') THEN 'X' ELSE '-' END AS reader,
       CASE WHEN has_function_privilege('agents_tool', p.oid, 'EXECUTE') THEN 'X' ELSE '-' END AS tool
  FROM pg_proc p
 WHERE p.pronamespace = 'agent'::regnamespace
 ORDER BY p.oid::regprocedure::text COLLATE "C";

-- relations: s = select, i = insert, u = update (any column), d = delete, t = truncate
CREATE FUNCTION pg_temp.privs(r name, c oid) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN has_table_privilege(r, c, 'SELECT') THEN 's' ELSE '-' END
      || CASE WHEN has_table_privilege(r, c, 'INSERT') THEN 'i' ELSE '-' END
      || CASE WHEN has_any_column_privilege(r, c, 'UPDATE') THEN 'u' ELSE '-' END
      || CASE WHEN has_table_privilege(r, c, 'DELETE') THEN 'd' ELSE '-' END
      || CASE WHEN has_table_privilege(r, c, 'TRUNCATE') THEN 't' ELSE '-' END
$$;
SELECT c.oid::regclass AS relation, c.relkind AS kind,
       CASE WHEN c.relrowsecurity THEN 'rls' ELSE '' END AS rls,
       pg_temp.privs('sec_priv_nobody', c.oid) AS public,
       pg_temp.privs('sec_priv_app', c.oid) AS app,
       pg_temp.privs('sec_priv_executor', c.oid) AS executor,
       pg_temp.privs('sec_priv_reader', c.oid) AS reader,
       pg_temp.privs('agents_tool', c.oid) AS tool
  FROM pg_class c
 WHERE c.relnamespace = 'agent'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND NOT c.relispartition
 ORDER BY c.oid::regclass::text COLLATE "C";

-- the partitions of agent.audit_log (named by month): nothing for anybody,
-- row-level security on (only the parent is read)
SELECT count(*) >= 5 AS partitions, bool_and(c.relrowsecurity) AS rls,
       bool_and(pg_temp.privs('sec_priv_nobody', c.oid) || pg_temp.privs('sec_priv_app', c.oid)
                || pg_temp.privs('sec_priv_executor', c.oid) || pg_temp.privs('sec_priv_reader', c.oid)
                || pg_temp.privs('agents_tool', c.oid) = repeat('-', 25)) AS nothing_granted
  FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
 WHERE h.inhparent = 'agent.audit_log'::regclass;

-- the roles themselves: never superuser, never BYPASSRLS, no login
SELECT rolname, rolsuper, rolbypassrls, rolcanlogin, rolcreaterole, rolcreatedb
  FROM pg_roles WHERE rolname IN ('agents_app', 'agents_executor', 'agents_reader', 'agents_tool')
 ORDER BY rolname;

-- every SECURITY DEFINER function pins search_path = pg_catalog, pg_temp
-- (pg_temp last: no temporary object shadows what it resolves): none listed
SELECT p.oid::regprocedure AS unpinned_definer
  FROM pg_proc p
 WHERE p.pronamespace = 'agent'::regnamespace AND p.prosecdef
   AND NOT coalesce(p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false)
 ORDER BY 1::text COLLATE "C";

-- the roles the test made
DROP ROLE sec_priv_nobody, sec_priv_app, sec_priv_executor, sec_priv_reader;
