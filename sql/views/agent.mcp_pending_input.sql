CREATE OR REPLACE VIEW agent.mcp_pending_input WITH (security_barrier) AS
  SELECT e.approval_key, e.run_id, e.workspace_id, e.exposed_name, r.key AS input_key,
         r.value->'params'->>'message' AS message, r.value->'params'->'requestedSchema' AS requested_schema,
         e.created_at, e.expires_at
    FROM agent.mcp_elicitations e, pg_catalog.jsonb_each(e.input_requests) r
   WHERE e.status = 'pending' AND e.expires_at > pg_catalog.now()
     AND EXISTS (SELECT 1 FROM agent.runs x WHERE x.id = e.run_id
                    AND x.status = CASE WHEN e.live THEN 'running' ELSE 'waiting_approval' END)
     AND (e.workspace_id = pg_catalog.current_setting('pg_agents.workspace', true)
          OR pg_catalog.current_setting('is_superuser') = 'on');
COMMENT ON VIEW agent.mcp_pending_input IS 'Questions MCP servers are waiting on, of the session''s workspace: the form to show a person (message, requested JSON schema), the approval key to answer with.';
COMMENT ON COLUMN agent.mcp_pending_input.approval_key IS 'What agent.answer_elicitation is given.';
COMMENT ON COLUMN agent.mcp_pending_input.run_id IS 'The waiting run.';
COMMENT ON COLUMN agent.mcp_pending_input.workspace_id IS 'Workspace of the run.';
COMMENT ON COLUMN agent.mcp_pending_input.exposed_name IS 'The tool being called.';
COMMENT ON COLUMN agent.mcp_pending_input.input_key IS 'Key of the question among the server''s inputRequests.';
COMMENT ON COLUMN agent.mcp_pending_input.message IS 'The server''s question.';
COMMENT ON COLUMN agent.mcp_pending_input.requested_schema IS 'JSON schema of the expected answer (with defaults).';
COMMENT ON COLUMN agent.mcp_pending_input.created_at IS 'When the server asked.';
COMMENT ON COLUMN agent.mcp_pending_input.expires_at IS 'When the question (and the run) expires.';
