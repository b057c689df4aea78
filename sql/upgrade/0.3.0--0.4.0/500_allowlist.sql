-- Allowlist (sql/src/500_allowlist.sql): selective search under the
-- allowlist.  The policies test membership of the readable set with
-- agent._allowlist_has (planned by agent._allowlist_support: an id-index
-- probe or a filter after the text index, by cost), and agent.ts_match is
-- the leakproof full-text match that lets an agent's search start from the
-- text index.

\ir ../../functions/agent._allowlist_support.sql

-- C, kept per backend until agent.access_config changes (it was SQL, run at
-- every planning of an agent query)
\ir ../../functions/agent._allowlist_custom_acl.sql

ALTER FUNCTION agent._allowlist_ids_text(text, text) VOLATILE SUPPORT agent._allowlist_support;
ALTER FUNCTION agent._allowlist_ids_int8(text, text) VOLATILE SUPPORT agent._allowlist_support;
ALTER FUNCTION agent._allowlist_ids_uuid(text, text) VOLATILE SUPPORT agent._allowlist_support;

\ir ../../functions/agent._allowlist_has.sql
\ir ../../functions/agent._allowlist_has_2.sql
\ir ../../functions/agent._allowlist_has_3.sql
\ir ../../functions/agent._allowlist_has_4.sql
\ir ../../functions/agent._allowlist_has_5.sql

\ir ../../functions/agent._ts_match_support.sql

\ir ../../functions/agent.ts_match.sql

\ir ../../functions/agent._like_support.sql

\ir ../../functions/agent.like.sql

\ir ../../functions/agent.ilike.sql

\ir ../../functions/agent._allowlist_expr.sql

-- The policies of the tables already under the allowlist take the new shape.
DO $upgrade$
DECLARE
  t  record;
  rd record;
  ed record;
BEGIN
  FOR t IN SELECT * FROM agent.allowlist_tables LOOP
    rd := agent._allowlist_expr(t.tbl, t.id_column, t.resource_type, 'read');
    ed := agent._allowlist_expr(t.tbl, t.id_column, t.resource_type, 'edit');
    EXECUTE format('ALTER POLICY pg_agents_allowlist_select ON %s USING (%s)', t.tbl, rd.expr);
    EXECUTE format('ALTER POLICY pg_agents_allowlist_insert ON %s WITH CHECK (%s)', t.tbl, ed.expr);
    EXECUTE format('ALTER POLICY pg_agents_allowlist_update ON %s USING (%s) WITH CHECK (%s)', t.tbl, ed.expr, ed.expr);
    EXECUTE format('ALTER POLICY pg_agents_allowlist_delete ON %s USING (%s)', t.tbl, ed.expr);
  END LOOP;
END
$upgrade$;
