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
\ir ../functions/agent._filters_exclude.sql

-- The overlap of two triggers, stated; NULL when no event matches both.
-- A mention trigger matches agent.mentioned events; an event trigger its
-- event_name; a NULL resource type or id matches any.
\ir ../functions/agent._trigger_overlap.sql

-- ---------------------------------------------------------------------------
-- Launches an automation and a trigger both made (agent.fire_event's
-- automation argument)
-- ---------------------------------------------------------------------------

\ir ../tables/agent.event_launches.sql

\ir ../tables/agent.event_overlaps.sql

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
\ir ../functions/agent._launch_first.sql

-- ---------------------------------------------------------------------------
-- agent.trigger_overlaps and the WARNING when a trigger is saved
-- ---------------------------------------------------------------------------

\ir ../functions/agent.trigger_overlaps.sql

\ir ../functions/agent._triggers_warn_overlap.sql
CREATE TRIGGER triggers_warn_overlap
  AFTER INSERT OR UPDATE OF kind, event_name, resource_type, resource_id, filter, enabled ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_warn_overlap();
COMMENT ON TRIGGER triggers_warn_overlap ON agent.triggers IS
  'Warns when a saved trigger matches the same events as another trigger of its agent.';
