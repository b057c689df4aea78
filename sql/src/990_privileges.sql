-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md, "Roles").
--
-- Install and upgrade both end with this file, so it states the whole model
-- and stays idempotent: first nobody but the owner may do anything, then each
-- role of the model gets exactly its list.  test/sql/security_privileges.sql
-- prints the resulting matrix (every function and relation of the schema,
-- per role), so that a new object without a deliberate line here shows up.
--
--   PUBLIC           pure helpers (cron, canonical json, redaction, identity
--                    getters) and what row-level security on application
--                    tables evaluates as any querying role
--   agents_app       the application: the API that takes user ids on trust,
--                    the documented direct writes, workspace-scoped reads
--   agents_executor  an external executor: claim, lease, usage, finish,
--                    approvals, delegation, tick
--   agents_reader    analytics: audit and run data of the workspaces a DBA
--                    bound to it (agent.bind_reader)
--   agents_tool      tool SQL of the worker: nothing in schema agent beyond
--                    what the access checks evaluate as it
-- Everything not listed (internal agent._* functions, maintenance, the MCP
-- server registry, secrets) is for the owner (a superuser) only.
-- ===========================================================================

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool, pg_monitor;
REVOKE ALL ON ALL TABLES IN SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool, pg_monitor;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool, pg_monitor;
REVOKE ALL ON SCHEMA agent FROM PUBLIC, agents_app, agents_executor, agents_reader, agents_tool, pg_monitor;
-- The audit log is written by the C code only, even by its owner.
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON agent.audit_log FROM CURRENT_USER;

-- Schema usage: the policies and triggers the extension puts on application
-- tables name objects of schema agent, and any role may query those tables.
GRANT USAGE ON SCHEMA agent TO PUBLIC;

-- ---------------------------------------------------------------------------
-- PUBLIC: pure functions and what row-level security evaluates
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  agent.current_workspace(), agent.current_actor(), agent.current_agent_id(),
  agent.set_identity(text, text, bigint, text, text),
  agent.cron_valid(text), agent.cron_describe(text),
  agent.cron_next(text, timestamptz, text), agent.cron_upcoming(text, integer, timestamptz, text),
  agent.canonical_json(jsonb), agent.approval_key(text, jsonb), agent.redact(jsonb),
  agent.validate_filter(jsonb), agent.delegation_depth_limit(),
  agent.readable_set_stats(),
  -- the allowlist policies on application tables (the agent comes from the
  -- session's identity, never from an argument)
  agent._allowlist_active(), agent._allowlist_custom_acl(),
  agent._allowlist_ids_text(text, text), agent._allowlist_ids_int8(text, text),
  agent._allowlist_ids_uuid(text, text),
  agent._allowlist_has(bigint, text, text), agent._allowlist_has(integer, text, text),
  agent._allowlist_has(smallint, text, text), agent._allowlist_has(uuid, text, text),
  agent._allowlist_has(text, text, text), agent._allowlist_new_row(text, text),
  -- the leakproof match that lets an agent's search start from the text index
  agent.ts_match(tsvector, tsquery), agent.like(text, text), agent.ilike(text, text),
  -- and its guard of a search argument that is not a constant ($1)
  agent._search_arg(tsquery), agent._search_arg(text),
  -- autonomous decisions only: a user id is refused unless the caller is
  -- the application (src/access.c); the custom-ACL policy shape calls it
  agent.can_access(bigint, text, text, text, text, text),
  agent.explain_access(bigint, text, text, text, text, text)
TO PUBLIC;

-- ---------------------------------------------------------------------------
-- agents_app: the application
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  -- access, sharing, lifecycle
  agent.user_can(text, bigint, text), agent.activity_scope(text, bigint),
  agent.visible_agents(text), agent.share(bigint, text, text, text),
  agent.unshare(bigint, text, text), agent."grant"(bigint, text, text, text, text),
  agent.revoke(bigint, text, text, text), agent.readable_resources(bigint, text, text),
  agent.create_agent(text, text, text, jsonb), agent.save_settings(bigint, jsonb, text, text),
  agent.restore_version(bigint, text), agent.duplicate(bigint, text),
  agent.set_status(bigint, text, text), agent.delete_agent(bigint, text),
  -- audit
  agent.audit_table(regclass, text, name, name), agent.unaudit_table(regclass),
  agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer),
  -- runs, delegation, approvals
  agent.start_run(bigint, text, jsonb, text, text), agent.rerun(bigint, text),
  agent.cancel_run(bigint, text), agent.delegate(bigint, bigint, text, jsonb, integer),
  agent.try_delegate(bigint, bigint, text, jsonb, integer),
  agent.approve(text, text), agent.deny(text, text),
  agent.approve(text, text, bigint), agent.deny(text, text, bigint),
  -- events
  agent.fire_event(text, text, text, jsonb, text, text, text), agent.filter_matches(jsonb, jsonb),
  agent._fire_event_in(text, text, text, text, jsonb, text, text, text),
  agent.fire_trigger(bigint, text, jsonb),
  agent.watch_table(regclass, text, name, text[], name), agent.unwatch_table(regclass),
  -- (registering resource tables and allowlists is a DBA's: it grants the
  -- tool role access and installs policies; superuser only)
  agent.follow_relation(text, text, name),
  -- MCP (status of the session's workspace)
  agent.mcp_status(text, text),
  -- activity, insights, assisted creation, teams
  agent.activity(bigint, text, text, bigint, timestamptz, timestamptz, integer),
  agent.run_detail(bigint, text), agent.run_deltas(bigint, text, integer, bigint),
  agent.insights(bigint, text, timestamptz, timestamptz),
  agent.generate_draft(text, text, text), agent.draft(bigint, text),
  agent.create_from_draft(jsonb, text), agent.send_to_run(bigint, text, text),
  agent.run_tree(bigint)
TO agents_app;
-- the direct writes the SPEC documents (grants, ACL rows, group members,
-- triggers, statuses): rows of the session's workspace only, filled,
-- checked, audited (and grants and triggers versioned) by triggers
-- (sql/src/970_workspace_rls.sql)
GRANT SELECT, INSERT, UPDATE, DELETE ON agent.access, agent.resource_acl, agent.group_members, agent.triggers
  TO agents_app;
GRANT SELECT ON agent.agents, agent.shares, agent.versions, agent.runs, agent.run_steps,
                agent.approvals, agent.run_messages, agent.audit_log, agent.audit_summary,
                agent.audited_tables, agent.watched_tables, agent.resource_tables,
                agent.allowlist_tables, agent.relations, agent.templates, agent.insights,
                agent.mcp_status
  TO agents_app;
GRANT UPDATE (status) ON agent.agents TO agents_app;
GRANT USAGE ON SEQUENCE agent.triggers_id_seq TO agents_app;

-- ---------------------------------------------------------------------------
-- agents_executor: an external executor (docs/runs.md)
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  agent.claim_runs(integer), agent.renew_lease(bigint), agent.wait_for_children(bigint),
  agent.add_usage(bigint, integer, integer, text), agent.finish_run(bigint, text, jsonb, text),
  agent.request_approval(bigint, text, jsonb), agent.consume_approval(bigint, text, jsonb),
  agent.delegate(bigint, bigint, text, jsonb, integer),
  agent.try_delegate(bigint, bigint, text, jsonb, integer),
  agent.delegation_context(bigint), agent.tick(timestamptz)
TO agents_executor;

-- ---------------------------------------------------------------------------
-- agents_reader: analytics, per bound workspace (row-level security)
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION
  agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer)
