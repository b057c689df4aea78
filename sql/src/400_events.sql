-- pg_agents: events — agent.fire_event, filters, dedup, anti-loop, table
-- watchers and the worker wake-up (docs/events.md).

-- ---------------------------------------------------------------------------
-- Matching: one probe per (event, resource type, resource id | any)
-- ---------------------------------------------------------------------------

-- agent.triggers_event_idx (000_schema.sql) is (workspace_id, event_name,
-- resource_type, resource_id) WHERE enabled AND kind IN ('event', 'mention'):
-- every probe of the dispatcher is an equality (or IS NULL) on all four
-- columns, so that other workspaces' triggers are never read.
COMMENT ON INDEX agent.triggers_event_idx IS
  'Candidate lookup of agent.fire_event: (the event''s workspace, event_name, resource_type or NULL = any, resource_id or NULL = any).';

-- ---------------------------------------------------------------------------
-- The role that saved a trigger: a filter view is read with its rights
-- ---------------------------------------------------------------------------

ALTER TABLE agent.triggers ADD COLUMN saved_by regrole;
COMMENT ON COLUMN agent.triggers.saved_by IS
  'Role that saved the trigger''s filter (the session''s outer role: SET ROLE counts, a SECURITY DEFINER function does not); a filter view is read with its rights. Set by triggers_validate_event, not by the writer.';

CREATE FUNCTION agent._saving_role(requested regrole DEFAULT NULL) RETURNS regrole
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'pg_agents_saving_role';
REVOKE ALL ON FUNCTION agent._saving_role(regrole) FROM PUBLIC;
COMMENT ON FUNCTION agent._saving_role(regrole) IS
  'Internal (triggers_validate_event): the session''s outer role (the one SET ROLE chose, else the session user), which SECURITY DEFINER functions do not change; requested instead when the outer role is a superuser.';

-- ---------------------------------------------------------------------------
-- Filters
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.validate_filter(filter jsonb) RETURNS void
LANGUAGE c STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_validate_filter';
COMMENT ON FUNCTION agent.validate_filter(jsonb) IS
  'Raises 22023 "invalid filter: ..." naming the bad part of a trigger filter (42501 for a view the session''s outer role may not read); returns nothing when the filter is valid.';

CREATE FUNCTION agent.filter_matches(filter jsonb, payload jsonb) RETURNS boolean
LANGUAGE c STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'pg_agents_filter_matches';
COMMENT ON FUNCTION agent.filter_matches(jsonb, jsonb) IS
  'Whether an event payload satisfies a trigger filter (the evaluator agent.fire_event uses; a view is read with the caller''s rights, within pg_agents.filter_view_timeout); a NULL or empty filter matches.';

-- Refuses an invalid filter or event trigger definition when a trigger is
-- saved, and records who saved the filter (saved_by: whatever the writer
-- puts there is replaced, unless the writer is a superuser).  SECURITY
-- DEFINER so that the writer needs no right on the internal functions; it
-- runs no user SQL (a filter view is resolved, never read), and the outer
-- role it records is not changed by it.  (Schedule validation is a
-- separate trigger of the cron module.)
CREATE FUNCTION agent._triggers_validate_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.saved_by := agent._saving_role(NEW.saved_by);
  ELSIF NEW.filter IS DISTINCT FROM OLD.filter OR NEW.saved_by IS DISTINCT FROM OLD.saved_by THEN
    NEW.saved_by := agent._saving_role(CASE WHEN NEW.saved_by IS DISTINCT FROM OLD.saved_by
                                            THEN NEW.saved_by END);
  END IF;
  IF NEW.kind IN ('event', 'mention') THEN
    IF NEW.kind = 'event' AND (NEW.event_name IS NULL OR btrim(NEW.event_name) = '') THEN
      RAISE EXCEPTION 'invalid event trigger: event_name is required'
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Name the event, e.g. collection.row_added.';
    END IF;
    IF NEW.event_name IS NOT NULL AND NEW.event_name !~ '^[A-Za-z0-9_.:-]{1,200}$' THEN
      RAISE EXCEPTION 'invalid event trigger: invalid event_name "%"', NEW.event_name
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'An event name has 1 to 200 letters, digits, dots, colons, dashes or underscores.';
    END IF;
  END IF;
  IF NEW.filter IS NULL THEN
    NEW.filter := '{}';
  END IF;
  PERFORM agent.validate_filter(NEW.filter);
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION agent._triggers_validate_event() IS
  'Trigger: refuses an invalid filter (a view the saving role may not read included), or an event trigger without a valid event_name, when agent.triggers is written; sets saved_by to the saving role when the filter is saved.';
