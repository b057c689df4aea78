CREATE FUNCTION agent.prepare_distribution()
RETURNS TABLE (object_name text, change text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  p record;
  t record;
BEGIN
  IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER) THEN
    RAISE EXCEPTION 'permission denied to prepare the distribution of pg_agents'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Only a superuser may change the policies and triggers of the extension''s tables.';
  END IF;
  FOR p IN
    SELECT pol.polname, pol.polrelid::pg_catalog.regclass AS rel
      FROM pg_catalog.pg_policy pol
      JOIN pg_catalog.pg_class c ON c.oid = pol.polrelid
     WHERE c.relnamespace = 'agent'::pg_catalog.regnamespace
       AND pg_catalog.pg_get_expr(pol.polqual, pol.polrelid)
           LIKE '%SELECT agent._may_read_workspace(%'
     ORDER BY 2::pg_catalog.text, 1
  LOOP
    EXECUTE pg_catalog.format(
      'ALTER POLICY %I ON %s USING (workspace_id = agent.current_workspace() '
      'AND agent._may_read_workspace(agent.current_workspace()))', p.polname, p.rel);
    object_name := pg_catalog.format('policy %I on %s', p.polname, p.rel);
    change := 'workspace check per row (no subquery)';
    RETURN NEXT;
  END LOOP;
  FOR t IN
    SELECT tg.tgname
      FROM pg_catalog.pg_trigger tg
     WHERE tg.tgrelid = 'agent.triggers'::pg_catalog.regclass
       AND tg.tgname IN ('triggers_history_ins', 'triggers_history_upd', 'triggers_history_del')
       AND tg.tgenabled <> 'D'
     ORDER BY 1
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE agent.triggers DISABLE TRIGGER %I', t.tgname);
    object_name := pg_catalog.format('trigger %I on agent.triggers', t.tgname);
    change := 'disabled';
    RETURN NEXT;
  END LOOP;
END
$$;
COMMENT ON FUNCTION agent.prepare_distribution() IS
  'Citus: rewrites the read policies without their scalar subquery (Citus refuses one in the policy of a distributed table) and disables the history triggers of agent.triggers (a direct write to agent.triggers is then not versioned; the API versions its own); idempotent, returns what it changed; run once on the coordinator before distributing (docs/scaling.md). Superuser only.';
