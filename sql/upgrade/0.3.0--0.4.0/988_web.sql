-- Issue 31, the web switch and run_as (helper web): web_fetch needs no SQL
-- (src/tools_web.c reads agents.web_access); run_as of schedule triggers is
-- honoured by agent._tick_due (sql/src/450_cron.sql).

-- The due schedules at p_now (index triggers_due_idx), locked in one
-- statement, in (due, id) order.  SKIP LOCKED: a trigger another tick is
-- handling is left to it; once that tick commits, next_run_at has moved past
-- now and the row no longer qualifies (READ COMMITTED re-checks a row it
-- waited for), so a slot fires once.
-- The rows are locked one workspace at a time (a locking statement names its
-- workspace, so that Citus routes it to one shard), then returned in (due,
-- id) order across workspaces.
-- run_as (issue 31): the slot's created_by is the user its run acts for
-- (the run's requested_by).  A `creator` job acts for its creator, and only
-- while the creator may edit the agent (its owner, or an edit or full share,
-- directly or through a group, in the trigger's workspace): a job whose
-- creator lost that level makes no run (the slot is not live), its schedule
-- advances, and last_status / last_error say why.  A `shared` job acts for
-- the workspace, not a person (requested_by NULL), whoever created it.  A
-- trigger without a creator (an application's) acts as before.
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
-- Issue 31, the web switch and run_as (helper web): web_fetch needs no SQL
-- (src/tools_web.c reads agents.web_access); run_as of schedule triggers is
-- honoured by agent._tick_due (sql/src/450_cron.sql).

-- The due schedules at p_now (index triggers_due_idx), locked in one
-- statement, in (due, id) order.  SKIP LOCKED: a trigger another tick is
-- handling is left to it; once that tick commits, next_run_at has moved past
-- now and the row no longer qualifies (READ COMMITTED re-checks a row it
-- waited for), so a slot fires once.
-- The rows are locked one workspace at a time (a locking statement names its
-- workspace, so that Citus routes it to one shard), then returned in (due,
-- id) order across workspaces.
-- run_as (issue 31): the slot's created_by is the user its run acts for
-- (the run's requested_by).  A `creator` job acts for its creator, and only
-- while the creator may edit the agent (its owner, or an edit or full share,
-- directly or through a group, in the trigger's workspace): a job whose
-- creator lost that level makes no run (the slot is not live), its schedule
-- advances, and last_status / last_error say why.  A `shared` job acts for
-- the workspace, not a person (requested_by NULL), whoever created it.  A
-- trigger without a creator (an application's) acts as before.
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

COMMENT ON TYPE agent._tick_slot IS
  'A due schedule trigger of agent.tick: id, agent, schedule, time zone, prompt, the slot it is due for, the user its run acts for (created_by: the creator of a run_as creator job, NULL for a shared one), whether it may fire (live: its agent is active and a creator job''s creator may still edit it) and whether the set-based path may take it (ok).';
