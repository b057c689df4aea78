CREATE TABLE agent.audit_log (
    id           bigint GENERATED ALWAYS AS IDENTITY,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_kind   text NOT NULL CHECK (actor_kind IN ('agent', 'human', 'system')),
    actor_id     text,
    on_behalf_of text,
    db_user      text NOT NULL DEFAULT session_user,
    run_id       bigint,
    surface      text,
    action       text NOT NULL,
    status       text NOT NULL DEFAULT 'success' CHECK (status IN ('success', 'error', 'denied')),
    error_code   text,
    target_type  text,
    target_id    text,
    owner_id     text,
    workspace_id text NOT NULL,
    inputs       jsonb,
    changes      jsonb,
    summary      text,
    txid         bigint NOT NULL DEFAULT txid_current()
) PARTITION BY RANGE (at);
-- One partition per month (UTC) and a default one (200_audit.sql); only the
-- indexes the documented reads need (docs/audit.md, "Storage").
CREATE INDEX audit_log_at_brin ON agent.audit_log USING brin (at);
CREATE INDEX audit_log_workspace_at_idx ON agent.audit_log (workspace_id, at);
CREATE INDEX audit_log_target_idx ON agent.audit_log (target_type, target_id);
CREATE INDEX audit_log_run_idx ON agent.audit_log (run_id) WHERE run_id IS NOT NULL;
COMMENT ON TABLE agent.audit_log IS 'Append-only, redacted, tenant-scoped record of who changed what, human or agent; partitioned by month of at.';
COMMENT ON COLUMN agent.audit_log.id IS 'Audit row id.';
COMMENT ON COLUMN agent.audit_log.at IS 'When it happened.';
COMMENT ON COLUMN agent.audit_log.actor_kind IS 'agent, human or system.';
COMMENT ON COLUMN agent.audit_log.actor_id IS 'Agent id or user id of the actor.';
COMMENT ON COLUMN agent.audit_log.on_behalf_of IS 'User an agent acted for.';
COMMENT ON COLUMN agent.audit_log.db_user IS 'PostgreSQL session user, always recorded.';
COMMENT ON COLUMN agent.audit_log.run_id IS 'Agent run, when the change came from one.';
COMMENT ON COLUMN agent.audit_log.surface IS 'sql, tool, http, frontend, cli, mcp or a2a.';
COMMENT ON COLUMN agent.audit_log.action IS 'insert, update, delete, or a named action such as agent.grant.';
COMMENT ON COLUMN agent.audit_log.status IS 'success, error or denied.';
COMMENT ON COLUMN agent.audit_log.error_code IS 'Reason code or SQLSTATE of a refusal or error.';
COMMENT ON COLUMN agent.audit_log.target_type IS 'Kind of the changed object.';
COMMENT ON COLUMN agent.audit_log.target_id IS 'Id (primary key) of the changed object.';
COMMENT ON COLUMN agent.audit_log.owner_id IS 'Owner of the changed object, when known.';
COMMENT ON COLUMN agent.audit_log.workspace_id IS 'Workspace (tenant) of the row, '''' for an action of no workspace; reads are scoped by it (the distribution column on Citus, never NULL).';
COMMENT ON COLUMN agent.audit_log.inputs IS 'Inputs of a named action (redacted).';
COMMENT ON COLUMN agent.audit_log.changes IS 'Row data: new row, changed columns {col: {old, new}}, or old row (redacted).';
COMMENT ON COLUMN agent.audit_log.summary IS 'One line in clear.';
COMMENT ON COLUMN agent.audit_log.txid IS 'Transaction id of the change.';
