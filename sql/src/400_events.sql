-- pg_agents: events — agent.fire_event, filters, dedup, anti-loop, table
-- watchers and the worker wake-up (docs/events.md).

-- ---------------------------------------------------------------------------
-- Matching: one probe per (event, resource type, resource id | any)
-- ---------------------------------------------------------------------------

-- agent.triggers_event_idx (000_schema.sql) is (event_name, resource_type,
-- resource_id) WHERE enabled AND kind IN ('event', 'mention'): every probe of
-- the dispatcher is an equality (or IS NULL) on all three columns.
COMMENT ON INDEX agent.triggers_event_idx IS
  'Candidate lookup of agent.fire_event: (event_name, resource_type or NULL = any, resource_id or NULL = any).';

-- ---------------------------------------------------------------------------
-- Filters
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.validate_filter(filter jsonb) RETURNS void
LANGUAGE c STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_validate_filter';
COMMENT ON FUNCTION agent.validate_filter(jsonb) IS
  'Raises 22023 "invalid filter: ..." naming the bad part of a trigger filter; returns nothing when the filter is valid.';

CREATE FUNCTION agent.filter_matches(filter jsonb, payload jsonb) RETURNS boolean
LANGUAGE c STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'pg_agents_filter_matches';
COMMENT ON FUNCTION agent.filter_matches(jsonb, jsonb) IS
  'Whether an event payload satisfies a trigger filter (the evaluator agent.fire_event uses); a NULL or empty filter matches.';

-- Refuses an invalid filter or event trigger definition when a trigger is
-- saved.  (Schedule validation is a separate trigger of the cron module.)
CREATE FUNCTION agent._triggers_validate_event() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
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
  'Trigger: refuses an invalid filter, or an event trigger without a valid event_name, when agent.triggers is written.';
CREATE TRIGGER triggers_validate_event
  BEFORE INSERT OR UPDATE OF kind, event_name, resource_type, resource_id, filter ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_validate_event();

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
                  prompt, enabled, allow_self_retrigger ON agent.triggers
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

CREATE FUNCTION agent._events_cleanup(p_now timestamptz DEFAULT now()) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  -- SHOW gives the window with a unit (10min, 600s, 1h...), which interval input reads
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '600')::interval;
  v_n      bigint;
BEGIN
  DELETE FROM agent.event_dedup d WHERE d.seen_at < p_now - v_window;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END
