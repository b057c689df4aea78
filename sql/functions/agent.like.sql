CREATE FUNCTION agent.like(string text, pattern text) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF COST 10
SUPPORT agent._like_support
AS 'MODULE_PATHNAME', 'pg_agents_like';
COMMENT ON FUNCTION agent.like(text, text) IS
  'string LIKE pattern, marked LEAKPROOF (a pattern ending with the escape character, or with more than 256 %, matches nothing instead of possibly raising an error), so that under row-level security (the allowlist) a pattern search can start from a trigram (pg_trgm) or btree prefix index. Write agent.like(body, ''%x%'') instead of body LIKE ''%x%'' in an agent''s searches.';
