CREATE FUNCTION agent.fire_event(event_name text, resource_type text, resource_id text,
                                 payload jsonb DEFAULT '{}', actor text DEFAULT NULL,
                                 event_id text DEFAULT NULL, automation text DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_fire_event';
-- the application's API (agents_app, sql/src/990_privileges.sql), not PUBLIC's
REVOKE ALL ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text, text) IS
  'Matches an event of the session''s workspace (pg_agents.workspace) to the enabled event/mention triggers of that workspace (filters, anti-loop, suspension, dedup, hourly cap) and queues one autonomous run per match in the caller''s transaction; returns the runs made. automation labels a call made by an application automation: a run that an automation and a trigger (an event without label) both launch through one trigger on the same event (name, resource, payload row_id) within pg_agents.dedup_window is made once, the other launch counted in agent.event_overlaps (agent.trigger_overlaps) and noted in the run''s input. A superuser session without a workspace fires an event of no workspace: it wakes nobody and is counted (agent.unknown_workspace_events).';
