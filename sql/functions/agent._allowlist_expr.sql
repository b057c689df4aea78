CREATE OR REPLACE FUNCTION agent._allowlist_expr(p_tbl regclass, p_column name, p_type text, p_mode text,
                                      OUT expr text, OUT indexable boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att  pg_attribute := agent._rls_column(p_tbl, p_column, 'id');
  col  text := quote_ident(p_column);
BEGIN
  -- text, varchar, the integers and uuid keep an index on the column usable
  -- (int2/int4 = int8 are in the integer btree family); others compare as text
  indexable := att.atttypid IN ('text'::regtype, 'varchar'::regtype, 'int2'::regtype,
                                'int4'::regtype, 'int8'::regtype, 'uuid'::regtype);
  -- Folded at plan time: a non-agent session keeps "true"; an agent session
  -- keeps the membership test (which the planner turns into a probe of the
  -- id index with the readable set, or keeps as a filter, by cost), or with
  -- a custom ACL function the per-row check.
  expr := format('NOT agent._allowlist_active() OR (NOT agent._allowlist_custom_acl() AND %s)'
                 ' OR (agent._allowlist_custom_acl() AND agent.can_access((SELECT agent.current_agent_id()), %L, (%s)::text, %L))',
                 CASE WHEN indexable THEN format('agent._allowlist_has(%s, %L, %L)', col, p_type, p_mode)
                      ELSE format('agent._allowlist_has((%s)::text, %L, %L)', col, p_type, p_mode) END,
                 p_type, col, p_mode);
END
$$;
COMMENT ON FUNCTION agent._allowlist_expr(regclass, name, text, text) IS
  'Internal: the policy expression "not an agent session, or the id is in the readable set" for a table column and a mode.';
