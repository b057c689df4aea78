CREATE FUNCTION agent._search_arg(query tsquery) RETURNS tsquery
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_search_arg_tsquery';
COMMENT ON FUNCTION agent._search_arg(tsquery) IS
  'Internal to the allowlist''s rewrite of an agent''s tsv @@ $1 (a query that is not a constant): the query itself, or an error (whatever the rows) when it nests deeper than agent.ts_match takes; evaluated once before the scan, and in the text index''s condition.';
