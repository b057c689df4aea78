CREATE OR REPLACE FUNCTION agent._allowlist_custom_acl() RETURNS boolean
LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_custom_acl';
COMMENT ON FUNCTION agent._allowlist_custom_acl() IS
  'Internal to the allowlist policies: whether a custom ACL function is configured, declared IMMUTABLE so that the planner folds it; changing agent.access_config invalidates cached plans (and the value, which each backend keeps until then).';
