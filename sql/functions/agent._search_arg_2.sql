CREATE FUNCTION agent._search_arg(pattern text) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_search_arg_text';
COMMENT ON FUNCTION agent._search_arg(text) IS
  'Internal to the allowlist''s rewrite of an agent''s LIKE $1 and ILIKE $1 (a pattern that is not a constant): the pattern itself, or an error (whatever the rows) when agent.like would refuse it (ending with the escape character, more than 256 %); evaluated once before the scan, and in the trigram index''s condition.';
