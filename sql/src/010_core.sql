-- pg_agents: the two internal entry points every capability shares.
--
--   agent._enqueue_run  — the one way a run is queued (caps, NOTIFY)
--   agent._audit_event  — the one way the extension writes its own audit rows
--
-- Their signatures are a contract between modules; their bodies may move to C.

-- ---------------------------------------------------------------------------
-- Audit log (the C audit triggers and _audit_event write it)
-- ---------------------------------------------------------------------------

\ir ../tables/agent.audit_log.sql

CREATE FUNCTION agent._audit_event(p_action text, p_status text DEFAULT 'success',
                                   p_target_type text DEFAULT NULL, p_target_id text DEFAULT NULL,
                                   p_workspace_id text DEFAULT NULL, p_owner_id text DEFAULT NULL,
                                   p_inputs jsonb DEFAULT NULL, p_summary text DEFAULT NULL,
                                   p_error_code text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_audit_event';
-- C (src/audit.c): identity from the session GUCs, inputs and summary
-- redacted, written straight into the log (no INSERT privilege needed, so
-- no SECURITY DEFINER); a no-op when pg_agents.audit_enabled is off.
REVOKE ALL ON FUNCTION agent._audit_event(text, text, text, text, text, text, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._audit_event(text, text, text, text, text, text, jsonb, text, text) IS
  'Internal: writes one audit row for an action of the extension itself, with the session identity.';

-- ---------------------------------------------------------------------------
-- The run queue
-- ---------------------------------------------------------------------------

-- The hourly cap's count, carried for the rest of the transaction once
-- counted (src/capmemo.c).
CREATE FUNCTION agent._cap_memo(p_agent_id bigint) RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_cap_memo';
REVOKE ALL ON FUNCTION agent._cap_memo(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._cap_memo(bigint) IS
  'Internal (agent._enqueue_run): the agent''s autonomous runs of the last hour as counted earlier in this transaction, or NULL when not counted yet. Backend memory, forgotten at transaction end, restored by a rolled-back subtransaction.';

CREATE FUNCTION agent._cap_memo_set(p_agent_id bigint, p_count bigint) RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_cap_memo_set';
REVOKE ALL ON FUNCTION agent._cap_memo_set(bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._cap_memo_set(bigint, bigint) IS
  'Internal (agent._enqueue_run): records the agent''s count of autonomous runs of the last hour for the rest of this transaction (undone if the current subtransaction rolls back).';

\ir ../functions/agent._enqueue_run.sql

-- ---------------------------------------------------------------------------
-- The role under which the worker runs tool SQL
-- ---------------------------------------------------------------------------
-- Neither superuser nor BYPASSRLS, so that allowlist policies (FORCE ROW
-- LEVEL SECURITY) apply to every tool call.  Roles are cluster-wide: the
-- extension may be created in several databases, so create it only once.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'agents_tool') THEN
    CREATE ROLE agents_tool NOLOGIN NOSUPERUSER NOBYPASSRLS;
    COMMENT ON ROLE agents_tool IS
      'pg_agents: role under which agent tool SQL runs; never superuser or BYPASSRLS, so allowlist policies apply.';
  END IF;
END
$$;

-- ---------------------------------------------------------------------------
-- The roles of the privilege model (docs/security.md; what each may call and
-- read is stated once, in 990_privileges.sql).  NOLOGIN: a DBA grants them
-- to login roles (GRANT agents_app TO app).
-- ---------------------------------------------------------------------------
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
