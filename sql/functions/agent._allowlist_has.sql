CREATE FUNCTION agent._allowlist_has(id bigint, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
