-- prov (issue 30, findings 5 and 6, and point 9: provider and secret
-- changes audited): providers and secrets with a workspace, a delegated
-- provider admin that cannot send a stored secret where it likes,
-- agent.provider_status filtered by workspace with last_error as a code, and
-- audit rows for add/alter/drop_provider and set/drop_secret
-- (sql/src/610_providers.sql).

ALTER TABLE agent.secrets ADD COLUMN workspace_id text CHECK (workspace_id <> '');
ALTER TABLE agent.secrets DROP CONSTRAINT secrets_pkey;
ALTER TABLE agent.secrets ALTER COLUMN name SET NOT NULL;
-- (issue 31, run_as: a user's own secret, resolved for the runs acting for that user)
ALTER TABLE agent.secrets ADD COLUMN user_id text CHECK (user_id <> ''),
                          ADD CONSTRAINT secrets_user_workspace CHECK (user_id IS NULL OR workspace_id IS NOT NULL);
CREATE UNIQUE INDEX secrets_workspace_name_key ON agent.secrets ((coalesce(workspace_id, '')), (coalesce(user_id, '')), name);
COMMENT ON COLUMN agent.secrets.name IS 'Name of the secret, as in ${secret:NAME}; unique per workspace (and among the cluster''s).';
COMMENT ON COLUMN agent.secrets.workspace_id IS 'Workspace whose providers and MCP servers may reference the secret; NULL: a cluster secret, which every provider and MCP server may reference (a workspace secret of the same name wins).';
COMMENT ON COLUMN agent.secrets.ciphertext IS 'Format byte 0x01, 12-byte nonce, 16-byte GCM tag, ciphertext (the name, and the workspace of a workspace secret, are the additional authenticated data); useless without the key file.';
COMMENT ON COLUMN agent.secrets.created_at IS 'When the secret was first set.';
COMMENT ON COLUMN agent.secrets.updated_at IS 'When it was last set (rotation).';
COMMENT ON COLUMN agent.secrets.user_id IS 'The user whose own secret this is, in workspace_id: the providers'' references of that name resolve to it for the runs that act for that user (a manual run they requested, a run_as creator schedule job they created), never for others; NULL: the workspace''s (or the cluster''s) secret.';
ALTER TABLE agent.providers ADD COLUMN workspace_id text CHECK (workspace_id <> '');
COMMENT ON COLUMN agent.providers.workspace_id IS 'Workspace whose agents may name the provider (its ${secret:NAME} references resolve among that workspace''s secrets, then the cluster''s); NULL: a cluster provider every workspace may use (cluster secrets only).';

DROP FUNCTION agent.set_secret(text, text);
DROP FUNCTION agent.drop_secret(text);
DROP FUNCTION agent._provider_check_key(text, text);

\ir ../../functions/agent.set_secret.sql

\ir ../../functions/agent.drop_secret.sql

\ir ../../functions/agent._provider_settings.sql

\ir ../../functions/agent._provider_check_key.sql

-- The role the caller acts as (SET ROLE, else the session user): a
-- SECURITY DEFINER function runs as its owner, but the role setting and the
-- session user stay the caller's.
\ir ../../functions/agent._caller_is_superuser.sql

-- A delegated provider admin (a role that is not superuser and was granted
-- EXECUTE on add_provider/alter_provider) never makes a stored secret travel
-- to a URL or a header of its choosing: it may not set the URL, the key or
-- the headers of a provider that references a secret (after the change).
\ir ../../functions/agent._provider_admin_check.sql

-- what an audit row of a provider says of it: never a secret, header names only
\ir ../../functions/agent._provider_audit_inputs.sql

\ir ../../functions/agent.add_provider.sql

\ir ../../functions/agent.alter_provider.sql

\ir ../../functions/agent.drop_provider.sql
COMMENT ON FUNCTION agent.drop_provider(text) IS
  'Removes a provider no live agent names (2BP01 otherwise). Audited as provider.drop. Superusers only.';

-- An agent's settings name an existing provider of its workspace or of the
-- cluster, and not beside llm_url
\ir ../../functions/agent._agents_provider_check.sql
COMMENT ON TRIGGER agents_provider_check ON agent.agents IS
  'scope.provider must name an existing provider (agent.providers) of the agent''s workspace or of the cluster.';

\ir ../../views/agent.provider_status.sql
