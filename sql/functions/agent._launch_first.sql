CREATE OR REPLACE FUNCTION agent._launch_first(p_workspace text, p_trigger_id bigint, p_agent_id bigint,
                                    p_event text, p_resource_type text, p_resource_id text,
                                    p_row_id text, p_automation text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '600')::interval;
  v_fp     text := md5(concat_ws(E'\x01', p_event, p_resource_type, coalesce(p_resource_id, ''),
                                         coalesce(p_row_id, '')));
  v_src    text := CASE WHEN p_automation IS NULL THEN 'trigger' ELSE 'automation:' || p_automation END;
  d        agent.event_launches%ROWTYPE;
  v_run    bigint;
  v_auto   text;
BEGIN
  IF v_window <= interval '0' THEN
    RETURN true;
  END IF;
  INSERT INTO agent.event_launches AS x (workspace_id, trigger_id, launch_key, seen_at, source)
  VALUES (p_workspace, p_trigger_id, v_fp, now(), v_src)
  ON CONFLICT (workspace_id, trigger_id, launch_key) DO NOTHING;
  IF FOUND THEN
    RETURN true;
  END IF;
  SELECT * INTO d FROM agent.event_launches x
   WHERE x.workspace_id = p_workspace AND x.trigger_id = p_trigger_id AND x.launch_key = v_fp FOR UPDATE;
  IF d.seen_at <= now() - v_window OR d.source IS NOT DISTINCT FROM v_src THEN
    UPDATE agent.event_launches x SET seen_at = now(), source = v_src
     WHERE x.workspace_id = p_workspace AND x.trigger_id = p_trigger_id AND x.launch_key = v_fp;
    RETURN true;
  END IF;
  -- the other launcher came first: one run, this launch counted
  v_auto := coalesce(p_automation, substr(d.source, 12));
  SELECT r.id INTO v_run FROM agent.runs r
   WHERE r.workspace_id = p_workspace AND r.trigger_id = p_trigger_id AND r.created_at = d.seen_at
   ORDER BY r.id DESC LIMIT 1;
  -- now() in VALUES, not in DO UPDATE (Citus: immutable there only)
  INSERT INTO agent.event_overlaps AS o (workspace_id, trigger_id, agent_id, automation, deduplicated,
                                         last_event, last_resource_type, last_resource_id, last_run_id, last_at)
  VALUES (p_workspace, p_trigger_id, p_agent_id, coalesce(v_auto, ''), 1, p_event, p_resource_type, p_resource_id,
          v_run, now())
  ON CONFLICT (workspace_id, trigger_id, automation) DO UPDATE
    SET deduplicated = o.deduplicated + 1, last_at = excluded.last_at, last_event = excluded.last_event,
        last_resource_type = excluded.last_resource_type, last_resource_id = excluded.last_resource_id,
        last_run_id = excluded.last_run_id;
  UPDATE agent.runs r
     SET input = r.input || jsonb_build_object('also_started_by',
                   coalesce(r.input -> 'also_started_by', '[]') || to_jsonb(v_src))
   WHERE r.workspace_id = p_workspace
     AND r.id = (SELECT q.id FROM agent.runs q
                  WHERE q.workspace_id = p_workspace AND q.id = v_run AND q.status = 'queued'
                  FOR UPDATE SKIP LOCKED);
  RAISE NOTICE 'run % of agent % was already started for this event', coalesce(v_run::text, '?'), p_agent_id
    USING DETAIL = format('Trigger %s and automation "%s" both launched it on event %s within pg_agents.dedup_window; one run was made.',
                          p_trigger_id, v_auto, p_event);
  RETURN false;
END
$$;
REVOKE ALL ON FUNCTION agent._launch_first(text, bigint, bigint, text, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._launch_first(text, bigint, bigint, text, text, text, text, text) IS
  'Internal (agent.fire_event): false when an automation and a trigger (or two automations) launch the agent through this trigger on the same event (name, resource, payload row_id) within pg_agents.dedup_window; the second launch is counted in agent.event_overlaps and added to the kept run''s input.also_started_by while it is queued.';