$$;
REVOKE ALL ON FUNCTION agent._events_cleanup(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._events_cleanup(timestamptz) IS
  'Internal (called by agent.tick): deletes dedup fingerprints older than pg_agents.dedup_window; returns how many.';

-- ---------------------------------------------------------------------------
-- Dispatch
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.fire_event(event_name text, resource_type text, resource_id text,
                                 payload jsonb DEFAULT '{}', actor text DEFAULT NULL,
                                 event_id text DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_fire_event';
COMMENT ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text) IS
  'Matches an event to enabled event/mention triggers (filters, anti-loop, suspension, dedup, hourly cap) and queues one autonomous run per match in the caller''s transaction; returns the runs made.';

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
                                  mention_columns text[] DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
  v_args text;
  v_col  text;
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be NULL' USING ERRCODE = 'invalid_parameter_value';
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
  v_args := pg_catalog.quote_literal(resource_type) || ', ' || pg_catalog.quote_literal(id_column::text);
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
COMMENT ON FUNCTION agent.watch_table(regclass, text, name, text[]) IS
  'Installs the pg_agents_watch row trigger: rows added, updated and removed become collection events (and agent.mentioned for [[agent:ID]] tokens added to mention_columns). Needs the right to create triggers on the table.';

CREATE FUNCTION agent.unwatch_table(tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_watch ON %s', tbl);
END
$$;
COMMENT ON FUNCTION agent.unwatch_table(regclass) IS
  'Removes the watcher agent.watch_table installed (no error when the table is not watched).';

CREATE VIEW agent.watched_tables AS
SELECT t.tgrelid::regclass AS tbl,
       (pg_catalog.string_to_array(pg_catalog.encode(t.tgargs, 'escape'), E'\\000'))[1] AS resource_type,
       (pg_catalog.string_to_array(pg_catalog.encode(t.tgargs, 'escape'), E'\\000'))[2] AS id_column,
       (pg_catalog.string_to_array(pg_catalog.encode(t.tgargs, 'escape'), E'\\000'))[3:t.tgnargs] AS mention_columns
FROM pg_catalog.pg_trigger t
WHERE t.tgname = 'pg_agents_watch' AND NOT t.tgisinternal;
COMMENT ON VIEW agent.watched_tables IS 'Tables watched by agent.watch_table, with their resource type, id column and mention columns.';
COMMENT ON COLUMN agent.watched_tables.tbl IS 'Watched table.';
COMMENT ON COLUMN agent.watched_tables.resource_type IS 'Resource type of its events.';
COMMENT ON COLUMN agent.watched_tables.id_column IS 'Column giving row_id.';
COMMENT ON COLUMN agent.watched_tables.mention_columns IS 'Columns scanned for [[agent:ID]] mentions.';

-- ---------------------------------------------------------------------------
-- agent.set_trigger's argument (the function is in 100_access.sql: triggers
-- are settings).  The shape of the jsonb is checked here; the rules of a
-- trigger row (event name, filter, schedule and time zone) stay with the
-- row triggers above and in the cron module, which every write passes.
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._check_trigger(p_trigger jsonb, p_complete boolean) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k text;
  v jsonb;
  t text;
BEGIN
  IF p_trigger IS NULL OR jsonb_typeof(p_trigger) <> 'object' THEN
    RAISE EXCEPTION 'trigger must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, v IN SELECT * FROM jsonb_each(p_trigger) LOOP
    t := jsonb_typeof(v);
    CASE k
      WHEN 'id' THEN
        IF NOT (t = 'null' OR t = 'number' AND (v #>> '{}') ~ '^[0-9]{1,18}$') THEN
          RAISE EXCEPTION 'trigger key "id" must be a trigger id' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'kind' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('schedule', 'event', 'mention', 'api') THEN
          RAISE EXCEPTION 'invalid trigger kind %', v::text
            USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A trigger kind is schedule, event, mention or api.';
        END IF;
      WHEN 'event_name', 'resource_type', 'resource_id', 'schedule', 'prompt' THEN
        IF t NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'trigger key "%" must be a string or null', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'timezone' THEN
        IF t <> 'string' THEN
          RAISE EXCEPTION 'trigger key "timezone" must be a string' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A time zone of the tz database, e.g. Europe/Paris (UTC when the key is left out).';
        END IF;
      WHEN 'filter' THEN
        IF t NOT IN ('object', 'null') THEN
          RAISE EXCEPTION 'trigger key "filter" must be an object' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'enabled', 'allow_self_retrigger', 'show_typing' THEN
        IF t <> 'boolean' THEN
          RAISE EXCEPTION 'trigger key "%" must be a boolean', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'run_as' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('creator', 'shared') THEN
          RAISE EXCEPTION 'trigger key "run_as" must be creator or shared' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      ELSE
        RAISE EXCEPTION 'unknown trigger key "%"', k
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Known keys: id, kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as.';
    END CASE;
  END LOOP;
  IF p_complete THEN
    IF p_trigger ->> 'kind' IS NULL THEN
      RAISE EXCEPTION 'invalid trigger: kind is required'
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A trigger kind is schedule, event, mention or api.';
    END IF;
    IF p_trigger ->> 'kind' = 'schedule' AND p_trigger ->> 'schedule' IS NULL THEN
      RAISE EXCEPTION 'invalid schedule trigger: schedule is required'
        USING ERRCODE = 'invalid_parameter_value', HINT = 'A schedule is a 5-field cron expression, e.g. 0 9 * * 1-5.';
    END IF;
  END IF;
END
$$;
COMMENT ON FUNCTION agent._check_trigger(jsonb, boolean) IS
  'Internal (agent.set_trigger): refuses (22023) a trigger definition with an unknown key or a value of the wrong shape, naming the key; p_complete also requires a kind, and a schedule for a schedule trigger.';
