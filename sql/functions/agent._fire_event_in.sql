CREATE FUNCTION agent._fire_event_in(workspace_id text, event_name text, resource_type text,
                                     resource_id text, payload jsonb, actor text,
                                     event_id text, automation text)
RETURNS SETOF bigint
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_fire_event_in';
-- the application's API (agents_app, sql/src/990_privileges.sql), not PUBLIC's
REVOKE ALL ON FUNCTION agent._fire_event_in(text, text, text, text, jsonb, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._fire_event_in(text, text, text, text, jsonb, text, text, text) IS
  'agent.fire_event of the session''s workspace, named by workspace_id (which must be the session''s pg_agents.workspace): on Citus, agent.fire_event calls it in a transaction block as a distributed function (distribution argument workspace_id, co-located with agent.runs, force_delegation; docs/scaling.md), so that the event is dispatched on the node of the workspace over the caller''s own connection, in the caller''s transaction, with the application''s writes of that workspace. Without Citus it is never called.';
