-- pg_agents: who reads the audit log and the runs, and which rows
-- (docs/security.md, "Reading history").
--
-- A non-owner reads rows of exactly one workspace, the one its session names
-- (pg_agents.workspace), and only if it may read that workspace at all: the
-- application (agents_app) is trusted with every tenant, as it vouches for
-- their users; an analytics role (agents_reader) only with the workspaces a
-- DBA bound to it.  Setting pg_agents.workspace alone opens nothing.  The
-- tool role has no policy here, so it reads nothing (an agent session never
-- reads page bodies back out of the audit log's changes).

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

-- plpgsql: a SQL function's parameterised query on a Citus table fails when
-- the policy is evaluated on a worker (citus #1179); the policies call it
-- once per statement (an InitPlan), so the language costs nothing per row.
\ir ../functions/agent._may_read_workspace.sql

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
