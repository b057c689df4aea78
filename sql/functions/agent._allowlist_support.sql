CREATE FUNCTION agent._allowlist_support(internal) RETURNS internal
LANGUAGE C STRICT
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_support';
COMMENT ON FUNCTION agent._allowlist_support(internal) IS
  'Internal planner support of agent._allowlist_has (selectivity from the size of the readable set, the index condition id = ANY (agent._allowlist_ids_*(...)) on a btree index of the id column) and of agent._allowlist_ids_* (the cost of one index probe per readable id).';
