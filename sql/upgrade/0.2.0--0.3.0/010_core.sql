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

-- ---------------------------------------------------------------------------
-- The tenant boundary (docs/security.md, "Tenants")
-- ---------------------------------------------------------------------------
-- Every API call works inside the session's workspace, pg_agents.workspace
-- (set by the application per request, or defaulted per database with ALTER
-- DATABASE ... SET).  An object of another workspace named in an argument is
-- treated as if it did not exist.  A superuser session that sets no
-- workspace is not bound to one (maintenance, DBA tooling); any other
-- session that sets none is refused.  is_superuser reflects the session's
-- role (SET ROLE included), not the owner of a SECURITY DEFINER function.
CREATE FUNCTION agent._session_workspace() RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF ws IS NULL AND pg_catalog.current_setting('is_superuser') <> 'on' THEN
    RAISE EXCEPTION 'pg_agents.workspace is not set'
      USING ERRCODE = '42501',
            DETAIL = 'Every call of the pg_agents API works inside the session''s workspace.',
            HINT = 'SET LOCAL pg_agents.workspace = ''<workspace id>'' for each request (or ALTER DATABASE ... SET pg_agents.workspace for a single-tenant database).';
  END IF;
  RETURN ws;
END
$$;
COMMENT ON FUNCTION agent._session_workspace() IS
  'Internal: the session''s workspace (pg_agents.workspace); NULL for a superuser session that sets none (not bound to a workspace); raises 42501 for any other session that sets none.';

CREATE FUNCTION agent._workspace_ok(p_workspace_id text) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  ws text := agent._session_workspace();
BEGIN
  RETURN ws IS NULL OR ws IS NOT DISTINCT FROM p_workspace_id;
END
$$;
COMMENT ON FUNCTION agent._workspace_ok(text) IS
  'Internal: true when an object of this workspace may be named by the session (its own workspace; any, for a superuser session that sets none). Callers treat false as "does not exist".';
