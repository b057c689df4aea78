-- ===========================================================================
-- Privilege boundaries (lead): the caller's role, audit_table as SECURITY
-- DEFINER on the caller's own tables, the read policies and reader bindings,
-- agent._allowlist_denied hardened, insights scoped.  Grants: 990_privileges.
-- ===========================================================================

CREATE FUNCTION agent._caller() RETURNS regrole
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_caller';
COMMENT ON FUNCTION agent._caller() IS
  'Internal: the role the session acts as (after SET ROLE), also inside a SECURITY DEFINER function; the extension checks the caller''s rights on the caller''s own objects with it.';


CREATE OR REPLACE FUNCTION agent.audit_table(tbl regclass, target_type text DEFAULT NULL,
                                  owner_column name DEFAULT NULL,
                                  workspace_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_rel  pg_catalog.pg_class%ROWTYPE;
  v_ws   name := workspace_column;
  v_type text := coalesce(target_type, '');
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO v_rel FROM pg_catalog.pg_class WHERE oid = tbl;
  IF tbl = 'agent.audit_log'::pg_catalog.regclass THEN
    RAISE EXCEPTION 'cannot audit agent.audit_log'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The audit log records changes to other tables; it is append-only itself.';
  END IF;
  IF v_rel.relpersistence = 't' THEN
    RAISE EXCEPTION 'cannot audit temporary table %', tbl
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'A temporary table is seen by its own session only; its changes are not history.';
  END IF;
  IF v_rel.relkind NOT IN ('r', 'p') THEN
    RAISE EXCEPTION '"%" is not a table', tbl
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only tables and partitioned tables can be audited.';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(), v_rel.relowner, 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF target_type IS NOT NULL AND pg_catalog.btrim(target_type) = '' THEN
    RAISE EXCEPTION 'target_type must not be empty'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass NULL to use the table name.';
  END IF;
  IF owner_column IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute
        WHERE attrelid = tbl AND attname = owner_column AND attnum > 0 AND NOT attisdropped) THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', owner_column, tbl
      USING ERRCODE = 'undefined_column';
  END IF;
  IF v_ws IS NULL THEN
    SELECT a.attname INTO v_ws FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = 'workspace_id' AND a.attnum > 0 AND NOT a.attisdropped;
  ELSIF NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute
        WHERE attrelid = tbl AND attname = v_ws AND attnum > 0 AND NOT attisdropped) THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', v_ws, tbl
      USING ERRCODE = 'undefined_column';
  END IF;

  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_truncate ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_stmt ON %s', tbl);
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH ROW EXECUTE FUNCTION agent._audit_trigger(%L, %L, %L)',
    tbl, v_type, coalesce(owner_column, ''), coalesce(v_ws, ''));
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit_truncate AFTER TRUNCATE ON %s '
    'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_trigger(%L, %L, %L)',
    tbl, v_type, '', '');
  -- after the statement's rows: releases the log the row trigger kept open
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit_stmt AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_trigger()', tbl);
  PERFORM agent._audit_table_event(tbl, 'audit.table', nullif(v_type, ''));
END
$$;
COMMENT ON FUNCTION agent.audit_table(regclass, text, name, name) IS
  'Attaches the C audit trigger to a table: INSERT (new row), UPDATE (changed columns only), DELETE (old row) and TRUNCATE are recorded in agent.audit_log, redacted. Re-running it updates the settings.';

CREATE OR REPLACE FUNCTION agent.unaudit_table(tbl regclass) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_had boolean;
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT relowner FROM pg_catalog.pg_class WHERE oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                  WHERE tgrelid = tbl AND tgname IN ('pg_agents_audit', 'pg_agents_audit_truncate'))
    INTO v_had;
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_truncate ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_stmt ON %s', tbl);
  IF v_had THEN
    PERFORM agent._audit_table_event(tbl, 'audit.untable', NULL);
  END IF;
  RETURN v_had;
END
$$;
COMMENT ON FUNCTION agent.unaudit_table(regclass) IS
  'Removes the audit trigger from a table; returns false when the table was not audited. Recorded as audit.untable.';

DROP POLICY audit_log_workspace_read ON agent.audit_log;

CREATE TABLE agent.reader_workspaces (
    workspace_id text NOT NULL,
    role_id      regrole NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, role_id)
);
COMMENT ON TABLE agent.reader_workspaces IS
  'The workspaces a DBA bound to an analytics role (agent.bind_reader): members of that role read the audit and run rows of these workspaces only.';
COMMENT ON COLUMN agent.reader_workspaces.workspace_id IS 'Workspace the role may read.';
COMMENT ON COLUMN agent.reader_workspaces.role_id IS 'The role (its members inherit the binding).';
COMMENT ON COLUMN agent.reader_workspaces.created_at IS 'When the binding was made.';
ALTER TABLE agent.reader_workspaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY reader_workspaces_own ON agent.reader_workspaces FOR SELECT
  USING (pg_catalog.pg_has_role(role_id, 'USAGE'));
