CREATE FUNCTION agent._allowlist_has(id text, resource_type text, mode text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT agent._allowlist_support
AS 'MODULE_PATHNAME', 'pg_agents_allowlist_has';
COMMENT ON FUNCTION agent._allowlist_has(bigint, text, text) IS
  'Internal to the allowlist policies: whether the id is in the readable set of the session''s agent for the type and mode (false when the session does not act as an agent). Planned by agent._allowlist_support: as a probe of the id index with the readable set, or as a filter after the query''s own index conditions, by cost.';
COMMENT ON FUNCTION agent._allowlist_has(integer, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for integer id columns.';
COMMENT ON FUNCTION agent._allowlist_has(smallint, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for smallint id columns.';
COMMENT ON FUNCTION agent._allowlist_has(uuid, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for uuid id columns.';
COMMENT ON FUNCTION agent._allowlist_has(text, text, text) IS
  'Internal to the allowlist policies: as agent._allowlist_has(bigint, text, text), for text and varchar id columns (and other types compared as text); ids compare byte for byte.';
