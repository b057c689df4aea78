CREATE OR REPLACE FUNCTION agent.enable_allowlist(tbl regclass, resource_type text, id_column name)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c     pg_class;
  rd    record;
  ed    record;
  base  text;
BEGIN
  PERFORM agent._rls_check_type(resource_type);
  PERFORM agent._rls_check_table(tbl);
  IF EXISTS (SELECT 1 FROM agent.allowlist_tables t WHERE t.tbl = enable_allowlist.tbl) THEN
    RAISE EXCEPTION 'allowlist is already enabled on table "%"', tbl
      USING ERRCODE = 'duplicate_object',
            HINT = 'Call agent.disable_allowlist first to change its resource type or id column.';
  END IF;
  SELECT * INTO c FROM pg_class WHERE oid = tbl;
  rd := agent._allowlist_expr(tbl, id_column, resource_type, 'read');
  ed := agent._allowlist_expr(tbl, id_column, resource_type, 'edit');

  -- Non-agent sessions keep exactly the access they had: with no RLS before,
  -- a pass-through policy for everyone; with RLS on but not forced, one for
  -- the owner (who bypassed the application's policies until now).
  IF NOT c.relrowsecurity THEN
    base := 'pg_agents_allowlist_base';
    EXECUTE format('CREATE POLICY %I ON %s AS PERMISSIVE FOR ALL TO PUBLIC USING (true) WITH CHECK (true)',
                   base, tbl);
  ELSIF NOT c.relforcerowsecurity THEN
    base := 'pg_agents_allowlist_owner';
    EXECUTE format('CREATE POLICY %I ON %s AS PERMISSIVE FOR ALL TO %I USING (true) WITH CHECK (true)',
                   base, tbl, pg_get_userbyid(c.relowner));
  END IF;
  IF base IS NOT NULL THEN
    EXECUTE format('COMMENT ON POLICY %I ON %s IS %L', base, tbl,
                   'pg_agents: keeps non-agent sessions'' access unchanged under agent.enable_allowlist.');
  END IF;

  EXECUTE format('CREATE POLICY pg_agents_allowlist_select ON %s AS RESTRICTIVE FOR SELECT TO PUBLIC USING (%s)',
                 tbl, rd.expr);
  EXECUTE format('CREATE POLICY pg_agents_allowlist_insert ON %s AS RESTRICTIVE FOR INSERT TO PUBLIC WITH CHECK (%s)',
                 tbl, ed.expr);
  EXECUTE format('CREATE POLICY pg_agents_allowlist_update ON %s AS RESTRICTIVE FOR UPDATE TO PUBLIC USING (%s) WITH CHECK (%s)',
                 tbl, ed.expr, ed.expr);
  EXECUTE format('CREATE POLICY pg_agents_allowlist_delete ON %s AS RESTRICTIVE FOR DELETE TO PUBLIC USING (%s)',
                 tbl, ed.expr);
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_select ON %s IS %L', tbl,
                 'pg_agents: an agent session reads only the rows agent.readable_resources grants it.');
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_insert ON %s IS %L', tbl,
                 'pg_agents: an agent session inserts only rows it may edit.');
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_update ON %s IS %L', tbl,
                 'pg_agents: an agent session updates only rows it may edit.');
  EXECUTE format('COMMENT ON POLICY pg_agents_allowlist_delete ON %s IS %L', tbl,
                 'pg_agents: an agent session deletes only rows it may edit.');
  EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', tbl);
  EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', tbl);

  INSERT INTO agent.allowlist_tables (tbl, resource_type, id_column, indexable, rls_was_enabled,
                                      rls_was_forced, base_policy)
  VALUES (tbl, resource_type, id_column, rd.indexable, c.relrowsecurity, c.relforcerowsecurity, base);
  -- rows of collections: a new row is checked by its collection
  PERFORM agent._allowlist_insert_policy(tbl);
  IF NOT rd.indexable THEN
    RAISE NOTICE 'allowlist on "%" compares "%" as text', tbl, id_column
      USING DETAIL = 'Its type has no indexable comparison with resource ids, so agent queries filter every row they scan.',
            HINT = format('Use a text, varchar, integer or uuid id column, or index (%I::text).', id_column);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.enable_allowlist(regclass, text, name) IS
  'Installs row-level security on an application table (ENABLE and FORCE, restrictive policies per command) so that a session acting as an agent reads only the rows it may read and inserts, updates and deletes only the rows it may edit; other sessions are unaffected. Superusers and BYPASSRLS roles bypass it.';
