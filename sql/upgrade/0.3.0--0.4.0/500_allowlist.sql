-- Allowlist (sql/src/500_allowlist.sql): selective search under the
-- allowlist.  The policies test membership of the readable set with
-- agent._allowlist_has (planned by agent._allowlist_support: an id-index
-- probe or a filter after the text index, by cost), and agent.ts_match is
-- the leakproof full-text match that lets an agent's search start from the
-- text index.

CREATE FUNCTION agent._allowlist_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_support';
COMMENT ON FUNCTION agent._allowlist_support(internal) IS
  'Internal planner support of agent._allowlist_has (selectivity from the size of the readable set, the index condition id = ANY (agent._allowlist_ids_*(...)) on a btree index of the id column) and of agent._allowlist_ids_* (the cost of one index probe per readable id).';

-- C, kept per backend until agent.access_config changes (it was SQL, run at
-- every planning of an agent query)
CREATE OR REPLACE FUNCTION agent._allowlist_custom_acl() RETURNS boolean
LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_custom_acl';
COMMENT ON FUNCTION agent._allowlist_custom_acl() IS
  'Internal to the allowlist policies: whether a custom ACL function is configured, declared IMMUTABLE so that the planner folds it; changing agent.access_config invalidates cached plans (and the value, which each backend keeps until then).';

ALTER FUNCTION agent._allowlist_ids_text(text, text) VOLATILE SUPPORT agent._allowlist_support;
ALTER FUNCTION agent._allowlist_ids_int8(text, text) VOLATILE SUPPORT agent._allowlist_support;
ALTER FUNCTION agent._allowlist_ids_uuid(text, text) VOLATILE SUPPORT agent._allowlist_support;

CREATE FUNCTION agent._allowlist_has(id bigint, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id integer, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id smallint, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id uuid, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
CREATE FUNCTION agent._allowlist_has(id text, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
COMMENT ON FUNCTION agent._allowlist_has(bigint, text, text) IS
  'Internal to the allowlist policies: whether the id is in the readable set of the session''s agent for the type and mode (false when the session does not act as an agent). Planned by agent._allowlist_support: as a probe of the id index with the readable set, or as a filter after the query''s own index conditions, by cost.';
COMMENT ON FUNCTION agent._allowlist_has(integer, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for integer id columns.';
COMMENT ON FUNCTION agent._allowlist_has(smallint, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for smallint id columns.';
COMMENT ON FUNCTION agent._allowlist_has(uuid, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for uuid id columns.';
COMMENT ON FUNCTION agent._allowlist_has(text, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for text and varchar id columns (and other types compared as text); ids compare byte for byte.';

CREATE FUNCTION agent._ts_match_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_ts_match_support';
COMMENT ON FUNCTION agent._ts_match_support(internal) IS
  'Internal planner support of agent.ts_match: the selectivity of tsvector @@ tsquery, and @@ as the index condition on a GIN or GiST index whose operator family has it.';

CREATE FUNCTION agent.ts_match(vector tsvector, query tsquery) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._ts_match_support
AS 'MODULE_PATHNAME', 'pg_agents_ts_match';
COMMENT ON FUNCTION agent.ts_match(tsvector, tsquery) IS
  'vector @@ query, marked LEAKPROOF (it raises no error that depends on its arguments; a query nested more than 256 levels deep matches nothing), so that under row-level security (the allowlist) a search can start from the text index (the default GIN tsvector_ops serves it) and filter with the policy afterwards. Write agent.ts_match(tsv, q) instead of tsv @@ q in an agent''s searches.';

CREATE FUNCTION agent._like_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_like_support';
COMMENT ON FUNCTION agent._like_support(internal) IS
  'Internal planner support of agent.like and agent.ilike: the estimates and btree prefix conditions of LIKE and ILIKE, and ~~ / ~~* as the index condition on an index whose operator family has it (pg_trgm''s gin_trgm_ops, gist_trgm_ops) for a constant pattern.';

CREATE FUNCTION agent.like(string text, pattern text) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._like_support
AS 'MODULE_PATHNAME', 'pg_agents_like';
COMMENT ON FUNCTION agent.like(text, text) IS
  'string LIKE pattern, marked LEAKPROOF (a pattern ending with the escape character, or with more than 256 %, matches nothing instead of possibly raising an error), so that under row-level security (the allowlist) a pattern search can start from a trigram (pg_trgm) or btree prefix index. Write agent.like(body, ''%x%'') instead of body LIKE ''%x%'' in an agent''s searches.';

CREATE FUNCTION agent.ilike(string text, pattern text) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._like_support
AS 'MODULE_PATHNAME', 'pg_agents_ilike';
COMMENT ON FUNCTION agent.ilike(text, text) IS
  'string ILIKE pattern, marked LEAKPROOF (as agent.like), so that under the allowlist a case-insensitive pattern search can start from a trigram (pg_trgm) index.';

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
