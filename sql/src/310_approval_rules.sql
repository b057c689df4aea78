-- pg_agents: what an agent's scope says about approvals (docs/runs.md,
-- "When a call needs approval"): "deny_ends_run" and the conditional gates
-- of "approval_rules", checked when the settings are saved.  The worker
-- checks a rule's function again at every call (src/approval_rules.c).

-- The functions that may serve as an approval rule's predicate, as the
-- worker will call them: (text, jsonb, bigint) RETURNS boolean, a plain
-- function (not an aggregate, a window function or a procedure), not of
-- the schemas agent, pg_catalog or information_schema, SECURITY DEFINER
-- only when a superuser owns it; the role saving the settings and the tool
-- role must both be allowed to execute it.
\ir ../functions/agent._check_approval_function.sql

\ir ../functions/agent._check_scope.sql
