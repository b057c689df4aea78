-- pg_agents: asynchronous MCP calls of the worker (docs/mcp.md, "How the
-- worker calls MCP servers").
--
-- The worker never holds a transaction across an MCP request: a short
-- transaction checks the call and prepares it (agent._mcp_worker_prepare,
-- after the approval gate), the request goes out through the worker's curl
-- multi handle with no transaction open, and a second short transaction
-- records the answer (agent._mcp_worker_finish): the same step, the same
-- pause for people (2026-07-28 input_required) and the same failed results
-- as agent.mcp_agent_call_input, which stays for synchronous use.

\ir ../functions/agent._mcp_worker_prepare.sql
REVOKE ALL ON FUNCTION agent._mcp_worker_prepare(bigint, text, jsonb, bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_prepare(bigint, text, jsonb, bigint, text, jsonb) IS
  'Internal (worker): prepares an MCP tool call of a run (the tool as agent.mcp_agent_tools gave it, the approval gate passed) for the asynchronous request: {"prepared": true, "server_id", "server", "tool", "url", "headers", "protocol_version", "arguments", "tool_def", "input_responses"?, "request_state"?} (an answered elicitation of this call is consumed with its approval), or a refusal when the server is gone or disabled. Holds the server''s headers: superusers only, never recorded.';

\ir ../functions/agent._mcp_worker_finish.sql

-- A 2025-11-25 server's elicitation/create request in the stream of a
-- worker's call (docs/mcp.md, "Elicitation"): the stream stays open, the run
-- stays running in its slot, the question waits for people like an approval
-- (agent.mcp_pending_input, agent.answer_elicitation) for
-- pg_agents.mcp_elicitation_wait at most (or pg_agents.approval_ttl, if
-- shorter); the worker looks for the answer (agent._mcp_worker_elicit_poll)
-- and sends it on the server's session.
\ir ../functions/agent._mcp_worker_elicit.sql

\ir ../functions/agent._mcp_worker_elicit_poll.sql
REVOKE ALL ON FUNCTION agent._mcp_worker_elicit_poll(bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_worker_elicit_poll(bigint, boolean) IS
  'Internal (worker): the answer to send to the server for a live elicitation: a person''s (agent.answer_elicitation, then consumed), a decline when its approval was denied, a cancel when it was approved without an answer, or when it expired (p_expire: pg_agents.mcp_elicitation_wait passed; recorded as expired, with its approval); NULL while it waits.';
