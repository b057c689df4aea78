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

-- Direct writes versioned and audited (docs/security.md, "Direct writes").
-- The application may write agent.access, agent.resource_acl,
-- agent.group_members and agent.agents.status itself.  Such a write by a
-- role that is not the tables' owner is audited with the action the API's
-- own write has (agent.grant, agent.revoke, agent.set_status; the ACL and
-- group tables have no API: agent.resource_acl.* and agent.group_members.*)
-- and, for a grant, versioned as agent.grant versions it.  The triggers fire
-- only WHEN the writing role is not the owner (agent._direct_write(), as the
-- writing role): the extension's own functions run as the owner, so their
-- writes, which they version and audit themselves, are not counted twice,
-- and no role can make its write look like theirs.  A superuser's direct
-- write is the DBA's and is not recorded here (as row-level security does
-- not apply to it either).

CREATE FUNCTION agent._direct_write(p_rel regclass) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = p_rel), 'USAGE')
         AND NOT coalesce((SELECT r.rolbypassrls FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER), false)
$$;
COMMENT ON FUNCTION agent._direct_write(regclass) IS
  'Internal (the WHEN of the direct-write history triggers): whether the writing role is neither the table''s owner (the extension''s own functions) nor one that bypasses row-level security.';

CREATE FUNCTION agent._direct_write_history() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_new jsonb := CASE WHEN TG_OP <> 'DELETE' THEN pg_catalog.to_jsonb(NEW) END;
  v_old jsonb := CASE WHEN TG_OP <> 'INSERT' THEN pg_catalog.to_jsonb(OLD) END;
  r     jsonb := coalesce(v_new, v_old);
  a     agent.agents%ROWTYPE;
  v_ver bigint;
  v_who text := pg_catalog.format('a direct write by %s', CURRENT_USER);
