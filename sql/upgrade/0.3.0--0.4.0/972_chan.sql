-- issue 30 (chan): agent_run_steps carries no step name; run_stream_text in the distribution plan.
-- (agent.run_stream_text and agent.run_deltas: 972_chan.include, sql/src/820_deltas.sql)

CREATE OR REPLACE FUNCTION agent._teams_step_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_label   text := NEW.kind || coalesce(':' || NEW.name, '');
  v_root    bigint;
BEGIN
  UPDATE agent.runs x SET current_step = v_label, preview = agent._teams_step_preview(NEW.kind, NEW.output)
   WHERE x.workspace_id = NEW.workspace_id AND x.id = NEW.run_id RETURNING coalesce(x.root_run_id, x.id) INTO v_root;
  -- (not from a Citus shard, whose node is not where the listeners are and
  -- whose NOTIFY makes the two-phase commit fail: docs/scaling.md)
  IF TG_TABLE_NAME = 'run_steps' THEN
    PERFORM pg_notify('agent_run_steps',
                      json_build_object('run_id', NEW.run_id, 'root_run_id', v_root, 'seq', NEW.seq,
                                        'status', NEW.status)::text);
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._teams_step_changed() IS
  'Trigger on agent.run_steps (UPDATE of status, output; new steps: agent._teams_steps_inserted): writes runs.current_step and runs.preview and sends NOTIFY agent_run_steps {run_id, root_run_id, seq, status} (ids and a code only: the step itself is read through agent.run_detail).';

CREATE OR REPLACE FUNCTION agent._teams_steps_inserted() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ids      bigint[];
  v_wss      text[];
  v_labels   text[];
  v_previews text[];
  v_ws       text;
  v_n        bigint;
BEGIN
  -- each run shows its latest new step (as the row trigger would leave it)
  SELECT array_agg(l.run_id ORDER BY l.run_id), array_agg(l.workspace_id ORDER BY l.run_id),
         array_agg(l.label ORDER BY l.run_id), array_agg(l.preview ORDER BY l.run_id)
    INTO v_ids, v_wss, v_labels, v_previews
    FROM (SELECT DISTINCT ON (s.run_id) s.run_id, s.workspace_id, s.kind || coalesce(':' || s.name, '') AS label,
                 agent._teams_step_preview(s.kind, s.output) AS preview
            FROM new_steps s ORDER BY s.run_id, s.seq DESC) l;
  IF v_ids IS NULL THEN
    RETURN NULL;
  END IF;
  -- a run that shows it already (the worker's batch writes it with its own
  -- update) is left alone
  IF TG_TABLE_NAME = 'run_steps' THEN
    -- on the table itself: one statement, probing the primary key from each
    -- run of the arrays (the plan of the single-node bulk load: a statement
    -- that also filters on the workspace may be planned as a scan of the
    -- workspace's runs around a rescanned function scan, quadratic)
    UPDATE agent.runs x SET current_step = u.label, preview = u.preview
      FROM unnest(v_ids, v_wss, v_labels, v_previews) AS u(run_id, ws, label, preview)
     WHERE x.id = u.run_id AND x.workspace_id = u.ws
       AND (x.current_step IS DISTINCT FROM u.label OR x.preview IS DISTINCT FROM u.preview);
  ELSE
    -- on a Citus shard: workspace by workspace, each statement naming it
    -- (only co-located statements may run there)
    FOR v_ws IN SELECT DISTINCT w FROM unnest(v_wss) w LOOP
      WITH u AS (
        UPDATE agent.runs x SET current_step = u.label, preview = u.preview
          FROM unnest(v_ids, v_wss, v_labels, v_previews) AS u(run_id, ws, label, preview)
         WHERE x.workspace_id = v_ws AND u.ws = v_ws AND x.id = u.run_id
           AND (x.current_step IS DISTINCT FROM u.label OR x.preview IS DISTINCT FROM u.preview)
        RETURNING 1)
      SELECT count(*) INTO v_n FROM u;
    END LOOP;
  END IF;
  -- (not from a Citus shard, whose node is not where the listeners are and
  -- whose NOTIFY makes the two-phase commit fail: docs/scaling.md)
  IF TG_TABLE_NAME = 'run_steps' THEN
    PERFORM pg_notify('agent_run_steps',
                      json_build_object('run_id', n.run_id,
                                        'root_run_id', (SELECT coalesce(x.root_run_id, x.id) FROM agent.runs x
                                                         WHERE x.workspace_id = n.workspace_id AND x.id = n.run_id),
                                        'seq', n.seq, 'status', n.status)::text)
       FROM new_steps n;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._teams_steps_inserted() IS
  'Statement trigger on agent.run_steps (INSERT): what agent._teams_step_changed does for each new step, set-based: current_step and preview of each run from its latest new step (one UPDATE by primary key), NOTIFY agent_run_steps per step.';

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
    (35, 'agent._history_holds', 'local', 'Transient: rows live only inside one function call of the transaction that writes them, on the node that runs it.')
    ) AS p(n, t, k, r)
   ORDER BY p.n
$$;
COMMENT ON FUNCTION agent.distribution_plan() IS
  'How each table of the extension is placed on a Citus cluster: distributed (by workspace_id, co-located with agent.agents), reference (replicated) or local (stays on each node), with the reason; in the order the procedure distributes them (docs/scaling.md).';
