CREATE FUNCTION agent.ilike(string text, pattern text) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._like_support
AS 'MODULE_PATHNAME', 'pg_agents_ilike';
COMMENT ON FUNCTION agent.ilike(text, text) IS
  'string ILIKE pattern, marked LEAKPROOF (as agent.like), so that under the allowlist a case-insensitive pattern search can start from a trigram (pg_trgm) index.';
