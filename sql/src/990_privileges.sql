-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md).  Install and
-- upgrade both end with this file, so it states the whole model and must
-- stay idempotent.
-- ===========================================================================
SELECT 1 WHERE false;

-- tenants: the API of activity, insights, drafts, teams, duplicate and
-- delegation (workspace-bound; see docs/tenants.md)
GRANT EXECUTE ON FUNCTION agent.activity(bigint, text, text, bigint, timestamptz, timestamptz, int) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.run_detail(bigint, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.insights(bigint, text, timestamptz, timestamptz) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.generate_draft(text, text, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.draft(bigint, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.create_from_draft(jsonb, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.send_to_run(bigint, text, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.duplicate(bigint, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.save_settings(bigint, jsonb, text, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.create_agent(text, text, text, jsonb) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.delegate(bigint, bigint, text, jsonb, int) TO agents_executor;
GRANT EXECUTE ON FUNCTION agent.try_delegate(bigint, bigint, text, jsonb, int) TO agents_executor;
GRANT EXECUTE ON FUNCTION agent.delegation_context(bigint) TO agents_executor;
GRANT SELECT ON agent.insights TO agents_reader;
-- (functions a view calls run with the rights of the view's user: a reader
-- of agent.insights needs these three; they reveal nothing but the
-- session's own workspace and two status classifications)
GRANT EXECUTE ON FUNCTION agent._session_workspace() TO agents_reader;
GRANT EXECUTE ON FUNCTION agent._run_failed(text) TO agents_reader;
GRANT EXECUTE ON FUNCTION agent._run_is_active(text) TO agents_reader;
