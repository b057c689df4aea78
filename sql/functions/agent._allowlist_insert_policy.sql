CREATE OR REPLACE FUNCTION agent._allowlist_insert_policy(p_tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t   agent.allowlist_tables%ROWTYPE;
  r   agent.resource_tables%ROWTYPE;
  ed  record;
  v   text;
BEGIN
  SELECT * INTO t FROM agent.allowlist_tables a WHERE a.tbl = p_tbl;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  ed := agent._allowlist_expr(p_tbl, t.id_column, t.resource_type, 'edit');
  v := ed.expr;
  SELECT * INTO r FROM agent.resource_tables x
   WHERE x.tbl = p_tbl AND x.resource_type = t.resource_type AND x.parent_type IS NOT NULL;
  IF FOUND THEN
    v := format('(%s) OR (agent._allowlist_active() AND agent._allowlist_new_row(%L, %s))', v, r.parent_type,
                CASE WHEN r.parent_column IS NOT NULL THEN format('(%I)::text', r.parent_column)
                     ELSE format('%L::text', r.parent_id) END);
  END IF;
  EXECUTE format('ALTER POLICY pg_agents_allowlist_insert ON %s WITH CHECK (%s)', p_tbl, v);
END
$$;
COMMENT ON FUNCTION agent._allowlist_insert_policy(regclass) IS
  'Internal: (re)writes the insert check of the allowlist on a table (when enabled): the new row is one the agent may edit, or, for a table registered as the rows of collections, a row of a collection the agent may edit.';
