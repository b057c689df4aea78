-- 0.3.0 -> 0.4.0: overlapping launches (issue 18).  agent.fire_event takes
-- an automation label (a seventh argument: the old calls keep working);
-- agent.trigger_overlaps, the WARNING when an overlapping trigger is saved,
-- agent.event_overlaps.
DROP FUNCTION agent.fire_event(text, text, text, jsonb, text, text);

\ir ../../functions/agent.fire_event.sql

\ir ../../functions/agent._events_cleanup.sql


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
\ir ../../functions/agent._filters_exclude.sql

-- The overlap of two triggers, stated; NULL when no event matches both.
-- A mention trigger matches agent.mentioned events; an event trigger its
-- event_name; a NULL resource type or id matches any.
\ir ../../functions/agent._trigger_overlap.sql

-- ---------------------------------------------------------------------------
-- Launches an automation and a trigger both made (agent.fire_event's
-- automation argument)
-- ---------------------------------------------------------------------------

\ir ../../tables/agent.event_launches.sql

\ir ../../tables/agent.event_overlaps.sql

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
\ir ../../functions/agent._launch_first.sql

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
  a agent.agents%ROWTYPE;
BEGIN
  SELECT * INTO a FROM agent.agents x WHERE x.id = trigger_overlaps.agent_id AND x.deleted_at IS NULL;
  IF NOT FOUND OR NOT agent._workspace_ok(a.workspace_id) THEN
    RAISE EXCEPTION 'agent % does not exist', trigger_overlaps.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF by_user IS NOT NULL AND NOT coalesce(agent.user_can(by_user, a.id, 'view_settings'), false) THEN
    RAISE EXCEPTION 'user "%" may not view the settings of agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN QUERY
    SELECT t.id, u.id, NULL::text, CASE t.kind WHEN 'mention' THEN 'agent.mentioned' ELSE t.event_name END,
           NULL::bigint, agent._trigger_overlap(t, u)
      FROM agent.triggers t JOIN agent.triggers u ON u.agent_id = t.agent_id AND u.id <> t.id
     WHERE t.agent_id = a.id AND agent._trigger_overlap(t, u) IS NOT NULL
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
  n int := 0;
BEGIN
  IF NOT NEW.enabled OR NEW.kind NOT IN ('event', 'mention') THEN
    RETURN NULL;
  END IF;
  -- only the triggers that can overlap (same event, compatible resource) are
  -- compared, and at most three are named: a bulk insert of many triggers of
  -- one agent on one event stays linear and its output readable
  FOR u IN SELECT * FROM agent.triggers x
            WHERE x.agent_id = NEW.agent_id AND x.id <> NEW.id AND x.enabled
              AND x.kind IN ('event', 'mention')
              AND CASE x.kind WHEN 'mention' THEN 'agent.mentioned' ELSE x.event_name END
                  IS NOT DISTINCT FROM CASE NEW.kind WHEN 'mention' THEN 'agent.mentioned' ELSE NEW.event_name END
              AND (x.resource_id IS NULL OR NEW.resource_id IS NULL OR x.resource_id = NEW.resource_id)
            ORDER BY x.id LOOP
    v := agent._trigger_overlap(NEW, u);
    IF v IS NOT NULL THEN
      n := n + 1;
      IF n > 3 THEN
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