COMMENT ON POLICY reader_workspaces_own ON agent.reader_workspaces IS
  'A role sees the bindings of the roles it has the privileges of.';

CREATE FUNCTION agent._may_read_workspace(p_workspace_id text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p_workspace_id IS NOT NULL
     AND (pg_catalog.pg_has_role('agents_app', 'USAGE')
          OR EXISTS (SELECT 1 FROM agent.reader_workspaces b
                      WHERE b.workspace_id = p_workspace_id
                        AND coalesce(pg_catalog.pg_has_role(b.role_id, 'USAGE'), false)))
$$;
COMMENT ON FUNCTION agent._may_read_workspace(text) IS
  'Internal to the read policies: whether the current role may read the rows of a workspace (the application may read any; an analytics role those bound to it; superusers all).';

CREATE FUNCTION agent.bind_reader(role_id regrole, workspace_id text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF workspace_id IS NULL OR workspace_id = '' THEN
    RAISE EXCEPTION 'workspace id must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF role_id IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO agent.reader_workspaces AS b (workspace_id, role_id)
  VALUES (bind_reader.workspace_id, bind_reader.role_id)
  ON CONFLICT ON CONSTRAINT reader_workspaces_pkey DO NOTHING;
  PERFORM agent._audit_event('agent.bind_reader', 'success', 'workspace', bind_reader.workspace_id,
                             bind_reader.workspace_id, NULL,
                             pg_catalog.jsonb_build_object('role', bind_reader.role_id::text), NULL, NULL);
END
$$;
COMMENT ON FUNCTION agent.bind_reader(regrole, text) IS
  'Lets the members of a role (an analytics role, usually a member of agents_reader) read the audit and run rows of a workspace. Superuser only; audited.';

CREATE FUNCTION agent.unbind_reader(role_id regrole, workspace_id text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
BEGIN
  DELETE FROM agent.reader_workspaces b
   WHERE b.workspace_id = unbind_reader.workspace_id AND b.role_id = unbind_reader.role_id;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN
    PERFORM agent._audit_event('agent.unbind_reader', 'success', 'workspace', unbind_reader.workspace_id,
                               unbind_reader.workspace_id, NULL,
                               pg_catalog.jsonb_build_object('role', unbind_reader.role_id::text), NULL, NULL);
  END IF;
  RETURN n > 0;
END
$$;
COMMENT ON FUNCTION agent.unbind_reader(regrole, text) IS
  'Removes a binding made by agent.bind_reader; true when there was one. Superuser only; audited.';

-- The policies: one workspace, the session's, and only a readable one.  The
-- check of the workspace is a constant of the query (an InitPlan), so that
-- the policy costs one probe, not one per row.
ALTER TABLE agent.audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_log_workspace_read ON agent.audit_log FOR SELECT TO agents_app, agents_reader
  USING (workspace_id = agent.current_workspace()
         AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON POLICY audit_log_workspace_read ON agent.audit_log IS
  'The application and analytics roles read only the rows of the session''s workspace (pg_agents.workspace), and only of a workspace they may read (agent.bind_reader).';

ALTER TABLE agent.runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY runs_workspace_read ON agent.runs FOR SELECT TO agents_app, agents_reader
  USING (workspace_id = agent.current_workspace()
         AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON POLICY runs_workspace_read ON agent.runs IS
  'The application and analytics roles read only the runs of the session''s workspace, and only of a workspace they may read.';

ALTER TABLE agent.run_steps ENABLE ROW LEVEL SECURITY;
CREATE POLICY run_steps_workspace_read ON agent.run_steps FOR SELECT TO agents_app, agents_reader
  USING (workspace_id = agent.current_workspace()
         AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON POLICY run_steps_workspace_read ON agent.run_steps IS
  'The application and analytics roles read only the steps of the session''s workspace, and only of a workspace they may read.';

CREATE OR REPLACE FUNCTION agent._allowlist_denied(p_to_type text, p_reason text, p_target_id text, p_detail jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_agent  bigint := agent.current_agent_id();
  v_run    bigint;
  v_ws     text;
  v_seq    integer;
  v_reason text := CASE WHEN p_reason IN ('not_granted', 'grant_read_only', 'owner_denied', 'agent_suspended',
                                         'agent_deleted', 'agent_not_found')
                        THEN p_reason ELSE 'not_granted' END;
  v_det    jsonb := agent.redact(coalesce(p_detail, '{}'::jsonb));
  v_type   text := pg_catalog.left(coalesce(p_to_type, ''), 200);
  v_target text := pg_catalog.left(p_target_id, 200);
BEGIN
  IF v_agent IS NULL THEN
    RETURN;
  END IF;
  IF pg_catalog.octet_length(v_det::text) > 4096 THEN
    v_det := pg_catalog.jsonb_build_object('truncated', true);
  END IF;
  BEGIN
    v_run := nullif(pg_catalog.current_setting('pg_agents.run_id', true), '')::bigint;
  EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
    v_run := NULL;
  END;
  IF v_run IS NOT NULL THEN
    SELECT r.workspace_id INTO v_ws FROM agent.runs r
     WHERE r.id = v_run AND r.agent_id = v_agent AND r.status = 'running' FOR UPDATE;
    IF FOUND THEN
      SELECT coalesce(max(s.seq), 0) + 1 INTO v_seq FROM agent.run_steps s WHERE s.run_id = v_run;
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, finished_at)
      VALUES (v_ws, v_run, v_seq, 'denied', 'follow_relation', v_det,
              pg_catalog.jsonb_build_object('resource_type', v_type, 'reason', v_reason), 'denied',
              pg_catalog.clock_timestamp());
    END IF;
  END IF;
  SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = v_agent;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM agent._audit_event('agent.follow_relation', 'denied', v_type, v_target, v_ws, NULL,
                             v_det, pg_catalog.format('relation to a %s cut: %s', v_type, v_reason), v_reason);
END
$$;
COMMENT ON FUNCTION agent._allowlist_denied(text, text, text, jsonb) IS
  'Internal to agent.follow_relation: records a cut relation target as a denied step of the current run (only a running run of the session''s own agent; type and a known reason code only; redacted, bounded detail) and as a denied audit row in the agent''s workspace. Executable by agents_tool and agents_app only.';



COMMENT ON VIEW agent.insights IS
  'Runs per agent, UTC day (of created_at) and status, for analytics: runs, own tokens (the run''s own tokens_in + tokens_out, never the rolled-up tokens_total, so that sums do not count a child twice), average duration, and the day''s run count and failure rate (failed, budget_exceeded, expired over finished runs). Scoped to the session''s workspace (pg_agents.workspace), and only one the role may read (agents_app: any; agents_reader: those bound by agent.bind_reader); a superuser session without a workspace sees all.';
CREATE OR REPLACE FUNCTION agent.set_acl_function(fn regprocedure) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  p pg_catalog.pg_proc%ROWTYPE;
BEGIN
  IF fn IS NOT NULL THEN
    SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = fn;
    IF p.pronargs <> 4
       OR array_to_string(p.proargtypes::oid[], ',') <> array_to_string(ARRAY['text'::regtype, 'text'::regtype, 'text'::regtype, 'text'::regtype]::oid[], ',')
       OR p.prorettype <> 'boolean'::regtype OR p.proretset THEN
      RAISE EXCEPTION 'function % does not have the signature of an ACL function', fn
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'An ACL function is (user_id text, resource_type text, resource_id text, mode text) RETURNS boolean.',
              HINT = 'It is called with user_id NULL to ask whether the resource is shared with the whole workspace.';
    END IF;
    -- it is called inside the extension's SECURITY DEFINER functions: an
    -- invoker function of another role would run with the extension's rights
    IF NOT p.prosecdef AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = p.proowner) THEN
      RAISE EXCEPTION 'ACL function % must be SECURITY DEFINER or owned by a superuser', fn
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'agent.can_access calls it inside the extension''s own SECURITY DEFINER functions, where an invoker function of another role would run with the extension''s rights.',
              HINT = 'ALTER FUNCTION ... SECURITY DEFINER (it then runs with its owner''s rights), with SET search_path.';
    END IF;
  END IF;
  UPDATE agent.access_config SET acl_function = fn, updated_by = session_user, updated_at = now();
  PERFORM agent._audit_event('agent.set_acl_function', 'success', 'access_config', NULL, NULL, NULL,
                             jsonb_build_object('acl_function', fn::text),
                             CASE WHEN fn IS NULL THEN 'ACL from agent.resource_acl (default)'
                                  ELSE 'ACL from ' || fn::text END);
END
$$;
REVOKE ALL ON FUNCTION agent.set_acl_function(regprocedure) FROM PUBLIC;
COMMENT ON FUNCTION agent.set_acl_function(regprocedure) IS
  'Plugs the application''s ACL in: fn(user_id, resource_type, resource_id, mode) RETURNS boolean (user_id NULL: shared with the whole workspace?); NULL goes back to agent.resource_acl.';

CREATE OR REPLACE FUNCTION agent.unwatch_table(tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
  END IF;
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_watch ON %s', tbl);
END
$$;
COMMENT ON FUNCTION agent.unwatch_table(regclass) IS
  'Removes the watcher agent.watch_table installed (no error when the table is not watched); on the caller''s own tables only.';

