-- pg_agents: how the tables are laid out on a Citus cluster (docs/scaling.md,
-- "Which tables go where").  One source of truth: the procedure distributes
-- from agent.distribution_plan(), and test/pgtap/scaling_schema.sql checks
-- the catalog against it (every table of the extension exactly once, the
-- keys and foreign keys Citus accepts), without Citus.

CREATE FUNCTION agent.distribution_plan()
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

-- Ids unique across nodes: every node of a Citus cluster keeps its own
-- copies of the extension's identity sequences, used by the inserts that
-- run on that node, and Citus does not rebase the sequences of an
-- extension's tables (it does for other tables' bigserial columns: (group id
-- << 48) + 1 onwards).  Each node gets that same disjoint range.
CREATE FUNCTION agent.set_id_range(node integer DEFAULT NULL)
RETURNS TABLE (sequence_name regclass, min_value bigint, max_value bigint, next_value bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_node integer := node;
  v_lo   bigint;
  v_hi   bigint;
  v_last bigint;
  v_ddl  text;
  s      record;
BEGIN
  IF v_node IS NULL THEN
    -- the node's group id on Citus (0: the coordinator), else 0
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL THEN
      EXECUTE 'SELECT groupid FROM pg_catalog.pg_dist_local_group' INTO v_node;
    END IF;
    v_node := coalesce(v_node, 0);
  END IF;
  -- on Citus, this node's own sequences only: Citus refuses (and would
  -- propagate) an ALTER SEQUENCE of a distributed table's sequence
  IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL THEN
    v_ddl := pg_catalog.current_setting('citus.enable_ddl_propagation', true);
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
  END IF;
  IF v_node < 0 OR v_node > 32767 THEN
    RAISE EXCEPTION 'invalid node number %', v_node
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A node number (a Citus group id) is between 0 and 32767: its ids are (node << 48) + 1 to ((node + 1) << 48) - 1.';
  END IF;
  v_lo := (v_node::bigint << 48) + 1;
  v_hi := (v_node::bigint << 48) + ((1::bigint << 48) - 1);
  FOR s IN
    SELECT d.objid::pg_catalog.regclass AS seq, q.last_value
      FROM pg_catalog.pg_depend d
      JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
      JOIN pg_catalog.pg_sequences q
        ON q.schemaname = 'agent' AND q.sequencename = (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = d.objid)
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.deptype IN ('a', 'i') AND t.relnamespace = 'agent'::pg_catalog.regnamespace
       AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = d.objid) = 'S'
     ORDER BY d.objid::pg_catalog.regclass::pg_catalog.text
  LOOP
    v_last := s.last_value;
    IF v_last > v_hi THEN
      RAISE EXCEPTION 'sequence % is past the id range of node %', s.seq, v_node
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = pg_catalog.format('Its last value %s is above %s, the end of the range of node %s.', v_last, v_hi, v_node),
              HINT = 'Give this node another number.';
    END IF;
    -- a sequence already inside the range keeps its place (its ids are taken)
    IF v_last IS NULL OR v_last < v_lo THEN
      EXECUTE pg_catalog.format('ALTER SEQUENCE %s MINVALUE %s MAXVALUE %s START WITH %s RESTART WITH %s',
                                s.seq, v_lo, v_hi, v_lo, v_lo);
      next_value := v_lo;
    ELSE
      EXECUTE pg_catalog.format('ALTER SEQUENCE %s MINVALUE %s MAXVALUE %s START WITH %s',
                                s.seq, v_lo, v_hi, v_lo);
      next_value := v_last + 1;
    END IF;
    sequence_name := s.seq; min_value := v_lo; max_value := v_hi;
    RETURN NEXT;
  END LOOP;
  IF v_ddl IS NOT NULL THEN
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', v_ddl, true);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.set_id_range(integer) IS
  'Citus: puts every identity sequence of the extension on this node into the id range of node number node ((node << 48) + 1 to ((node + 1) << 48) - 1; by default the node''s Citus group id, 0 on the coordinator or without Citus), so that ids made on different nodes never collide; run on every node (docs/scaling.md). Superuser only.';

-- What the extension's own objects must give up before Citus distributes
-- its tables, in one call the procedure makes first (docs/scaling.md):
-- - the read policies' workspace check is a scalar subquery (an InitPlan:
--   one probe a statement on a single node), which Citus refuses in the
--   policy of a distributed table: there the check is written per row;
-- - the history triggers of agent.triggers (versions and audit rows of a
--   direct write) cannot tell, on the node of a shard, whether the API
--   already versions the write (their hold check compares transaction ids,
--   which differ between nodes): they are disabled, the API versions and
--   audits its own writes, and a direct write to agent.triggers is not
--   versioned on Citus.
-- Idempotent; reports what it changed.
CREATE FUNCTION agent.prepare_distribution()
RETURNS TABLE (object_name text, change text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  p record;
  t record;
BEGIN
  IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER) THEN
    RAISE EXCEPTION 'permission denied to prepare the distribution of pg_agents'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Only a superuser may change the policies and triggers of the extension''s tables.';
  END IF;
  FOR p IN
    SELECT pol.polname, pol.polrelid::pg_catalog.regclass AS rel
      FROM pg_catalog.pg_policy pol
      JOIN pg_catalog.pg_class c ON c.oid = pol.polrelid
     WHERE c.relnamespace = 'agent'::pg_catalog.regnamespace
       AND pg_catalog.pg_get_expr(pol.polqual, pol.polrelid)
           LIKE '%SELECT agent._may_read_workspace(%'
     ORDER BY 2::pg_catalog.text, 1
  LOOP
    EXECUTE pg_catalog.format(
      'ALTER POLICY %I ON %s USING (workspace_id = agent.current_workspace() '
      'AND agent._may_read_workspace(agent.current_workspace()))', p.polname, p.rel);
    object_name := pg_catalog.format('policy %I on %s', p.polname, p.rel);
    change := 'workspace check per row (no subquery)';
    RETURN NEXT;
  END LOOP;
  FOR t IN
    SELECT tg.tgname
      FROM pg_catalog.pg_trigger tg
     WHERE tg.tgrelid = 'agent.triggers'::pg_catalog.regclass
       AND tg.tgname IN ('triggers_history_ins', 'triggers_history_upd', 'triggers_history_del')
       AND tg.tgenabled <> 'D'
     ORDER BY 1
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE agent.triggers DISABLE TRIGGER %I', t.tgname);
    object_name := pg_catalog.format('trigger %I on agent.triggers', t.tgname);
    change := 'disabled';
    RETURN NEXT;
  END LOOP;
END
$$;
COMMENT ON FUNCTION agent.prepare_distribution() IS
  'Citus: rewrites the read policies without their scalar subquery (Citus refuses one in the policy of a distributed table) and disables the history triggers of agent.triggers (a direct write to agent.triggers is then not versioned; the API versions its own); idempotent, returns what it changed; run once on the coordinator before distributing (docs/scaling.md). Superuser only.';
