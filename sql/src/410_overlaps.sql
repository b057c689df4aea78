-- pg_agents: overlapping launches (docs/events.md, "Overlaps"; the plan's
-- §10 risk: an automation and an agent trigger on the same event make two
-- runs).  agent.trigger_overlaps lists the triggers of an agent that match
-- the same events as another of its triggers, a WARNING says so when such
-- a trigger is saved, and agent.fire_event(..., automation => 'label')
-- makes one run when an automation and a trigger launch the agent on the
-- same event within pg_agents.dedup_window, and counts the other launch in
-- agent.event_overlaps.

-- ---------------------------------------------------------------------------
-- Two triggers that match the same events
-- ---------------------------------------------------------------------------

-- Whether two filters provably exclude each other (so that no event matches
-- both): a property of both "all" lists (or of a one-condition "any") that
-- must equal two different values, must equal and differ from one value,
-- must equal a value outside a list, or must be empty and not empty (or
-- empty and equal to a value that is not).
-- Anything else (keywords, views, ranges, two lists) is not judged: the
-- triggers are taken to overlap.  Returns the reason, or NULL.
CREATE FUNCTION agent._filters_exclude(p_a jsonb, p_b jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  WITH ca AS (
    SELECT c ->> 'property' AS prop, c ->> 'op' AS op, c -> 'value' AS val
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_a -> 'all') = 'array' THEN p_a -> 'all' ELSE '[]' END
                                || CASE WHEN jsonb_typeof(p_a -> 'any') = 'array' AND jsonb_array_length(p_a -> 'any') = 1
                                        THEN p_a -> 'any' ELSE '[]' END) c
     WHERE jsonb_typeof(c) = 'object'),
  cb AS (
    SELECT c ->> 'property' AS prop, c ->> 'op' AS op, c -> 'value' AS val
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_b -> 'all') = 'array' THEN p_b -> 'all' ELSE '[]' END
                                || CASE WHEN jsonb_typeof(p_b -> 'any') = 'array' AND jsonb_array_length(p_b -> 'any') = 1
                                        THEN p_b -> 'any' ELSE '[]' END) c
     WHERE jsonb_typeof(c) = 'object')
  SELECT format('property %s: %s', a.prop,
                CASE WHEN a.op IN ('is_empty', 'is_not_empty') AND b.op IN ('is_empty', 'is_not_empty')
                       THEN 'empty in one filter, not empty in the other'
                     WHEN 'is_empty' IN (a.op, b.op) THEN format('empty in one filter, %s in the other', coalesce(nullif(a.val, 'null'), b.val))
                     WHEN 'neq' IN (a.op, b.op) THEN format('equal to and different from %s', coalesce(a.val, b.val))
                     WHEN 'in' IN (a.op, b.op) THEN format('%s is not in %s', CASE WHEN a.op = 'in' THEN b.val ELSE a.val END,
                                                         CASE WHEN a.op = 'in' THEN a.val ELSE b.val END)
                     ELSE format('%s in one filter, %s in the other', a.val, b.val) END)
    FROM ca a JOIN cb b ON a.prop = b.prop
   WHERE (a.op IN ('eq', 'changed_to') AND b.op IN ('eq', 'changed_to')
          AND jsonb_typeof(a.val) NOT IN ('object', 'array') AND jsonb_typeof(b.val) NOT IN ('object', 'array')
          AND a.val <> b.val AND (a.val #>> '{}') IS DISTINCT FROM (b.val #>> '{}'))
      OR (a.op = 'eq' AND b.op = 'neq' OR a.op = 'neq' AND b.op = 'eq') AND a.val = b.val
      OR (a.op = 'eq' AND b.op = 'in' AND jsonb_typeof(a.val) NOT IN ('object', 'array') AND jsonb_typeof(b.val) = 'array'
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(b.val) e
                           WHERE e = a.val OR (e #>> '{}') = (a.val #>> '{}')))
      OR (b.op = 'eq' AND a.op = 'in' AND jsonb_typeof(b.val) NOT IN ('object', 'array') AND jsonb_typeof(a.val) = 'array'
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(a.val) e
                           WHERE e = b.val OR (e #>> '{}') = (b.val #>> '{}')))
      OR (a.op = 'is_empty' AND b.op = 'is_not_empty' OR a.op = 'is_not_empty' AND b.op = 'is_empty')
      OR (a.op = 'eq' AND b.op = 'is_empty' AND a.val NOT IN ('null', '""', '[]', '{}')
          OR b.op = 'eq' AND a.op = 'is_empty' AND b.val NOT IN ('null', '""', '[]', '{}'))
   ORDER BY 1
   LIMIT 1
$$;
COMMENT ON FUNCTION agent._filters_exclude(jsonb, jsonb) IS
  'Internal: why no event payload can satisfy both trigger filters (a property that must equal two different values, equal and differ from one value, equal a value outside a list, or be empty and not empty, in the "all" conditions or a one-condition "any"), or NULL when that cannot be shown.';

-- The overlap of two triggers, stated; NULL when no event matches both.
-- A mention trigger matches agent.mentioned events; an event trigger its
-- event_name; a NULL resource type or id matches any.
CREATE FUNCTION agent._trigger_overlap(a agent.triggers, b agent.triggers) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ea  text := CASE a.kind WHEN 'mention' THEN 'agent.mentioned' ELSE a.event_name END;
  v_eb  text := CASE b.kind WHEN 'mention' THEN 'agent.mentioned' ELSE b.event_name END;
  v_res text;
  v_flt text;
BEGIN
  IF a.id = b.id OR a.agent_id <> b.agent_id OR NOT (a.enabled AND b.enabled)
     OR a.kind NOT IN ('event', 'mention') OR b.kind NOT IN ('event', 'mention')
     OR v_ea IS DISTINCT FROM v_eb
     OR a.resource_type IS NOT NULL AND b.resource_type IS NOT NULL AND a.resource_type <> b.resource_type
     OR a.resource_id IS NOT NULL AND b.resource_id IS NOT NULL AND a.resource_id <> b.resource_id
     OR agent._filters_exclude(coalesce(a.filter, '{}'), coalesce(b.filter, '{}')) IS NOT NULL THEN
    RETURN NULL;
  END IF;
  v_res := CASE WHEN coalesce(a.resource_type, b.resource_type) IS NULL THEN 'any resource'
                ELSE format('resource_type %s', coalesce(a.resource_type, b.resource_type)) END
        || CASE WHEN coalesce(a.resource_id, b.resource_id) IS NOT NULL
                THEN format(' id %s', coalesce(a.resource_id, b.resource_id))
                WHEN coalesce(a.resource_type, b.resource_type) IS NOT NULL THEN ' (any id)' ELSE '' END;
  v_flt := CASE WHEN coalesce(a.filter, '{}') = '{}' AND coalesce(b.filter, '{}') = '{}' THEN 'neither has a filter'
                WHEN coalesce(a.filter, '{}') = coalesce(b.filter, '{}') THEN 'their filters are the same'
                WHEN coalesce(a.filter, '{}') = '{}' OR coalesce(b.filter, '{}') = '{}'
                  THEN format('trigger %s has no filter', CASE WHEN coalesce(a.filter, '{}') = '{}' THEN a.id ELSE b.id END)
                ELSE 'filters do not exclude each other' END;
  RETURN format('both match event %s on %s; %s', v_ea, v_res, v_flt);
END
$$;
REVOKE ALL ON FUNCTION agent._trigger_overlap(agent.triggers, agent.triggers) FROM PUBLIC;
COMMENT ON FUNCTION agent._trigger_overlap(agent.triggers, agent.triggers) IS
  'Internal: how two enabled event or mention triggers of one agent match the same events (event, resource type and id, filters that do not provably exclude each other), or NULL when they do not.';

-- ---------------------------------------------------------------------------
-- Launches an automation and a trigger both made (agent.fire_event's
-- automation argument)
-- ---------------------------------------------------------------------------

CREATE TABLE agent.event_launches (
    workspace_id text NOT NULL,
    trigger_id   bigint NOT NULL,
    launch_key   text NOT NULL,
    source       text NOT NULL,
    seen_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, trigger_id, launch_key)
);
CREATE INDEX event_launches_seen_idx ON agent.event_launches (seen_at);
COMMENT ON TABLE agent.event_launches IS
  'Who last launched a run through a trigger for an event (name, resource, payload row_id), kept for pg_agents.dedup_window: an automation and a trigger launching the same event in the window make one run.';
COMMENT ON COLUMN agent.event_launches.workspace_id IS 'Workspace of the trigger.';
COMMENT ON COLUMN agent.event_launches.trigger_id IS 'Trigger the launch went through.';
COMMENT ON COLUMN agent.event_launches.launch_key IS 'md5 of the event name, resource type, resource id and payload row_id.';
COMMENT ON COLUMN agent.event_launches.source IS '"trigger" (an event without automation label) or "automation:<label>".';
COMMENT ON COLUMN agent.event_launches.seen_at IS 'When the run was launched; the record expires pg_agents.dedup_window later (agent._events_cleanup).';

CREATE TABLE agent.event_overlaps (
    workspace_id   text NOT NULL,
    trigger_id     bigint NOT NULL,
    agent_id       bigint NOT NULL,
    automation     text NOT NULL,
    deduplicated   bigint NOT NULL DEFAULT 0,
    first_at       timestamptz NOT NULL DEFAULT now(),
    last_at        timestamptz NOT NULL DEFAULT now(),
    last_event     text,
    last_resource_type text,
    last_resource_id   text,
    last_run_id    bigint,
    PRIMARY KEY (workspace_id, trigger_id, automation),
    FOREIGN KEY (workspace_id, trigger_id) REFERENCES agent.triggers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX event_overlaps_agent_idx ON agent.event_overlaps (agent_id);
COMMENT ON TABLE agent.event_overlaps IS
  'Launches made once although an application automation (agent.fire_event(..., automation => label)) and a trigger both launched the agent on the same event within pg_agents.dedup_window: one row per trigger and automation, with the count.';
COMMENT ON COLUMN agent.event_overlaps.workspace_id IS 'Workspace of the trigger.';
COMMENT ON COLUMN agent.event_overlaps.trigger_id IS 'Trigger that matched both launches.';
COMMENT ON COLUMN agent.event_overlaps.agent_id IS 'Agent launched.';
COMMENT ON COLUMN agent.event_overlaps.automation IS 'The automation label ("" never: a launch without label is "trigger" and is counted against the automation it met).';
COMMENT ON COLUMN agent.event_overlaps.deduplicated IS 'Second launches that made no run.';
COMMENT ON COLUMN agent.event_overlaps.first_at IS 'First such launch.';
COMMENT ON COLUMN agent.event_overlaps.last_at IS 'Last such launch.';
COMMENT ON COLUMN agent.event_overlaps.last_event IS 'Event name of the last one.';
COMMENT ON COLUMN agent.event_overlaps.last_resource_type IS 'Resource type of the last one.';
COMMENT ON COLUMN agent.event_overlaps.last_resource_id IS 'Resource id of the last one.';
COMMENT ON COLUMN agent.event_overlaps.last_run_id IS 'The run that was made for the last one (the first launch''s), when known.';

-- Called by agent.fire_event for a trigger whose run is about to be made:
-- false when the other kind of launcher (an automation for an event
-- without label, a trigger event or another automation for an automation)
-- launched the agent through this trigger on the same event, i.e. the same
-- event name, resource and payload row_id, within pg_agents.dedup_window.
-- Launches are recorded in agent.event_launches.  The second launch is
-- counted (agent.event_overlaps), told to the kept
-- run while it is still queued (input.also_started_by), and reported with
-- a NOTICE.  Concurrent launches of one event serialise on the
-- launch's row.
CREATE FUNCTION agent._launch_first(p_workspace text, p_trigger_id bigint, p_agent_id bigint,
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

-- ---------------------------------------------------------------------------
-- agent.trigger_overlaps and the WARNING when a trigger is saved
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.trigger_overlaps(agent_id bigint, by_user text DEFAULT NULL)
RETURNS TABLE(trigger_id bigint, other_trigger_id bigint, automation text, event_name text,
              deduplicated bigint, overlap text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a    agent.agents%ROWTYPE;
  v_ws text := agent._session_workspace();
BEGIN
  -- the session's workspace only (a session bound to none: the agent's own)
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = trigger_overlaps.agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x
   WHERE x.workspace_id = v_ws AND x.id = trigger_overlaps.agent_id AND x.deleted_at IS NULL;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'agent % does not exist', trigger_overlaps.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NOT NULL AND NOT coalesce(agent.user_can(by_user, a.id, 'view_settings'), false) THEN
    RAISE EXCEPTION 'user "%" may not view the settings of agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN QUERY
    SELECT t.id, u.id, NULL::text, CASE t.kind WHEN 'mention' THEN 'agent.mentioned' ELSE t.event_name END,
           NULL::bigint, agent._trigger_overlap(ROW(t.*)::agent.triggers, ROW(u.*)::agent.triggers)
      FROM agent.triggers t
      JOIN agent.triggers u ON u.workspace_id = t.workspace_id AND u.agent_id = t.agent_id AND u.id <> t.id
     WHERE t.workspace_id = a.workspace_id AND t.agent_id = a.id
       -- ROW(x.*)::agent.triggers, not x: on a Citus shard x has the shard's row type
       AND agent._trigger_overlap(ROW(t.*)::agent.triggers, ROW(u.*)::agent.triggers) IS NOT NULL
    UNION ALL
    SELECT o.trigger_id, NULL::bigint, o.automation, o.last_event, o.deduplicated,
           format('automation "%s" and trigger %s both launched the agent on event %s (last for %s %s); %s launch(es) made no second run',
                  o.automation, o.trigger_id, o.last_event, o.last_resource_type, coalesce(o.last_resource_id, '(any)'),
                  o.deduplicated)
      FROM agent.event_overlaps o
     WHERE o.agent_id = a.id AND o.workspace_id = a.workspace_id
    ORDER BY 1, 2 NULLS LAST, 3;
END
$$;
REVOKE ALL ON FUNCTION agent.trigger_overlaps(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.trigger_overlaps(bigint, text) IS
  'The enabled event and mention triggers of the agent that match the same events as another of its triggers, one row per (trigger, other trigger) with the overlap stated; then the triggers an application automation also launched the agent through (agent.fire_event(..., automation => label)), with how many second launches made no run. by_user, when given, needs view_settings. An agent of another workspace than the session''s is 42704.';

CREATE FUNCTION agent._triggers_warn_overlap() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  u agent.triggers%ROWTYPE;
  v text;
  k int := 0;
  -- NEW as an agent.triggers row (on a Citus shard it has the shard's row type)
  n agent.triggers := NEW;
BEGIN
  IF NOT NEW.enabled OR NEW.kind NOT IN ('event', 'mention') THEN
    RETURN NULL;
  END IF;
  -- only the triggers that can overlap (same event, compatible resource) are
  -- compared, and at most three are named: a bulk insert of many triggers of
  -- one agent on one event stays linear and its output readable
  FOR u IN SELECT * FROM agent.triggers x
            WHERE x.workspace_id = NEW.workspace_id AND x.agent_id = NEW.agent_id AND x.id <> NEW.id AND x.enabled
              AND x.kind IN ('event', 'mention')
              AND CASE x.kind WHEN 'mention' THEN 'agent.mentioned' ELSE x.event_name END
                  IS NOT DISTINCT FROM CASE NEW.kind WHEN 'mention' THEN 'agent.mentioned' ELSE NEW.event_name END
              AND (x.resource_id IS NULL OR NEW.resource_id IS NULL OR x.resource_id = NEW.resource_id)
            ORDER BY x.id LOOP
    v := agent._trigger_overlap(n, u);
    IF v IS NOT NULL THEN
      k := k + 1;
      IF k > 3 THEN
        RAISE WARNING 'trigger % overlaps more triggers of agent %', NEW.id, NEW.agent_id
          USING HINT = 'agent.trigger_overlaps lists every overlap.';
        EXIT;
      END IF;
      RAISE WARNING 'trigger % overlaps trigger % of agent %', NEW.id, u.id, NEW.agent_id
        USING DETAIL = initcap(left(v, 1)) || substr(v, 2) || ': such an event starts two runs.',
              HINT = 'Narrow a filter or disable one of them; agent.trigger_overlaps lists every overlap.';
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION agent._triggers_warn_overlap() FROM PUBLIC;
COMMENT ON FUNCTION agent._triggers_warn_overlap() IS
  'Trigger: a WARNING for each enabled event or mention trigger of the same agent that a saved trigger overlaps (agent._trigger_overlap), at most three, then one that says there are more.';
CREATE TRIGGER triggers_warn_overlap
  AFTER INSERT OR UPDATE OF kind, event_name, resource_type, resource_id, filter, enabled ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_warn_overlap();
COMMENT ON TRIGGER triggers_warn_overlap ON agent.triggers IS
  'Warns when a saved trigger matches the same events as another trigger of its agent.';