CREATE TRIGGER triggers_validate_event
  BEFORE INSERT OR UPDATE OF kind, event_name, resource_type, resource_id, filter, saved_by ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_validate_event();

-- run_as says whom a schedule's runs act for (450_cron.sql); a trigger of
-- another kind acts for the event's user (event, mention) or the caller
-- (api), so run_as 'shared' there would be stored and ignored: refused on
-- every write (issue 31).  Its stored 'creator' is the column's default,
-- which no kind but schedule reads.
\ir ../functions/agent._triggers_check_run_as.sql
CREATE TRIGGER triggers_check_run_as BEFORE INSERT OR UPDATE OF kind, run_as ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_check_run_as();
COMMENT ON TRIGGER triggers_check_run_as ON agent.triggers IS
  'run_as other than creator only on schedule triggers.';

-- Flushes the per-backend cache of candidate triggers (every backend at
-- commit; this one at once).
CREATE FUNCTION agent._triggers_changed() RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'pg_agents_triggers_changed';
COMMENT ON FUNCTION agent._triggers_changed() IS
  'Trigger: invalidates the candidate-trigger cache of agent.fire_event when event-matching columns of agent.triggers change.';
CREATE TRIGGER triggers_changed_ins_del AFTER INSERT OR DELETE OR TRUNCATE ON agent.triggers
  FOR EACH STATEMENT EXECUTE FUNCTION agent._triggers_changed();
CREATE TRIGGER triggers_changed_upd
  AFTER UPDATE OF workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                  prompt, enabled, allow_self_retrigger, saved_by ON agent.triggers
  FOR EACH STATEMENT EXECUTE FUNCTION agent._triggers_changed();

-- ---------------------------------------------------------------------------
-- Dedup
-- ---------------------------------------------------------------------------

CREATE TABLE agent.event_dedup (
    workspace_id text NOT NULL,
    trigger_id   bigint NOT NULL,
    fingerprint  text NOT NULL,
    seen_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, trigger_id, fingerprint)
);
CREATE INDEX event_dedup_seen_idx ON agent.event_dedup (seen_at);
COMMENT ON TABLE agent.event_dedup IS
  'Fingerprints of events that made a run, per trigger, kept for pg_agents.dedup_window: the same event again in the window makes no run.';
COMMENT ON COLUMN agent.event_dedup.workspace_id IS 'Workspace of the trigger.';
COMMENT ON COLUMN agent.event_dedup.trigger_id IS 'Trigger the event matched.';
COMMENT ON COLUMN agent.event_dedup.fingerprint IS 'e:<md5 of event_id>, or p:<md5 of event name, resource and canonical payload> when the event has no id.';
COMMENT ON COLUMN agent.event_dedup.seen_at IS 'When the fingerprint was (re)recorded; it expires pg_agents.dedup_window later.';

\ir ../functions/agent._events_cleanup.sql

-- ---------------------------------------------------------------------------
-- Dispatch
-- ---------------------------------------------------------------------------

\ir ../functions/agent.fire_event.sql
\ir ../functions/agent._fire_event_in.sql

CREATE FUNCTION agent.unknown_workspace_events(
    OUT events bigint, OUT last_at timestamptz, OUT last_event text,
    OUT last_resource_type text, OUT last_resource_id text)
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_unknown_workspace_events';
REVOKE ALL ON FUNCTION agent.unknown_workspace_events() FROM PUBLIC;
COMMENT ON FUNCTION agent.unknown_workspace_events() IS
  'Events of this database whose workspace was unknown (no workspace column value and no session pg_agents.workspace), which woke nobody: how many since the server started (counted in shared memory, so rolled-back transactions count too) and the last one. For the DBA.';

