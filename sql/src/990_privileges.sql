-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md).  Install and
-- upgrade both end with this file, so it states the whole model and must
-- stay idempotent.
-- ===========================================================================
SELECT 1 WHERE false;

-- claim:
-- an external executor claims runs (agent.claim_runs serves workspaces in
-- turn and honours pg_agents.max_runs_per_workspace; bound to the
-- session's workspace)
GRANT EXECUTE ON FUNCTION agent.claim_runs(int) TO agents_executor;
