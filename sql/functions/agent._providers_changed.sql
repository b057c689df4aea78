CREATE FUNCTION agent._providers_changed() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_providers_changed';
COMMENT ON FUNCTION agent._providers_changed() IS
  'Internal trigger: a change of agent.providers or agent.secrets makes the worker reload them before its next request, once the transaction commits.';