-- ---------------------------------------------------------------------------
-- Withholding: nothing the agent may not read is stored for it
-- ---------------------------------------------------------------------------
-- A run's input is a log: it reaches agent.runs.input, claim_runs (external
-- executors), the activity and run_detail.  So the payload is stored as the
-- run's identity may see it.  Called by the dispatcher for every run it
-- queues (events and mentions); the reusable entry point for any other path
-- that stores resource rows for a run.
CREATE FUNCTION agent._withhold_payload(p_agent_id bigint, p_payload jsonb,
                                        p_regime text DEFAULT 'autonomous',
                                        p_user_id text DEFAULT NULL,
                                        p_resource_type text DEFAULT NULL,
                                        p_resource_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v      jsonb := p_payload;
  v_rt   text;
  v_ok   boolean;
  v_why  text;
  v_ref  jsonb;
BEGIN
  IF v IS NULL OR pg_catalog.jsonb_typeof(v) <> 'object' THEN
    RETURN v;
  END IF;
  -- the event's own resource, when it is of a registered type
  IF p_resource_type IS NOT NULL AND p_resource_id IS NOT NULL
     AND EXISTS (SELECT 1 FROM agent.resource_tables r WHERE r.resource_type = p_resource_type) THEN
    SELECT e.allowed, e.reason INTO v_ok, v_why
      FROM agent.explain_access(p_agent_id, p_resource_type, p_resource_id, 'read', p_regime, p_user_id) e;
    IF NOT coalesce(v_ok, false) THEN
      RETURN pg_catalog.jsonb_build_object('resource_type', p_resource_type, 'resource_id', p_resource_id,
                                           'withheld', coalesce(v_why, 'not_granted'));
    END IF;
  END IF;
  -- a row of a registered table (the watchers' shape: table, row_id, row, old)
  IF v ? 'table' AND (v ? 'row' OR v ? 'old') THEN
    SELECT r.resource_type INTO v_rt
      FROM agent.resource_tables r
      JOIN pg_catalog.pg_class c ON c.oid = r.tbl
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) c.relname = v ->> 'table'
     LIMIT 1;
    IF v_rt IS NOT NULL THEN
      IF v ->> 'row_id' IS NULL THEN
        v_ok := false;
        v_why := 'not_granted';
      ELSE
        SELECT e.allowed, e.reason INTO v_ok, v_why
          FROM agent.explain_access(p_agent_id, v_rt, v ->> 'row_id', 'read', p_regime, p_user_id) e;
      END IF;
      IF NOT coalesce(v_ok, false) THEN
        v_ref := pg_catalog.jsonb_build_object('resource_type', v_rt, 'resource_id', v ->> 'row_id',
                                               'withheld', coalesce(v_why, 'not_granted'));
        v := (v - 'row' - 'old') || pg_catalog.jsonb_build_object('row', v_ref)
             || CASE WHEN v ? 'old' THEN pg_catalog.jsonb_build_object('old', v_ref) ELSE '{}' END;
      END IF;
    END IF;
  END IF;
  RETURN v;
END
$$;
REVOKE ALL ON FUNCTION agent._withhold_payload(bigint, jsonb, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._withhold_payload(bigint, jsonb, text, text, text, text) IS
  'Internal: the payload as the run''s identity (agent, regime, user for manual runs) may see it. A row of a registered resource table it may not read ({"table", "row_id", "row", "old"}) has row and old replaced by {"resource_type", "resource_id", "withheld": <agent.explain_access reason>}; when the event''s own resource (p_resource_type, p_resource_id) is of a registered type and unreadable, the whole payload is that reference. Anything else is returned unchanged.';

CREATE FUNCTION agent._request_wake() RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_request_wake';
REVOKE ALL ON FUNCTION agent._request_wake() FROM PUBLIC;
COMMENT ON FUNCTION agent._request_wake() IS
  'Internal: wakes the worker when the current transaction commits (once per transaction; no-op without preloading).';

CREATE FUNCTION agent._wake_count() RETURNS bigint
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_wake_count';
COMMENT ON FUNCTION agent._wake_count() IS
  'Commits that woke the worker since the server started; NULL when pg_agents is not preloaded.';

-- ---------------------------------------------------------------------------
-- Table watchers
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._watch_row() RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'pg_agents_watch_row';
COMMENT ON FUNCTION agent._watch_row() IS
  'Row trigger of agent.watch_table: emits collection.row_added/property_updated/row_removed and agent.mentioned.';

CREATE FUNCTION agent.watch_table(tbl regclass, resource_type text, id_column name DEFAULT 'id',
                                  mention_columns text[] DEFAULT NULL, workspace_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_args text;
  v_col  text;
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- SECURITY DEFINER (agent._watch_row is nobody's to attach): on the
  -- caller's own tables only
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF resource_type IS NULL OR btrim(resource_type) = '' THEN
    RAISE EXCEPTION 'resource_type must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = tbl AND c.relkind IN ('r', 'p')) THEN
    RAISE EXCEPTION '"%" is not a table', tbl
      USING ERRCODE = 'wrong_object_type', HINT = 'Only tables can be watched.';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                 WHERE a.attrelid = tbl AND a.attname = id_column AND a.attnum > 0 AND NOT a.attisdropped) THEN
    RAISE EXCEPTION 'column "%" of table "%" does not exist', id_column, tbl
      USING ERRCODE = 'undefined_column', HINT = 'Pass the id column of the table as id_column.';
  END IF;
  IF workspace_column IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = tbl AND a.attname = workspace_column AND a.attnum > 0 AND NOT a.attisdropped) THEN
    RAISE EXCEPTION 'workspace column "%" of table "%" does not exist', workspace_column, tbl
      USING ERRCODE = 'undefined_column',
            HINT = 'Pass the column holding each row''s workspace id, or NULL to use the session''s pg_agents.workspace.';
  END IF;
  v_args := pg_catalog.quote_literal(resource_type) || ', ' || pg_catalog.quote_literal(id_column::text)
            || ', ' || pg_catalog.quote_literal('workspace_column=' || coalesce(workspace_column::text, ''));
  FOREACH v_col IN ARRAY coalesce(mention_columns, '{}'::text[]) LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid = tbl AND a.attname = v_col AND a.attnum > 0 AND NOT a.attisdropped) THEN
      RAISE EXCEPTION 'mention column "%" of table "%" does not exist', v_col, tbl
        USING ERRCODE = 'undefined_column';
    END IF;
    v_args := v_args || ', ' || pg_catalog.quote_literal(v_col);
  END LOOP;
  EXECUTE pg_catalog.format(
    'CREATE OR REPLACE TRIGGER pg_agents_watch AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH ROW EXECUTE FUNCTION agent._watch_row(%s)', tbl, v_args);
END
$$;
COMMENT ON FUNCTION agent.watch_table(regclass, text, name, text[], name) IS
  'Installs the pg_agents_watch row trigger: rows added, updated and removed become collection events (and agent.mentioned for [[agent:ID]] tokens added to mention_columns) of the row''s workspace: the value of workspace_column, or without one the writing session''s pg_agents.workspace; an event of no workspace wakes nobody and is counted (agent.unknown_workspace_events). On the caller''s own tables only.';

CREATE FUNCTION agent.unwatch_table(tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
  END IF;
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_watch ON %s', tbl);
END
$$;
COMMENT ON FUNCTION agent.unwatch_table(regclass) IS
  'Removes the watcher agent.watch_table installed (no error when the table is not watched); on the caller''s own tables only.';

-- Trigger arguments: resource_type, id_column, 'workspace_column=<name>'
-- (absent in watchers installed before 0.3.0), mention columns...
CREATE VIEW agent.watched_tables AS
SELECT w.tbl, w.args[1] AS resource_type, w.args[2] AS id_column,
       CASE WHEN w.args[3] LIKE 'workspace_column=%' THEN w.args[4:w.n] ELSE w.args[3:w.n] END AS mention_columns,
       CASE WHEN w.args[3] LIKE 'workspace_column=%'
            THEN nullif(pg_catalog.substr(w.args[3], 18), '') END AS workspace_column
FROM (SELECT t.tgrelid::regclass AS tbl, t.tgnargs AS n,
             pg_catalog.string_to_array(pg_catalog.encode(t.tgargs, 'escape'), E'\\000') AS args
        FROM pg_catalog.pg_trigger t
       WHERE t.tgname = 'pg_agents_watch' AND NOT t.tgisinternal) w;
COMMENT ON VIEW agent.watched_tables IS 'Tables watched by agent.watch_table, with their resource type, id column, mention columns and workspace column.';
COMMENT ON COLUMN agent.watched_tables.tbl IS 'Watched table.';
COMMENT ON COLUMN agent.watched_tables.resource_type IS 'Resource type of its events.';
COMMENT ON COLUMN agent.watched_tables.id_column IS 'Column giving row_id.';
COMMENT ON COLUMN agent.watched_tables.mention_columns IS 'Columns scanned for [[agent:ID]] mentions.';
COMMENT ON COLUMN agent.watched_tables.workspace_column IS 'Column giving each row''s workspace; NULL: the writing session''s pg_agents.workspace.';

-- ---------------------------------------------------------------------------
-- agent.set_trigger's argument (the function is in 100_access.sql: triggers
-- are settings).  The shape of the jsonb is checked here; the rules of a
-- trigger row (event name, filter, schedule and time zone) stay with the
-- row triggers above and in the cron module, which every write passes.
-- ---------------------------------------------------------------------------

\ir ../functions/agent._check_trigger.sql

-- ---------------------------------------------------------------------------
-- The API trigger (issue 31): an application starts a run of a trigger of
-- kind api on behalf of a user.  The run is manual (it acts as by_user, who
-- needs the chat level), origin api, linked to the trigger; it goes through
-- the one queue (agent._enqueue_run), the agent's hourly run cap (counted
-- over its autonomous runs and its API-trigger runs of the last hour) and the
-- deduplication of events: the same payload fired again through the same
-- trigger within pg_agents.dedup_window queues nothing and returns the first
-- run's id.
-- ---------------------------------------------------------------------------
\ir ../functions/agent.fire_trigger.sql
REVOKE ALL ON FUNCTION agent.fire_trigger(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.fire_trigger(bigint, text, jsonb) IS
  'Fires a trigger of kind api for by_user (who needs the chat level on the agent): queues a manual run, origin api, with the payload as its input; the agent''s hourly run cap and pg_agents.dedup_window apply as for events (the same payload again returns the first run''s id). A trigger of another workspace is 42704; another kind 42809; a disabled trigger or a suspended agent 55000.';

-- ---------------------------------------------------------------------------
-- Anti-loop reports (issue 31): an event of an agent's own write that a
-- trigger drops is counted on the trigger, and reported by an audit row
-- event.self_skipped at most once an hour (src/dispatch.c); agent.activity
-- and agent.insights show the counts.
-- ---------------------------------------------------------------------------
ALTER TABLE agent.triggers ADD COLUMN self_skipped bigint NOT NULL DEFAULT 0,
                           ADD COLUMN self_skipped_at timestamptz,
                           ADD COLUMN self_skip_reported_at timestamptz;
COMMENT ON COLUMN agent.triggers.self_skipped IS 'Events of the agent''s own writes this trigger dropped (anti-loop), in all.';
COMMENT ON COLUMN agent.triggers.self_skipped_at IS 'When it last dropped an event of the agent''s own write.';
COMMENT ON COLUMN agent.triggers.self_skip_reported_at IS 'When an audit row event.self_skipped last reported the dropped events (at most once an hour).';
