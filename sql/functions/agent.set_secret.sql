CREATE FUNCTION agent.set_secret(name text, value text, workspace_id text DEFAULT NULL, user_id text DEFAULT NULL) RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_set_secret';
COMMENT ON FUNCTION agent.set_secret(text, text, text, text) IS
  'Stores (or replaces: rotation, effective at the worker''s next request) a secret, encrypted with the key of pg_agents.secret_key_file (created on first use); workspace_id NULL: a cluster secret, else one only that workspace''s providers and MCP servers resolve (it wins over a cluster secret of the same name); with user_id (and a workspace_id): that user''s own secret, which the providers'' references of that name resolve to for the runs acting for that user (docs/worker.md, "Whose key"). Audited as secret.set (never the value). Superusers only. Pass the value as a bind parameter or read it from a file so that it is not in the statement text (docs/worker.md, "Secrets").';
