CREATE FUNCTION agent._ts_match_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_ts_match_support';
COMMENT ON FUNCTION agent._ts_match_support(internal) IS
  'Internal planner support of agent.ts_match: the selectivity of tsvector @@ tsquery, and @@ as the index condition on a GIN or GiST index whose operator family has it.';
