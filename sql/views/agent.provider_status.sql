CREATE OR REPLACE VIEW agent.provider_status WITH (security_barrier) AS
SELECT p.name,
       p.kind,
       p.default_model AS model,
       pg_catalog.substring(p.base_url, '^[a-z]+://([^/:]+)') AS endpoint_host,
       p.api_key IS NOT NULL AS key_configured,
       p.stream,
       p.max_concurrent,
       p.requests_per_minute,
       p.tokens_per_minute,
       p.request_timeout,
       coalesce(h.in_flight, 0) AS in_flight,
       h.requests_available,
       h.tokens_available,
       CASE WHEN h.limited_until > pg_catalog.now() THEN h.limited_until END AS limited_until,
       coalesce(h.requests, 0) AS requests,
       coalesce(h.waits, 0) AS waits,
       coalesce(h.rate_limited, 0) AS rate_limited,
       h.last_error,
       h.last_error_at,
       p.workspace_id
  FROM agent.providers p
  LEFT JOIN agent._provider_headroom() h ON h.name = p.name
 WHERE p.workspace_id IS NULL
    OR (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
    OR (p.workspace_id = agent.current_workspace()
        AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent.provider_status IS 'LLM providers without their keys or headers: kind, model, endpoint host, limits, and what the worker''s limiter shows now (requests in flight, headroom, 429s, last error as a code). The cluster''s providers and those of the session''s workspace (pg_agents.workspace, when the role may read it); every provider for pg_monitor and superusers.';
COMMENT ON COLUMN agent.provider_status.name IS 'Provider name.';
COMMENT ON COLUMN agent.provider_status.kind IS 'Wire format: openai or anthropic.';
COMMENT ON COLUMN agent.provider_status.model IS 'Default model.';
COMMENT ON COLUMN agent.provider_status.endpoint_host IS 'Host of the base URL.';
COMMENT ON COLUMN agent.provider_status.key_configured IS 'Whether the provider has an API key (never shown).';
COMMENT ON COLUMN agent.provider_status.stream IS 'Whether requests stream.';
COMMENT ON COLUMN agent.provider_status.max_concurrent IS 'Concurrency limit (NULL: none).';
COMMENT ON COLUMN agent.provider_status.requests_per_minute IS 'Requests per minute limit (NULL: none).';
COMMENT ON COLUMN agent.provider_status.tokens_per_minute IS 'Tokens per minute limit (NULL: none).';
COMMENT ON COLUMN agent.provider_status.request_timeout IS 'Request time-out in ms (NULL: pg_agents.request_timeout).';
COMMENT ON COLUMN agent.provider_status.in_flight IS 'Requests in flight now.';
COMMENT ON COLUMN agent.provider_status.requests_available IS 'Requests that may start right now under requests_per_minute (NULL: no limit).';
COMMENT ON COLUMN agent.provider_status.tokens_available IS 'Tokens that may be sent right now under tokens_per_minute (NULL: no limit).';
COMMENT ON COLUMN agent.provider_status.limited_until IS 'No request before then: the provider said its limit is reached (a 429, or remaining 0 in its rate-limit headers).';
COMMENT ON COLUMN agent.provider_status.requests IS 'Requests sent since the worker started.';
COMMENT ON COLUMN agent.provider_status.waits IS 'Times a run waited for headroom since the worker started.';
COMMENT ON COLUMN agent.provider_status.rate_limited IS '429 replies since the worker started.';
COMMENT ON COLUMN agent.provider_status.last_error IS 'Last failed request as a status line of the worker''s own words: HTTP <status>, transport error: <libcurl''s reason>, or unusable reply (HTTP <status>); never the provider''s body (which may echo a prompt) nor a key. The run''s step has the full error.';
COMMENT ON COLUMN agent.provider_status.workspace_id IS 'Workspace of the provider; NULL: a cluster provider.';
COMMENT ON COLUMN agent.provider_status.last_error_at IS 'When it failed.';
