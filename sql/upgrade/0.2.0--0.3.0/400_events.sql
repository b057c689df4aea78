-- ===========================================================================
-- events: the hourly cap's memo in backend memory (issue 14, attack 8), a
-- workspace for every event (issue 15), filter views read with the saving
-- role's rights (issue 14, attack 1), withholding of unreadable rows at
-- enqueue (issue 15), as in sql/src/010_core.sql, 400_events.sql and
-- 800_activity.sql.
-- ===========================================================================
-- The hourly cap's count, carried for the rest of the transaction once
-- counted (src/capmemo.c).
CREATE FUNCTION agent._cap_memo(p_agent_id bigint) RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_cap_memo';
REVOKE ALL ON FUNCTION agent._cap_memo(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._cap_memo(bigint) IS
  'Internal (agent._enqueue_run): the agent''s autonomous runs of the last hour as counted earlier in this transaction, or NULL when not counted yet. Backend memory, forgotten at transaction end, restored by a rolled-back subtransaction.';

CREATE FUNCTION agent._cap_memo_set(p_agent_id bigint, p_count bigint) RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_cap_memo_set';
REVOKE ALL ON FUNCTION agent._cap_memo_set(bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._cap_memo_set(bigint, bigint) IS
  'Internal (agent._enqueue_run): records the agent''s count of autonomous runs of the last hour for the rest of this transaction (undone if the current subtransaction rolls back).';

CREATE OR REPLACE FUNCTION agent._enqueue_run(p_agent_id bigint, p_regime text, p_origin text,
                                   p_input jsonb DEFAULT '{}',
                                   p_trigger_id bigint DEFAULT NULL,
                                   p_requested_by text DEFAULT NULL,
                                   p_parent_run_id bigint DEFAULT NULL,
                                   p_token_budget bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a        agent.agents%ROWTYPE;
  p        agent.runs%ROWTYPE;
  v_cap    integer;
  v_recent bigint;
  v_status text := 'queued';
  v_error  text;
  v_id     bigint;
BEGIN
  SELECT * INTO a FROM agent.agents WHERE id = p_agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', p_agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF p_parent_run_id IS NOT NULL THEN
    SELECT * INTO p FROM agent.runs WHERE id = p_parent_run_id;
  END IF;
  IF p_regime = 'autonomous' THEN
    v_cap := coalesce(a.hourly_run_cap, current_setting('pg_agents.hourly_run_cap')::integer);
    -- one queue decision at a time per agent, so that concurrent events respect the cap
    PERFORM pg_advisory_xact_lock(hashtext('pg_agents.cap'), hashtext(p_agent_id::text));
    -- Counting stops at the cap: the check costs at most cap rows.  While this
    -- transaction holds the lock no other one queues for the agent, and now()
    -- does not move, so the count only grows by the runs queued here: it is
    -- counted once per transaction and then carried in backend memory
    -- (agent._cap_memo, src/capmemo.c: undone with a rolled-back
    -- subtransaction, like the rows; never a setting a session could set).
    v_recent := agent._cap_memo(p_agent_id);
    IF v_recent IS NULL THEN
      SELECT count(*) INTO v_recent FROM (
        SELECT 1 FROM agent.runs r
         WHERE r.agent_id = p_agent_id AND r.regime = 'autonomous'
           AND r.created_at > now() - interval '1 hour' AND r.status <> 'budget_exceeded'
         LIMIT v_cap) s;
    END IF;
    IF v_recent >= v_cap THEN
      v_status := 'budget_exceeded';
      v_error := format('hourly run cap of %s reached', v_cap);
    END IF;
  END IF;
  -- the id is taken first so that a root run is its own root in one INSERT
  v_id := nextval(pg_get_serial_sequence('agent.runs', 'id'));
  INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, parent_run_id, root_run_id, depth, regime,
                          origin, requested_by, status, priority, input, error, token_budget, finished_at)
  VALUES (v_id, a.workspace_id, p_agent_id, p_trigger_id, p_parent_run_id, coalesce(p.root_run_id, v_id),
          coalesce(p.depth + 1, 0), p_regime, p_origin, p_requested_by, v_status,
          CASE WHEN p_regime = 'manual' THEN 10 ELSE 0 END,
          coalesce(p_input, '{}'), v_error, p_token_budget,
          CASE WHEN v_status <> 'queued' THEN now() END);
  IF p_regime = 'autonomous' THEN
    PERFORM agent._cap_memo_set(p_agent_id, v_recent + CASE WHEN v_status = 'queued' THEN 1 ELSE 0 END);
  END IF;
  PERFORM pg_notify('agent_runs', json_build_object('run_id', v_id, 'agent_id', p_agent_id,
                                                    'status', v_status)::text);
  IF v_status = 'queued' THEN
    PERFORM agent._request_wake();  -- sets the worker's latch at commit
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._enqueue_run(bigint, text, text, jsonb, bigint, text, bigint, bigint) IS
  'Internal: queues one run (hourly cap for autonomous runs, NOTIFY agent_runs, worker wake-up at commit); the one path every origin uses.';

-- The candidate index leads with the workspace.
DROP INDEX agent.triggers_event_idx;
CREATE INDEX triggers_event_idx ON agent.triggers (workspace_id, event_name, resource_type, resource_id)
  WHERE enabled AND kind IN ('event', 'mention');
COMMENT ON INDEX agent.triggers_event_idx IS
  'Candidate lookup of agent.fire_event: (the event''s workspace, event_name, resource_type or NULL = any, resource_id or NULL = any).';

ALTER TABLE agent.triggers ADD COLUMN saved_by regrole;
COMMENT ON COLUMN agent.triggers.saved_by IS
  'Role that saved the trigger''s filter (the session''s outer role: SET ROLE counts, a SECURITY DEFINER function does not); a filter view is read with its rights. Set by triggers_validate_event, not by the writer.';

CREATE FUNCTION agent._saving_role(requested regrole DEFAULT NULL) RETURNS regrole
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'pg_agents_saving_role';
REVOKE ALL ON FUNCTION agent._saving_role(regrole) FROM PUBLIC;
COMMENT ON FUNCTION agent._saving_role(regrole) IS
  'Internal (triggers_validate_event): the session''s outer role (the one SET ROLE chose, else the session user), which SECURITY DEFINER functions do not change; requested instead when the outer role is a superuser.';

-- Triggers saved before 0.3.0 recorded no saving role: a filter view is
-- read as the view's owner (its own rights), which the superuser running
-- the upgrade records (before the validation trigger is replaced, so that
-- an old row that would not validate today does not stop the upgrade).
DROP TRIGGER triggers_validate_event ON agent.triggers;
DROP TRIGGER triggers_changed_upd ON agent.triggers;
UPDATE agent.triggers t
   SET saved_by = c.relowner::regrole
  FROM pg_catalog.pg_class c
 WHERE t.filter ? 'view' AND c.oid = pg_catalog.to_regclass(t.filter ->> 'view');

CREATE OR REPLACE FUNCTION agent._triggers_validate_event() RETURNS trigger
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

CREATE TRIGGER triggers_changed_upd
  AFTER UPDATE OF workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                  prompt, enabled, allow_self_retrigger, saved_by ON agent.triggers
  FOR EACH STATEMENT EXECUTE FUNCTION agent._triggers_changed();

COMMENT ON FUNCTION agent.validate_filter(jsonb) IS
  'Raises 22023 "invalid filter: ..." naming the bad part of a trigger filter (42501 for a view the session''s outer role may not read); returns nothing when the filter is valid.';

COMMENT ON FUNCTION agent.filter_matches(jsonb, jsonb) IS
  'Whether an event payload satisfies a trigger filter (the evaluator agent.fire_event uses; a view is read with the caller''s rights, within pg_agents.filter_view_timeout); a NULL or empty filter matches.';

REVOKE ALL ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.fire_event(text, text, text, jsonb, text, text) IS
  'Matches an event of the session''s workspace (pg_agents.workspace) to the enabled event/mention triggers of that workspace (filters, anti-loop, suspension, dedup, hourly cap) and queues one autonomous run per match in the caller''s transaction; returns the runs made. A superuser session without a workspace fires an event of no workspace: it wakes nobody and is counted (agent.unknown_workspace_events).';

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

DROP FUNCTION agent.watch_table(regclass, text, name, text[]);
CREATE OR REPLACE FUNCTION agent.watch_table(tbl regclass, resource_type text, id_column name DEFAULT 'id',
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

-- Trigger arguments: resource_type, id_column, 'workspace_column=<name>'
-- (absent in watchers installed before 0.3.0), mention columns...
CREATE OR REPLACE VIEW agent.watched_tables AS
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

-- What is wrong with one trigger of a draft (NULL when it is valid).
CREATE OR REPLACE FUNCTION agent._draft_trigger_problem(t jsonb) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k    text;
  kind text;
BEGIN
  IF t IS NULL OR jsonb_typeof(t) <> 'object' THEN
    RETURN 'a trigger must be a JSON object';
  END IF;
  FOR k IN SELECT jsonb_object_keys(t) LOOP
    IF k NOT IN ('kind', 'event_name', 'resource_type', 'resource_id', 'filter', 'schedule', 'timezone',
                 'prompt', 'allow_self_retrigger', 'show_typing', 'run_as', 'enabled') THEN
      RETURN format('unknown key "%s"', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['kind', 'event_name', 'resource_type', 'resource_id', 'schedule',
                                      'timezone', 'prompt', 'run_as']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) NOT IN ('string', 'null') THEN
      RETURN format('"%s" must be a string', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['allow_self_retrigger', 'show_typing', 'enabled']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) <> 'boolean' THEN
      RETURN format('"%s" must be a boolean', k);
    END IF;
  END LOOP;
  kind := t ->> 'kind';
  IF kind IS NULL OR kind NOT IN ('schedule', 'event', 'mention', 'api') THEN
    RETURN format('kind "%s" is not schedule, event, mention or api', coalesce(kind, 'NULL'));
  END IF;
  IF kind = 'schedule' THEN
    IF t ->> 'schedule' IS NULL OR NOT agent.cron_valid(t ->> 'schedule') THEN
      RETURN format('invalid schedule "%s"', coalesce(t ->> 'schedule', 'NULL'));
    END IF;
  END IF;
  IF t ->> 'timezone' IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = t ->> 'timezone') THEN
    RETURN format('unknown time zone "%s"', t ->> 'timezone');
  END IF;
  IF kind = 'event' THEN
    IF coalesce(btrim(t ->> 'event_name'), '') = '' THEN
      RETURN 'an event trigger needs event_name';
    END IF;
    IF (t ->> 'event_name') !~ '^[A-Za-z0-9_.:-]{1,200}$' THEN
      RETURN format('invalid event_name "%s"', t ->> 'event_name');
    END IF;
    IF coalesce(btrim(t ->> 'resource_type'), '') = '' THEN
      RETURN 'an event trigger needs resource_type';
    END IF;
  END IF;
  IF t ->> 'resource_id' IS NOT NULL AND t ->> 'resource_type' IS NULL THEN
    RETURN 'resource_id needs resource_type';
  END IF;
  IF t ->> 'run_as' IS NOT NULL AND t ->> 'run_as' NOT IN ('creator', 'shared') THEN
    RETURN format('run_as "%s" is not creator or shared', t ->> 'run_as');
  END IF;
  IF t ? 'filter' AND jsonb_typeof(t -> 'filter') <> 'null' THEN
    -- a filter view must be readable by the session's outer role (the
    -- application's, not the owner of a SECURITY DEFINER caller such as
    -- create_from_draft): it is read with that role's rights, which become
    -- the trigger's saved_by.  Validation never runs the view.
    BEGIN
      PERFORM agent.validate_filter(t -> 'filter');
    EXCEPTION WHEN invalid_parameter_value OR insufficient_privilege THEN
      RETURN SQLERRM;
    END;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._draft_trigger_problem(jsonb) IS
  'Internal: why a draft trigger is invalid (keys and types, kind, cron via agent.cron_valid, time zone, event name and resource type, run_as, filter via agent.validate_filter, whose view the session''s outer role must be allowed to read), or NULL when it is valid.';
