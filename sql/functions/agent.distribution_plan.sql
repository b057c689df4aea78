CREATE OR REPLACE FUNCTION agent.distribution_plan()
RETURNS TABLE (table_name regclass, kind text, reason text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p.t::pg_catalog.regclass, p.k, p.r
    FROM (VALUES
    -- reference tables first (replicated to every node)
    (1, 'agent.group_members', 'reference', 'Group membership; workspace_id may be NULL (groups not per workspace), and every node''s access checks read it.'),
    (2, 'agent.resource_acl', 'reference', 'The owners'' ACL on application resources; workspace_id may be NULL, and every node''s access checks read it.'),
    (3, 'agent.access_config', 'reference', 'Cluster-wide configuration (one row: the ACL function), read by every node''s access checks.'),
    (4, 'agent.resource_tables', 'reference', 'Cluster-wide configuration: the resource tables the tools read and write.'),
    (5, 'agent.allowlist_tables', 'reference', 'Cluster-wide configuration: the application tables under the allowlist policies.'),
    (6, 'agent.relations', 'reference', 'Cluster-wide configuration: the relations between resource types.'),
    (6.5, 'agent.comment_tables', 'reference', 'Cluster-wide configuration: the comment table the add_comment tool writes.'),
    (7, 'agent.providers', 'reference', 'Cluster-wide configuration: the LLM providers.'),
    (8, 'agent.secrets', 'reference', 'Cluster-wide configuration: the encrypted secrets the providers and MCP servers name.'),
    (9, 'agent.templates', 'reference', 'Cluster-wide configuration: the agent templates.'),
    (10, 'agent.reader_workspaces', 'reference', 'DBA configuration read by the reader policies of every node, looked up by role rather than by workspace.'),
    -- distributed by workspace_id, co-located with agent.agents, in an
    -- order where every referenced table comes before its referencing ones
    (11, 'agent.agents', 'distributed', 'The agents; the table the others are co-located with.'),
    (12, 'agent.access', 'distributed', 'Grants of an agent (foreign key to agents).'),
    (13, 'agent.shares', 'distributed', 'Shares of an agent (foreign key to agents).'),
    (14, 'agent.versions', 'distributed', 'Settings history of an agent (foreign key to agents).'),
    (15, 'agent.triggers', 'distributed', 'Triggers of an agent (foreign key to agents).'),
    (16, 'agent.runs', 'distributed', 'Runs (foreign keys to agents, triggers and the parent run).'),
    (17, 'agent.run_steps', 'distributed', 'Steps of a run (foreign key to runs).'),
    (18, 'agent.approvals', 'distributed', 'Approvals of a run''s tool calls (foreign key to runs).'),
    (19, 'agent.run_state', 'distributed', 'Saved state of a running run (foreign key to runs).'),
    (20, 'agent.run_messages', 'distributed', 'Messages to and from runs (foreign key to runs).'),
    (21, 'agent.run_queue_marks', 'distributed', 'Per-workspace queue marks of agent.claim_runs.'),
    (22, 'agent.run_queue_returns', 'distributed', 'Per-workspace runs queued again below their queue''s mark.'),
    (23, 'agent.event_dedup', 'distributed', 'Event fingerprints per trigger (deduplication window).'),
    (24, 'agent.event_launches', 'distributed', 'Launches per trigger and event (automation overlaps).'),
    (25, 'agent.event_overlaps', 'distributed', 'Overlap counts per trigger (foreign key to triggers).'),
    (26, 'agent.mcp_servers', 'distributed', 'MCP servers of a workspace.'),
    (27, 'agent.mcp_tools', 'distributed', 'Tools of an MCP server (foreign key to mcp_servers).'),
    (28, 'agent.mcp_oauth', 'distributed', 'OAuth state of an MCP server (foreign key to mcp_servers).'),
    (29, 'agent.mcp_elicitations', 'distributed', 'Input an MCP server asked for during a run (foreign key to runs).'),
    (30, 'agent.assistants', 'distributed', 'The hidden assistant agent of a workspace (foreign key to agents).'),
    (31, 'agent.conversations', 'distributed', 'Conversations with an agent (foreign key to agents).'),
    (32, 'agent.messages', 'distributed', 'Messages of a conversation (foreign key to conversations).'),
    (33, 'agent.audit_log', 'distributed', 'The audit log, partitioned by month (Citus distributes the parent and its partitions). Rows of no workspace (system actions) have workspace_id NULL, which a distributed table refuses: known not to work on Citus (docs/scaling.md).'),
    (36, 'agent.run_stream_text', 'distributed', 'The streamed text of a run (foreign key to runs).'),
    -- local: stay on each node
    (34, 'agent.worker_control', 'local', 'The pause switch of the background worker of the node it is on (one row per node).'),
    (35, 'agent._history_holds', 'local', 'Transient: rows live only inside one function call of the transaction that writes them, on the node that runs it.'),
    (37, 'agent.locks', 'local', 'The rows the functions of the node lock to serialise its queue decisions (hourly cap, claims, tick, assistant), as the advisory locks they replace were per node.'),
    (38, 'agent.run_rollup', 'distributed', 'The rollup of agent.run_stats: per workspace, agent, model and UTC day or month, co-located with the runs it sums.'),
    (39, 'agent.run_rollup_state', 'local', 'The watermark of the rollup of agent.run_stats, kept by the node whose ticks fold it.')
    ) AS p(n, t, k, r)
   ORDER BY p.n
$$;
COMMENT ON FUNCTION agent.distribution_plan() IS
  'How each table of the extension is placed on a Citus cluster: distributed (by workspace_id, co-located with agent.agents), reference (replicated) or local (stays on each node), with the reason; in the order the procedure distributes them (docs/scaling.md).';
