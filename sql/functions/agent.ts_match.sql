CREATE FUNCTION agent.ts_match(vector tsvector, query tsquery) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._ts_match_support
AS 'MODULE_PATHNAME', 'pg_agents_ts_match';
COMMENT ON FUNCTION agent.ts_match(tsvector, tsquery) IS
  'vector @@ query, marked LEAKPROOF (it raises no error that depends on its arguments; a query nested more than 256 levels deep matches nothing), so that under row-level security (the allowlist) a search can start from the text index (the default GIN tsvector_ops serves it) and filter with the policy afterwards. Write agent.ts_match(tsv, q) instead of tsv @@ q in an agent''s searches.';
