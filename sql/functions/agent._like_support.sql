CREATE FUNCTION agent._like_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_like_support';
COMMENT ON FUNCTION agent._like_support(internal) IS
  'Internal planner support of agent.like and agent.ilike: the estimates and btree prefix conditions of LIKE and ILIKE, and ~~ / ~~* as the index condition on an index whose operator family has it (pg_trgm''s gin_trgm_ops, gist_trgm_ops) for a constant pattern.';
