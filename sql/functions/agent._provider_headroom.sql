CREATE FUNCTION agent._provider_headroom()
RETURNS TABLE (name text, in_flight integer, max_concurrent integer, requests_available double precision,
               tokens_available double precision, limited_until timestamptz, requests bigint, waits bigint,
               rate_limited bigint, last_error text, last_error_at timestamptz)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_provider_headroom';
COMMENT ON FUNCTION agent._provider_headroom() IS
  'Internal: what the worker last published of each provider''s limiter (shared memory; '''' is the default provider of the GUCs); no rows when the library was not preloaded.';
