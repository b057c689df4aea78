CREATE FUNCTION agent.drop_secret(name text, workspace_id text DEFAULT NULL, user_id text DEFAULT NULL) RETURNS boolean
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_drop_secret';
COMMENT ON FUNCTION agent.drop_secret(text, text, text) IS
  'Removes a secret of the cluster (workspace_id NULL), of a workspace, or of a user of a workspace (user_id; 42704 when there is none); providers and MCP servers that reference it fail with a clear error until it is set again (or fall back to the cluster secret of that name). Audited as secret.drop. Superusers only.';
