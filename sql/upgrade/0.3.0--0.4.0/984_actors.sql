-- Issue 30, findings 8 and 9 (helper actors).
-- Actors on lifecycle changes: every API function that takes a user id sets
-- pg_agents.acting_user for its own call (SET clause + set_config), and the
-- audit rows of the call name that user (src/audit_trigger.c AuditIdentity).
-- triggers.conversation is a trigger setting: in _trigger_json, snapshots,
-- set_trigger, restores, _check_trigger and the history trigger's columns.

\ir ../../functions/agent.share.sql

COMMENT ON FUNCTION agent.share(bigint, text, text, text) IS
  'Shares the agent with user:<id> or group:<id> at full, edit or interact (replacing a previous level); by_user needs full.';

\ir ../../functions/agent.unshare.sql

COMMENT ON FUNCTION agent.unshare(bigint, text, text) IS
  'Removes the share of the agent with user:<id> or group:<id>; true when there was one. by_user needs full.';

\ir ../../functions/agent.grant.sql

COMMENT ON FUNCTION agent.grant(bigint, text, text, text, text) IS
  'Grants the agent read or edit on a resource (replacing a previous grant) and writes a version; by_user needs edit on the agent and, unless they own it, must read (for edit: edit) the resource themselves, 42501 otherwise (NULL: an application call, unchecked). An agent of another workspace is 42704.';

\ir ../../functions/agent.revoke.sql

COMMENT ON FUNCTION agent.revoke(bigint, text, text, text) IS
  'Removes the agent''s grant on a resource (writing a version when there was one); true when there was one. by_user needs edit (NULL: an application call). An agent of another workspace is 42704.';

\ir ../../functions/agent._trigger_json.sql

\ir ../../functions/agent._snapshot.sql

\ir ../../functions/agent.create_agent.sql

COMMENT ON FUNCTION agent.create_agent(text, text, text, jsonb) IS
  'Creates an agent owned by owner_id (who holds full implicitly) with optional settings, and writes version 1.';

\ir ../../functions/agent.save_settings.sql

COMMENT ON FUNCTION agent.save_settings(bigint, jsonb, text, text) IS
  'Saves settings (edit level): checks every key, applies them, writes a version whose note lists the changed sections, audits. A grant the agent does not hold yet (or raised to edit), a new instruction page and a new delegable agent need by_user''s own access (42501). Returns the version id.';

\ir ../../functions/agent.restore_version.sql

COMMENT ON FUNCTION agent.restore_version(bigint, text) IS
  'Restores a version (edit level): a new version made from the old snapshot, grants and triggers included (triggers of the snapshot recreated or updated, the others disabled, never deleted); history is never rewritten. What by_user cannot read themselves is left out (NOTICE, version note, audit row). Returns the new version id.';

\ir ../../functions/agent._duplicate.sql

COMMENT ON FUNCTION agent._duplicate(bigint, text) IS
  'Internal: the body of agent.duplicate.';

\ir ../../functions/agent.set_trigger.sql

COMMENT ON FUNCTION agent.set_trigger(bigint, jsonb, text) IS
  'Creates a trigger of the agent, or changes it when "trigger" has an id (keys given replace, others are kept); edit level (42501; by_user NULL: an application call). Keys: kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation; validated as every trigger write (22023). A watched page, collection, skill or agent must be readable by by_user. Writes one version (its note names the trigger) and one audit row (agent.trigger.create/update). An agent or trigger of another workspace is 42704. Returns the trigger id.';

\ir ../../functions/agent.delete_trigger.sql

COMMENT ON FUNCTION agent.delete_trigger(bigint, text) IS
  'Deletes a trigger; edit level on its agent (42501; by_user NULL: an application call). Writes one version (its note names the trigger) and one audit row (agent.trigger.delete). A trigger of another workspace is 42704.';

\ir ../../functions/agent._restore_triggers.sql

\ir ../../functions/agent.set_status.sql

COMMENT ON FUNCTION agent.set_status(bigint, text, text) IS
  'Suspends or resumes an agent (full level). Suspension stops new autonomous runs, not chat.';

\ir ../../functions/agent.delete_agent.sql

COMMENT ON FUNCTION agent.delete_agent(bigint, text) IS
  'Soft-deletes an agent (full level): deleted_at is set; it loses every access and every level, and its history stays.';

\ir ../../functions/agent.rerun.sql

\ir ../../functions/agent.cancel_run.sql

\ir ../../functions/agent.approve.sql

