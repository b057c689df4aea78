CREATE VIEW agent.audit_summary WITH (security_invoker = true) AS
SELECT pg_catalog.date_trunc('day', l.at) AS day, l.workspace_id, l.actor_kind, l.action, l.status,
       pg_catalog.count(*) AS events
  FROM agent.audit_log l
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW agent.audit_summary IS
  'Audit rows per day, workspace, actor kind, action and status (row-level security applies: a non-owner sees its workspace).';
COMMENT ON COLUMN agent.audit_summary.day IS 'Day (UTC midnight in the session time zone).';
COMMENT ON COLUMN agent.audit_summary.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.audit_summary.actor_kind IS 'agent, human or system.';
COMMENT ON COLUMN agent.audit_summary.action IS 'Action.';
COMMENT ON COLUMN agent.audit_summary.status IS 'success, error or denied.';
COMMENT ON COLUMN agent.audit_summary.events IS 'Number of audit rows.';