TO agents_reader;
GRANT SELECT ON agent.audit_log, agent.audit_summary, agent.runs, agent.run_steps, agent.insights,
                agent.reader_workspaces
  TO agents_reader;
GRANT SELECT ON agent.reader_workspaces TO agents_app;

-- ---------------------------------------------------------------------------
-- agents_tool: nothing more in schema agent.  What the worker's tools read
-- of it goes through C (agent.can_access's direct index scans) and the
-- functions PUBLIC has; application tables are granted to it by
-- agent.register_resource_table.
-- ---------------------------------------------------------------------------
-- following relations out of a granted row, as the session acting as an
-- agent; a cut target is recorded by agent._allowlist_denied, which writes
-- only into a running run of that agent (sql/src/500_allowlist.sql)
GRANT EXECUTE ON FUNCTION agent.follow_relation(text, text, name),
                          agent._allowlist_denied(text, text, text, jsonb)
  TO agents_tool, agents_app;
-- the registries of resource tables and relations (no data of any tenant)
GRANT SELECT ON agent.resource_tables, agent.allowlist_tables, agent.relations TO agents_tool;
-- evaluated by the read policies (sql/src/210_reads.sql) as the reading role
GRANT EXECUTE ON FUNCTION agent._may_read_workspace(text) TO agents_app, agents_reader;
-- evaluated by the WHEN of the direct-write history triggers
-- (sql/src/970_workspace_rls.sql) as the writing role: reveals nothing
GRANT EXECUTE ON FUNCTION agent._direct_write(regclass) TO PUBLIC;
-- functions the view agent.insights calls run with the rights of its reader:
-- they reveal nothing but the session's own workspace and two status classes
GRANT EXECUTE ON FUNCTION agent._session_workspace(), agent._run_failed(text), agent._run_is_active(text)
  TO agents_app, agents_reader;
-- triggers are settings: created, changed and deleted through the API (each
-- change versioned and audited; direct writes to agent.triggers likewise)
GRANT EXECUTE ON FUNCTION agent.set_trigger(bigint, jsonb, text), agent.delete_trigger(bigint, text)
  TO agents_app;
-- ops: operations (sql/src/950_operations.sql, docs/operations.md).  The
-- status views filter rows by the querying role: the workspaces it may read
-- (agent._may_read_workspace, as the read policies), every one for
-- pg_monitor (PostgreSQL's monitoring role) and superusers.  The worker's
-- status is cluster-wide: pg_monitor only.  pause_worker, resume_worker and
-- requeue_runs are for superusers; cancel_runs also for the application,
-- within the session's workspace.
-- ---------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION agent.run_error_code(text) TO PUBLIC;
GRANT SELECT ON agent.queue_status, agent.run_metrics TO agents_app, agents_reader, pg_monitor;
GRANT EXECUTE ON FUNCTION agent.run_stats(timestamptz) TO agents_app, agents_reader, pg_monitor;
-- run_stats' rollup (sql/src/955_rollup.sql): what run_stats (security
-- invoker) reads of it, scoped like run_metrics; the tables themselves no
-- role reads
GRANT SELECT ON agent._run_rollup_visible TO agents_app, agents_reader, pg_monitor;
GRANT EXECUTE ON FUNCTION agent._run_rollup_watermark(), agent._utc_next_month(timestamptz),
  agent._hist_add(internal, double precision), agent._hist_merge_add(internal, bigint[]), agent._hist_final(internal),
  agent._hist(double precision), agent._hist_merge(bigint[]), agent._hist_quantile(bigint[], double precision)
  TO agents_app, agents_reader, pg_monitor;
GRANT EXECUTE ON FUNCTION agent._may_read_workspace(text) TO pg_monitor;
GRANT SELECT ON agent.worker_status, agent.mcp_metrics TO pg_monitor;
GRANT EXECUTE ON FUNCTION agent._worker_status() TO pg_monitor;
GRANT EXECUTE ON FUNCTION agent.cancel_runs(bigint, text, text, text) TO agents_app;
-- mcp: OAuth 2.1 of MCP servers (sql/src/705_mcp_oauth.sql): the application
-- starts an authorization for a user (taken on trust) and completes it from
-- its redirect handler; it reads the secret-free status.  agent.mcp_oauth
-- (tokens, secrets), agent.mcp_set_oauth and agent.mcp_oauth_refresh_due
-- stay superuser-only.
GRANT EXECUTE ON FUNCTION agent.mcp_authorize(bigint, text, text),
                          agent.mcp_authorization_callback(text, text, text, text)
  TO agents_app;
GRANT SELECT ON agent.mcp_oauth_status TO agents_app;
-- mcp: elicitation through people (sql/src/706_mcp_elicitation.sql): the
-- application shows the pending questions and answers them for a user
-- (taken on trust; agent.approve checks that user may approve the run).
GRANT EXECUTE ON FUNCTION agent.answer_elicitation(text, jsonb, text) TO agents_app;
GRANT SELECT ON agent.mcp_pending_input TO agents_app;
-- approvals and overlaps (sql/src/300_runs.sql, 310_approval_rules.sql,
-- 410_overlaps.sql): the application denies with a reason and reads the
-- overlaps of its agents' triggers; an executor hands a refusal to the model.
GRANT EXECUTE ON FUNCTION agent.deny(text, text, bigint, text), agent.trigger_overlaps(bigint, text)
  TO agents_app;
GRANT SELECT ON agent.event_overlaps TO agents_app;
GRANT EXECUTE ON FUNCTION agent.consume_refusal(bigint, text, jsonb) TO agents_executor;
-- providers (sql/src/610_providers.sql): the application, analytics and
-- monitoring read agent.provider_status (no key, no headers; the limiter's
-- headroom through agent._provider_headroom).  agent.providers, the secrets
-- store (agent.secrets, set_secret, drop_secret) and add/alter/drop_provider
-- stay superuser-only.
GRANT SELECT ON agent.provider_status TO agents_app, agents_reader, pg_monitor;
GRANT EXECUTE ON FUNCTION agent._provider_headroom() TO agents_app, agents_reader, pg_monitor;
-- context: conversations (sql/src/810_conversations.sql): the application
-- sends a user's messages and reads what that user may see (user ids taken
-- on trust); direct reads of the tables are workspace-scoped (policies).
GRANT EXECUTE ON FUNCTION agent.send_message(bigint, text, text, bigint),
                          agent.conversation_messages(bigint, text),
                          agent.conversations_of(bigint, text)
  TO agents_app;
GRANT SELECT ON agent.conversations, agent.messages TO agents_app;
-- scaling (sql/src/960_distribution.sql, docs/scaling.md): the DBA's
-- procedure on a Citus cluster reads agent.distribution_plan() and runs
-- agent.set_id_range() on every node, after agent.prepare_distribution();
-- all three stay superuser-only (no grant:
-- the plan names every table, and the range restarts sequences).