\ir ../../functions/agent.deny.sql

\ir ../../functions/agent._check_trigger.sql

\ir ../../functions/agent.fire_trigger.sql

COMMENT ON FUNCTION agent.fire_trigger(bigint, text, jsonb) IS
  'Fires a trigger of kind api for by_user (who needs the chat level on the agent): queues a manual run, origin api, with the payload as its input; the agent''s hourly run cap and pg_agents.dedup_window apply as for events (the same payload again returns the first run''s id). A trigger of another workspace is 42704; another kind 42809; a disabled trigger or a suspended agent 55000.';

\ir ../../functions/agent.mcp_agent_call.sql

COMMENT ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb, text) IS
  'Worker entry point: calls an MCP tool by its exposed name for an agent in a run of user_id (checked against agent.mcp_agent_tools(agent_id, user_id)); returns {"ok", "server", "tool", "result": CallToolResult, "error"?}; a refused, failed or unreachable call is a failed result, never an exception.';

\ir ../../functions/agent.mcp_authorize.sql

COMMENT ON FUNCTION agent.mcp_authorize(bigint, text, text) IS
  'Application: starts the OAuth authorization of an MCP server of the session''s workspace for by_user (taken on trust; a personal server by its owner only, a workspace server with the authorization code grant by a user with the full level on every agent of the workspace, 42501): returns the authorization URL to send the user to, whose redirect to redirect_uri the application hands to agent.mcp_authorization_callback. For the client credentials grant it authorizes at once and returns NULL.';

\ir ../../functions/agent.mcp_authorization_callback.sql

COMMENT ON FUNCTION agent.mcp_authorization_callback(text, text, text, text) IS
  'Application, from its OAuth redirect handler: completes the pending authorization named by state (single use, expires after pg_agents.approval_ttl) with the code and the iss of the redirect (NULL when it has none), for by_user, who must be the user who started it (42501, the state stays pending), then refreshes the server''s tools. Returns true when authorized; false (with a warning giving the reason) when the authorization server refused, the iss did not match or the code was wrong.';

\ir ../../functions/agent.answer_elicitation.sql

COMMENT ON FUNCTION agent.answer_elicitation(text, jsonb, text) IS
  'Answers the question an MCP server asked during a run''s tool call (key: the approval key shown in agent.mcp_pending_input) for by_user, who must be allowed to approve the run''s calls: {"action": "accept", "content": {...}} (the form''s defaults filled in), {"action": "decline"} or {"action": "cancel"}; several questions are answered as {input key: answer}. The run resumes and the server gets the answer (a live question of a 2025-11-25 server: on the stream the worker keeps open). Returns the run id.';

\ir ../../functions/agent.generate_draft.sql

COMMENT ON FUNCTION agent.generate_draft(text, text, text) IS
  'Queues a draft run (origin draft, manual regime acting as user_id, so its searches see only what the user may read) of the workspace''s hidden assistant agent; the worker and the LLM turn the description into a draft, read with agent.draft(run_id). Nothing else is saved. workspace_id defaults to the session''s workspace (pg_agents.workspace) and must be it (42501 otherwise). Returns the run id.';

\ir ../../functions/agent.create_from_draft.sql

COMMENT ON FUNCTION agent.create_from_draft(jsonb, text) IS
  'Saves a draft (from agent.draft, a template or hand-written) as an agent owned by by_user, after validating it again: keys and shapes, every grant re-checked against by_user''s own ACL (42501), every trigger validated (cron via agent.cron_valid, event fields, filter via agent.validate_filter; a watched resource must be readable by by_user). Every trigger is created disabled. The agent is created in the session''s workspace: a draft''s workspace_id must be it (42501 otherwise). Writes version 1 and an audit row; returns the agent id.';

\ir ../../functions/agent.send_message.sql

\ir ../../functions/agent.send_to_run.sql

\ir ../../functions/agent.cancel_runs.sql

\ir ../../functions/agent.requeue_runs.sql

DROP TRIGGER IF EXISTS triggers_history_upd ON agent.triggers;
CREATE TRIGGER triggers_history_upd
  AFTER UPDATE OF workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter, schedule,
                  timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_history();
COMMENT ON TRIGGER triggers_history_upd ON agent.triggers IS
  'Versions and audits a change of a trigger''s settings by a direct UPDATE (agent._triggers_history).';

-- Where the key file of the secrets store lies (src/secret_keyfile.c).
\ir ../../functions/agent.secret_key_file.sql
