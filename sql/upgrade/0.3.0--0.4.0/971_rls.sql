-- pg_agents: the workspace boundary on every table a non-superuser role may
-- read or write directly (docs/security.md, "The workspace boundary";
-- docs/tenants.md).
--
-- Same rule as agent.runs and agent.audit_log (sql/src/210_reads.sql): a
-- non-owner reads, updates and deletes only the rows of the workspace its
-- session names (pg_agents.workspace), and only of one it may read; a
-- session that names none reads and writes nothing.  Writes are checked
-- twice: first by agent._workspace_write_check (a BEFORE trigger that runs
-- after the fill triggers, *_fill_workspace < *_workspace_check, and raises
-- 42501 naming both workspaces), then by the policies' WITH CHECK.  A row of
-- no workspace (agent.resource_acl, agent.group_members) counts in every
-- workspace: only a superuser (or the owner: the extension's own SECURITY
-- DEFINER functions) writes one.  The owner is not subject to either check:
-- the API functions run as the owner and check the workspace themselves.

CREATE FUNCTION agent._workspace_write_check() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws text := agent.current_workspace();
BEGIN
  -- the owner (the extension's own functions) and superusers bypass
  -- row-level security; so do they this check
  IF pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = TG_RELID), 'USAGE')
     OR coalesce((SELECT r.rolbypassrls FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER), false) THEN
    RETURN NEW;
  END IF;
  IF v_ws IS NULL THEN
    RAISE EXCEPTION 'permission denied to write %.% without a workspace', TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = pg_catalog.format('The session names no workspace (pg_agents.workspace); the row is of workspace %s.',
                                       coalesce(pg_catalog.quote_literal(NEW.workspace_id), 'none')),
            HINT = 'Set pg_agents.workspace (agent.set_identity) to the workspace the row belongs to.';
  END IF;
  IF NEW.workspace_id IS NULL THEN
    RAISE EXCEPTION 'permission denied to write a row of no workspace into %.%', TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = pg_catalog.format('The session''s workspace is %L; the row names none (or an agent or run the session cannot see). A row of no workspace counts in every workspace: only a superuser writes one.', v_ws);
  END IF;
  IF NEW.workspace_id <> v_ws THEN
    RAISE EXCEPTION 'permission denied to write a row of workspace % into %.%', pg_catalog.quote_literal(NEW.workspace_id),
                    TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = pg_catalog.format('The session''s workspace is %L; the row is of workspace %L.', v_ws, NEW.workspace_id);
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION agent._workspace_write_check() IS
  'Trigger: refuses (42501, naming both workspaces) a direct write by a non-owner of a row of another workspace than the session''s, of no workspace, or from a session that names none.';

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['agents', 'versions', 'shares', 'access', 'resource_acl', 'group_members',
                           'triggers', 'approvals', 'run_messages', 'event_overlaps']
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE agent.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE pg_catalog.format(
      'CREATE POLICY %I ON agent.%I FOR ALL TO agents_app, agents_reader '
      'USING (workspace_id = agent.current_workspace() '
      'AND (SELECT agent._may_read_workspace(agent.current_workspace()))) '
      'WITH CHECK (workspace_id = agent.current_workspace() '
      'AND agent._may_read_workspace(agent.current_workspace()))', t || '_workspace', t);
    EXECUTE pg_catalog.format('COMMENT ON POLICY %I ON agent.%I IS %L', t || '_workspace', t,
      'The application and analytics roles read, write and delete only the rows of the session''s workspace (pg_agents.workspace), and only of a workspace they may read; a session that names none sees nothing.');
    EXECUTE pg_catalog.format(
      'CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON agent.%I '
      'FOR EACH ROW EXECUTE FUNCTION agent._workspace_write_check()', t || '_workspace_check', t);
    EXECUTE pg_catalog.format('COMMENT ON TRIGGER %I ON agent.%I IS %L', t || '_workspace_check', t,
      'Refuses a direct write of a row of another workspace than the session''s, or of none (agent._workspace_write_check).');
  END LOOP;
END
$$;
