-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md).  Install and
-- upgrade both end with this file, so it states the whole model and must
-- stay idempotent.
-- ===========================================================================
SELECT 1 WHERE false;

-- events: the application fires events, watches its tables and writes the
-- triggers of its agents directly (docs/events.md); validate_filter and
-- filter_matches are its tools.  agent.unknown_workspace_events() is the
-- DBA's (no grant).
GRANT EXECUTE ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.watch_table(regclass, text, name, text[], name) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.unwatch_table(regclass) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.validate_filter(jsonb) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.filter_matches(jsonb, jsonb) TO agents_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON agent.triggers TO agents_app;
GRANT SELECT ON agent.watched_tables TO agents_app;
