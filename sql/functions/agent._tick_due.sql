CREATE OR REPLACE FUNCTION agent._tick_due(p_now timestamptz) RETURNS SETOF agent._tick_slot
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws  text;
  v_all agent._tick_slot[] := '{}';
  v_one agent._tick_slot[];
  v_n   integer := 0;
  v_lost bigint[];
BEGIN
  FOR v_ws IN
    SELECT DISTINCT t.workspace_id FROM agent.triggers t
     WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= p_now
     ORDER BY 1
  LOOP
    SELECT array_agg(ROW(d.id, d.agent_id, d.schedule, d.timezone, d.prompt, d.next_run_at, d.acts_for,
                         d.live AND d.creator_ok, NULL::boolean)::agent._tick_slot ORDER BY d.next_run_at, d.id),
           array_agg(d.id) FILTER (WHERE d.live AND NOT d.creator_ok)
      INTO v_one, v_lost
      FROM (SELECT t.id, t.agent_id, t.schedule, t.timezone, t.prompt, t.next_run_at,
                   CASE WHEN t.run_as = 'shared' THEN NULL ELSE t.created_by END AS acts_for,
                   (a.status = 'active' AND a.deleted_at IS NULL) AS live,
                   (t.run_as = 'shared' OR t.created_by IS NULL OR t.created_by = a.owner_id
                    OR EXISTS (SELECT 1 FROM agent.shares s
                                WHERE s.workspace_id = t.workspace_id AND s.agent_id = t.agent_id
                                  AND s.user_id = t.created_by AND s.level IN ('edit', 'full'))
                    OR EXISTS (SELECT 1 FROM agent.shares s
                                 JOIN agent.group_members g ON g.group_id = s.group_id AND g.user_id = t.created_by
                                                           AND (g.workspace_id IS NULL OR g.workspace_id = t.workspace_id)
                                WHERE s.workspace_id = t.workspace_id AND s.agent_id = t.agent_id
                                  AND s.level IN ('edit', 'full'))) AS creator_ok
              FROM agent.triggers t
              JOIN agent.agents a ON a.workspace_id = t.workspace_id AND a.id = t.agent_id
             WHERE t.workspace_id = v_ws
               AND t.enabled AND t.kind = 'schedule' AND t.next_run_at <= p_now
             ORDER BY t.next_run_at, t.id
               FOR NO KEY UPDATE OF t SKIP LOCKED) d;
    IF v_lost IS NOT NULL THEN
      UPDATE agent.triggers t
         SET last_status = 'error',
             last_error = format('run_as creator: %s may no longer edit agent %s, so the job makes no run '
                                 '(it runs again once they may, or as a shared job)', t.created_by, t.agent_id)
       WHERE t.workspace_id = v_ws AND t.id = ANY (v_lost);
    END IF;
    IF v_one IS NOT NULL THEN
      v_all := v_all || v_one;
      v_n := v_n + 1;
    END IF;
  END LOOP;
  IF v_n <= 1 THEN
    RETURN QUERY SELECT * FROM unnest(v_all);
  ELSE
    RETURN QUERY SELECT * FROM unnest(v_all) u ORDER BY u.due, u.id;
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._tick_due(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._tick_due(timestamptz) IS
  'The due enabled schedule triggers at a time, locked FOR NO KEY UPDATE SKIP LOCKED, in (next_run_at, id) order (agent.tick); created_by is the user a run acts for (run_as: the creator of a creator job while they may edit the agent, else the job is not live and its last_error says why; NULL for a shared job).';
