-- Parallel labels: the functions of schema agent that PostgreSQL may run in
-- a parallel worker (PARALLEL SAFE): immutable or stable, neither writing nor
-- calling a function that writes, no temporary tables, no backend state of
-- their own.  Every other function keeps PARALLEL UNSAFE (the default), the
-- C functions their labels at their definition.  Install and upgrade both end
-- with this file and sql/src/990_privileges.sql (Makefile), so that a
-- CREATE OR REPLACE in a later part cannot drop a label;
-- test/sql/function_labels.sql lists every function's volatility,
-- parallel label and strictness, so a new function needs a decision here.
ALTER FUNCTION agent._allowlist_custom_acl_now() PARALLEL SAFE;
ALTER FUNCTION agent._changed_sections(jsonb,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._check_delegation(bigint,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._check_trigger(jsonb,boolean) PARALLEL SAFE;
ALTER FUNCTION agent._check_user(text) PARALLEL SAFE;
ALTER FUNCTION agent._check_workspace_arg(text) PARALLEL SAFE;
ALTER FUNCTION agent._conversation_history(bigint,integer) PARALLEL SAFE;
ALTER FUNCTION agent._delegation_attachment(bigint,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._draft_json(text) PARALLEL SAFE;
ALTER FUNCTION agent._filters_exclude(jsonb,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._hist_add(internal,double precision) PARALLEL SAFE;
ALTER FUNCTION agent._hist_final(internal) PARALLEL SAFE;
ALTER FUNCTION agent._hist_merge_add(internal,bigint[]) PARALLEL SAFE;
ALTER FUNCTION agent._hist_quantile(bigint[],double precision) PARALLEL SAFE;
ALTER FUNCTION agent._mcp_elicit_result(jsonb,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._mcp_exposed_name(bigint,text) PARALLEL SAFE;
ALTER FUNCTION agent._mcp_failed_result(text,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._mcp_run_user(bigint) PARALLEL SAFE;
ALTER FUNCTION agent._mcp_server_id(text,text,text) PARALLEL SAFE;
ALTER FUNCTION agent._report_items(jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._rls_check_table(regclass) PARALLEL SAFE;
ALTER FUNCTION agent._rls_check_type(text) PARALLEL SAFE;
ALTER FUNCTION agent._rls_column(regclass,name,text) PARALLEL SAFE;
ALTER FUNCTION agent._run_rollup_watermark() PARALLEL SAFE;
ALTER FUNCTION agent._snapshot(bigint) PARALLEL SAFE;
ALTER FUNCTION agent._teams_step_preview(text,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._trigger_changes(jsonb,jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._trigger_json(agent.triggers) PARALLEL SAFE;
ALTER FUNCTION agent._trigger_label(jsonb) PARALLEL SAFE;
ALTER FUNCTION agent._trigger_overlap(agent.triggers,agent.triggers) PARALLEL SAFE;
ALTER FUNCTION agent._user_level(text,bigint) PARALLEL SAFE;
ALTER FUNCTION agent._user_reads(bigint,text,text,text,text) PARALLEL SAFE;
ALTER FUNCTION agent._utc_next_month(timestamp with time zone) PARALLEL SAFE;
ALTER FUNCTION agent._withhold_payload(bigint,jsonb,text,text,text,text) PARALLEL SAFE;
ALTER FUNCTION agent.activity_scope(text,bigint) PARALLEL SAFE;
ALTER FUNCTION agent.audit_events(text,text,text,text,bigint,text,timestamp with time zone,integer) PARALLEL SAFE;
ALTER FUNCTION agent.delegation_context(bigint) PARALLEL SAFE;
ALTER FUNCTION agent.distribution_plan() PARALLEL SAFE;
ALTER FUNCTION agent.draft(bigint,text) PARALLEL SAFE;
ALTER FUNCTION agent.mcp_agent_tools(bigint) PARALLEL SAFE;
ALTER FUNCTION agent.mcp_agent_tools(bigint,text) PARALLEL SAFE;
ALTER FUNCTION agent.mcp_status(text,text) PARALLEL SAFE;
ALTER FUNCTION agent.run_stats(timestamp with time zone) PARALLEL SAFE;
ALTER FUNCTION agent.run_tree(bigint) PARALLEL SAFE;
ALTER FUNCTION agent.trigger_overlaps(bigint,text) PARALLEL SAFE;
ALTER FUNCTION agent.visible_agents(text) PARALLEL SAFE;
