CREATE OR REPLACE FUNCTION agent._enqueue_run(p_agent_id bigint, p_regime text, p_origin text,
                                   p_input jsonb DEFAULT '{}',
                                   p_trigger_id bigint DEFAULT NULL,
                                   p_requested_by text DEFAULT NULL,
                                   p_parent_run_id bigint DEFAULT NULL,
                                   p_token_budget bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'pg_agents_enqueue_run';
-- C (src/enqueue.c), with kept plans: the agent (of the session's workspace,
-- or its own: a session bound to none, such as agent.tick's, or an event of
-- a row of another workspace than the session's: the callers check the
-- boundary; every statement names the workspace), the parent run of a
-- child, for an autonomous run the hourly cap (one queue decision at a time
-- per agent: the agent's row of agent.locks FOR UPDATE, made by agent._lock
-- on its first queueing; the recent runs counted once a transaction, up to
-- the cap, then carried by agent._cap_memo's memo), the id taken first (a
-- root run is its own root), the run row (budget_exceeded and finished at
-- once past the cap), NOTIFY agent_runs and the worker's wake-up at commit.
REVOKE ALL ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) IS
  'Internal: queues one run (hourly cap for autonomous runs, NOTIFY agent_runs, worker wake-up at commit); the one path every origin uses.';
