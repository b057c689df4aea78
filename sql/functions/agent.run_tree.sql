CREATE OR REPLACE FUNCTION agent.run_tree(root_run_id bigint)
RETURNS TABLE(run_id bigint, parent_run_id bigint, depth integer, agent_id bigint, agent_name text,
              status text, origin text, tokens_in bigint, tokens_out bigint, tokens_total bigint,
              current_step text, preview text, pending_messages bigint,
              created_at timestamptz, finished_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws text := agent._session_workspace();
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL THEN
    SELECT r.workspace_id INTO v_ws FROM agent.runs r WHERE r.id = run_tree.root_run_id;
  END IF;
  -- a run of another workspace than the session's is unknown (no rows), and
  -- a tree never crosses into another workspace
  RETURN QUERY
  WITH RECURSIVE t AS (
    SELECT r.*, ARRAY[r.id] AS path FROM agent.runs r
     WHERE r.workspace_id = v_ws AND r.id = run_tree.root_run_id
    UNION ALL
    SELECT c.*, t.path || c.id FROM agent.runs c JOIN t ON c.parent_run_id = t.id AND c.workspace_id = t.workspace_id
     WHERE c.workspace_id = v_ws)
  SELECT t.id, t.parent_run_id,
         t.depth - (SELECT r0.depth FROM agent.runs r0 WHERE r0.workspace_id = v_ws AND r0.id = run_tree.root_run_id),
         t.agent_id, a.name, t.status, t.origin, t.tokens_in, t.tokens_out, t.tokens_total,
         t.current_step, t.preview,
         (SELECT count(*) FROM agent.run_messages m
           WHERE m.workspace_id = v_ws AND m.run_id = t.id AND m.delivered_at IS NULL),
         t.created_at, t.finished_at
    FROM t JOIN agent.agents a ON a.workspace_id = v_ws AND a.id = t.agent_id
   ORDER BY t.path;
END
$$;
