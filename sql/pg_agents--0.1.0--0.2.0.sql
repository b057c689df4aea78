-- pg_agents 0.1.0 -> 0.2.0.  Applied by ALTER EXTENSION pg_agents UPDATE.
\echo Use "ALTER EXTENSION pg_agents UPDATE" to load this file. \quit

-- ===========================================================================
-- Allowlist: the readable set in C, as a typed array kept between statements
-- (docs/allowlist.md, "How it works").
-- ===========================================================================

-- Transactions that change what agents may access say so (src/shmem.c), so
-- that a backend may keep an agent's readable set across statements until one
-- of them commits.  ENABLE ALWAYS: logical replication's apply changes count.
CREATE FUNCTION agent._access_changed() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_access_changed';
COMMENT ON FUNCTION agent._access_changed() IS
  'Internal statement trigger on the tables agent.can_access reads: marks the transaction as changing access data, which invalidates the readable sets kept by backends when it commits.';
CREATE TRIGGER access_changed AFTER INSERT OR DELETE OR TRUNCATE
                             OR UPDATE OF workspace_id, owner_id, status, deleted_at ON agent.agents
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.access
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.resource_acl
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.group_members
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent.access_config
  FOR EACH STATEMENT EXECUTE FUNCTION agent._access_changed();
ALTER TABLE agent.agents ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.access ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.resource_acl ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.group_members ENABLE ALWAYS TRIGGER access_changed;
ALTER TABLE agent.access_config ENABLE ALWAYS TRIGGER access_changed;

CREATE FUNCTION agent.readable_set_stats(OUT computed bigint, OUT reused bigint)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_readable_set_stats';
COMMENT ON FUNCTION agent.readable_set_stats() IS
  'How many readable sets (for the allowlist policies and agent.readable_resources) this backend has computed, and how many it has reused because no access data could have changed since.';

CREATE FUNCTION agent._readable_ids(agent_id bigint, resource_type text, mode text) RETURNS text[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_readable_ids';
REVOKE ALL ON FUNCTION agent._readable_ids(bigint, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._readable_ids(bigint, text, text) IS
  'Internal to agent.readable_resources: the readable (or editable) ids of any agent among the resources of a type, sorted, computed in C by the decision of agent.can_access. Not executable by PUBLIC.';

CREATE FUNCTION agent._allowlist_ids_text(resource_type text, mode text) RETURNS text[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_text(text, text) IS
  'Internal to the allowlist policies: the ids the session''s agent may read (or edit) among the resources of a type, as text; empty when the session does not act as an agent. Computed in C once per statement, kept while the visible data cannot have changed.';

CREATE FUNCTION agent._allowlist_ids_int8(resource_type text, mode text) RETURNS bigint[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_int8(text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_ids_text, for integer id columns (ids that are not integers are left out).';

CREATE FUNCTION agent._allowlist_ids_uuid(resource_type text, mode text) RETURNS uuid[]
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_ids';
COMMENT ON FUNCTION agent._allowlist_ids_uuid(text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_ids_text, for uuid id columns (ids that are not canonical lowercase uuids are left out).';

CREATE OR REPLACE FUNCTION agent.readable_resources(agent_id bigint, resource_type text, mode text DEFAULT 'read')
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  v_self   bigint := agent.current_agent_id();
BEGIN
  IF mode IS NULL OR mode NOT IN ('read', 'edit') THEN
    RAISE EXCEPTION 'invalid mode "%"', coalesce(mode, '(null)')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A mode is read or edit.';
  END IF;
  IF v_self IS NOT NULL AND agent_id IS DISTINCT FROM v_self THEN
    RAISE EXCEPTION 'an agent session can only list its own resources'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = format('The session acts as agent %s.', v_self);
  END IF;
  IF agent_id IS NULL OR resource_type IS NULL THEN
    RETURN;
  END IF;
  -- (a) direct grants at >= mode, bounded by the owner's ACL (their user and
  --     group rows, and what is shared with the whole workspace);
  -- (b) with a workspace_shared grant: what is shared with the whole
  --     workspace now, bounded by the owner's ACL;
  -- each candidate decided by the code of agent.can_access (src/access.c).
  RETURN QUERY SELECT unnest(agent._readable_ids(agent_id, resource_type, mode));
END
$$;
COMMENT ON FUNCTION agent.readable_resources(bigint, text, text) IS
  'Ids of the resources of a type an agent may read (or edit) in the autonomous regime, exactly those agent.can_access allows: direct grants bounded by the owner''s ACL, plus what is shared with the workspace when the agent holds workspace_shared. Empty for an unknown, deleted or suspended agent. With a custom ACL function (agent.set_acl_function): the direct grants that function allows, without the workspace shares, which such a function cannot list. An agent session may only ask for itself.';

CREATE OR REPLACE FUNCTION agent._allowlist_expr(p_tbl regclass, p_column name, p_type text, p_mode text,
                                      OUT expr text, OUT indexable boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
  att  pg_attribute := agent._rls_column(p_tbl, p_column, 'id');
  col  text := quote_ident(p_column);
  ids  text;
  arr  text;
BEGIN
  indexable := true;
  CASE att.atttypid
    WHEN 'text'::regtype, 'varchar'::regtype THEN
      ids := format('agent._allowlist_ids_text(%L, %L)', p_type, p_mode);
      arr := 'text[]';
    WHEN 'int2'::regtype, 'int4'::regtype, 'int8'::regtype THEN
      -- int2/int4 = int8 are in the integer btree family: the index serves it
      ids := format('agent._allowlist_ids_int8(%L, %L)', p_type, p_mode);
      arr := 'bigint[]';
    WHEN 'uuid'::regtype THEN
      ids := format('agent._allowlist_ids_uuid(%L, %L)', p_type, p_mode);
      arr := 'uuid[]';
    ELSE
      indexable := false;
      ids := format('agent._allowlist_ids_text(%L, %L)', p_type, p_mode);
      arr := 'text[]';
  END CASE;
  -- Folded at plan time: a non-agent session keeps "true"; an agent session
  -- keeps the id test (its array an InitPlan), or with a custom ACL function
  -- the per-row check.
  expr := format('NOT agent._allowlist_active() OR (NOT agent._allowlist_custom_acl() AND %s)'
                 ' OR (agent._allowlist_custom_acl() AND agent.can_access((SELECT agent.current_agent_id()), %L, (%s)::text, %L))',
                 -- "(SELECT f())::t[]": an array-valued InitPlan, not ANY (subquery)
                 CASE WHEN indexable THEN format('%s = ANY ((SELECT %s)::%s)', col, ids, arr)
                      ELSE format('(%s)::text = ANY ((SELECT %s)::%s)', col, ids, arr) END,
                 p_type, col, p_mode);
END
$$;
COMMENT ON FUNCTION agent._allowlist_expr(regclass, name, text, text) IS
  'Internal: the policy expression "not an agent session, or the id is in the readable set" for a table column and a mode.';

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
