-- ===========================================================================
-- The roles of the privilege model (as in sql/src/010_core.sql).
-- ===========================================================================
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT * FROM (VALUES
      ('agents_app', 'pg_agents: the application; may call the API that takes user ids on trust (by_user, requested_by, user_id) and write the documented tables.'),
      ('agents_executor', 'pg_agents: an external executor; may claim runs, record usage and finish them.'),
      ('agents_reader', 'pg_agents: analytics; reads the audit and run views of the workspace named by pg_agents.workspace.'))
      AS v(name, note)
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r.name) THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', r.name);
      EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', r.name, r.note);
    END IF;
  END LOOP;
END
$$;
