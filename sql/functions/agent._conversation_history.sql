CREATE OR REPLACE FUNCTION agent._conversation_history(p_run_id bigint, p_window integer)
RETURNS TABLE(role text, content text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the run's workspace (Citus routes by it): the session's, else the run's own
  v_ws   text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_own  bigint;
  v_conv bigint;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NULL OR NOT EXISTS (SELECT 1 FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = p_run_id) THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = p_run_id;
  END IF;
  SELECT m.id, m.conversation_id INTO v_own, v_conv
    FROM agent.runs r
    JOIN agent.conversations c ON c.workspace_id = r.workspace_id
                              AND c.id = (CASE WHEN (r.input ->> 'conversation_id') ~ '^[0-9]{1,18}$'
                                               THEN (r.input ->> 'conversation_id')::bigint END)
                              AND c.agent_id = r.agent_id
                              AND c.kind = 'chat' AND c.user_id = r.requested_by
    JOIN agent.messages m ON m.workspace_id = c.workspace_id AND m.conversation_id = c.id AND m.run_id = r.id
                         AND m.role = 'user'
   WHERE r.workspace_id = v_ws AND r.id = p_run_id AND r.regime = 'manual'
   ORDER BY m.id LIMIT 1;
  IF v_own IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
  WITH earlier AS (
    SELECT m.id, m.role, m.content,
           pg_catalog.sum(m.tokens) OVER (ORDER BY m.id DESC) AS used
      FROM agent.messages m
     WHERE m.workspace_id = v_ws AND m.conversation_id = v_conv AND m.id < v_own
       AND m.role IN ('user', 'assistant')
  ), kept AS (
    SELECT e.* FROM earlier e WHERE e.used <= greatest(p_window, 0)
  )
  SELECT k.role, k.content FROM kept k
   WHERE k.id >= (SELECT pg_catalog.min(u.id) FROM kept u WHERE u.role = 'user')
   ORDER BY k.id;
END
$$;