BEGIN
  IF TG_TABLE_NAME = 'access' THEN
    SELECT * INTO a FROM agent.agents x
     WHERE x.workspace_id = r ->> 'workspace_id' AND x.id = (r ->> 'agent_id')::bigint;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (v_old ->> 'agent_id' IS DISTINCT FROM v_new ->> 'agent_id'
                                                  OR v_old ->> 'resource_type' IS DISTINCT FROM v_new ->> 'resource_type'
                                                  OR v_old ->> 'resource_id' IS DISTINCT FROM v_new ->> 'resource_id')) THEN
      -- revoked (or moved: the old grant is revoked, the new one granted)
      v_ver := agent._write_version((v_old ->> 'agent_id')::bigint, NULL,
                 pg_catalog.format('revoked %s %s by a direct write', v_old ->> 'resource_type', v_old ->> 'resource_id'));
      PERFORM agent._audit_event('agent.revoke', 'success', 'agent', v_old ->> 'agent_id', a.workspace_id, a.owner_id,
                                 pg_catalog.jsonb_build_object('resource_type', v_old ->> 'resource_type',
                                   'resource_id', v_old ->> 'resource_id', 'by_user', NULL, 'removed', true,
                                   'direct', true, 'version_id', v_ver),
                                 pg_catalog.format('%s: agent %s revoked from %s %s', v_who, v_old ->> 'agent_id',
                                                   v_old ->> 'resource_type', v_old ->> 'resource_id'));
      IF TG_OP = 'DELETE' THEN
        RETURN NULL;
      END IF;
    ELSIF TG_OP = 'UPDATE' AND v_old ->> 'access' IS NOT DISTINCT FROM v_new ->> 'access' THEN
      RETURN NULL;   -- bookkeeping (granted_by, granted_at): not a change of access
    END IF;
    v_ver := agent._write_version(a.id, v_new ->> 'granted_by',
               pg_catalog.format('granted %s on %s %s by a direct write', v_new ->> 'access',
                                 v_new ->> 'resource_type', v_new ->> 'resource_id'));
    PERFORM agent._audit_event('agent.grant', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                               pg_catalog.jsonb_build_object('resource_type', v_new ->> 'resource_type',
                                 'resource_id', v_new ->> 'resource_id', 'access', v_new ->> 'access',
                                 'by_user', v_new ->> 'granted_by', 'direct', true, 'version_id', v_ver),
                               pg_catalog.format('%s: agent %s granted %s on %s %s', v_who, a.id, v_new ->> 'access',
                                                 v_new ->> 'resource_type', v_new ->> 'resource_id'));
  ELSIF TG_TABLE_NAME = 'agents' THEN
    IF v_old ->> 'status' IS NOT DISTINCT FROM v_new ->> 'status' THEN
      RETURN NULL;
    END IF;
    PERFORM agent._audit_event('agent.set_status', 'success', 'agent', v_new ->> 'id', v_new ->> 'workspace_id',
                               v_new ->> 'owner_id',
                               pg_catalog.jsonb_build_object('from', v_old ->> 'status', 'to', v_new ->> 'status',
                                                             'by_user', NULL, 'direct', true),
                               pg_catalog.format('%s set agent %s %s', v_who, v_new ->> 'id', v_new ->> 'status'));
  ELSE
    -- resource_acl, group_members: no API writes them; one row each
    PERFORM agent._audit_event('agent.' || TG_TABLE_NAME || '.' || pg_catalog.lower(TG_OP), 'success',
                               CASE TG_TABLE_NAME WHEN 'resource_acl' THEN 'resource' ELSE 'group' END,
                               CASE TG_TABLE_NAME WHEN 'resource_acl' THEN (r ->> 'resource_type') || ':' || (r ->> 'resource_id')
                                                  ELSE r ->> 'group_id' END,
                               r ->> 'workspace_id', NULL,
                               pg_catalog.jsonb_build_object('row', v_new, 'before', v_old, 'direct', true),
                               pg_catalog.format('%s: %s %s %s', v_who,
                                 CASE TG_OP WHEN 'INSERT' THEN 'added' WHEN 'UPDATE' THEN 'changed' ELSE 'removed' END,
                                 CASE TG_TABLE_NAME WHEN 'resource_acl'
                                   THEN pg_catalog.format('%s on %s %s', r ->> 'principal', r ->> 'resource_type', r ->> 'resource_id')
                                   ELSE pg_catalog.format('user %s to group %s', r ->> 'user_id', r ->> 'group_id') END,
                                 CASE TG_TABLE_NAME WHEN 'resource_acl' THEN '(resource ACL)' ELSE '(group members)' END));
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._direct_write_history() IS
  'Trigger: audits a direct write by a non-owner to agent.access (agent.grant / agent.revoke, with a version as the API writes), agent.agents.status (agent.set_status), agent.resource_acl and agent.group_members (agent.<table>.insert/update/delete); inputs carry "direct": true.';

CREATE TRIGGER access_direct_history AFTER INSERT OR UPDATE OR DELETE ON agent.access
  FOR EACH ROW WHEN (agent._direct_write('agent.access'))
  EXECUTE FUNCTION agent._direct_write_history();
COMMENT ON TRIGGER access_direct_history ON agent.access IS
  'Versions and audits a grant written directly by a non-owner (agent._direct_write_history).';
CREATE TRIGGER agents_direct_history AFTER UPDATE OF status ON agent.agents
  FOR EACH ROW WHEN (agent._direct_write('agent.agents'))
  EXECUTE FUNCTION agent._direct_write_history();
COMMENT ON TRIGGER agents_direct_history ON agent.agents IS
  'Audits a status set directly by a non-owner, as agent.set_status (agent._direct_write_history).';
CREATE TRIGGER resource_acl_direct_history AFTER INSERT OR UPDATE OR DELETE ON agent.resource_acl
  FOR EACH ROW WHEN (agent._direct_write('agent.resource_acl'))
  EXECUTE FUNCTION agent._direct_write_history();
COMMENT ON TRIGGER resource_acl_direct_history ON agent.resource_acl IS
  'Audits an ACL row written directly by a non-owner (agent._direct_write_history).';
CREATE TRIGGER group_members_direct_history AFTER INSERT OR UPDATE OR DELETE ON agent.group_members
  FOR EACH ROW WHEN (agent._direct_write('agent.group_members'))
  EXECUTE FUNCTION agent._direct_write_history();
COMMENT ON TRIGGER group_members_direct_history ON agent.group_members IS
  'Audits a group membership written directly by a non-owner (agent._direct_write_history).';
