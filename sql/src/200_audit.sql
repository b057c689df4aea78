-- pg_agents: audit (docs/audit.md).
--
-- agent.audit_log and agent._audit_event live in 010_core.sql (other parts
-- call _audit_event); this part adds the C table triggers, redaction, the
-- append-only guard, tenant-scoped reads, retention and scheduling.

-- ---------------------------------------------------------------------------
-- Redaction
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.redact(jsonb) RETURNS jsonb
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_redact';
COMMENT ON FUNCTION agent.redact(jsonb) IS
  'The redacted copy of a jsonb document: credential-shaped keys and values replaced by [REDACTED], long strings, deep nesting and oversized payloads cut (docs/audit.md).';

-- ---------------------------------------------------------------------------
-- Append-only guard
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._audit_guard() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_audit_guard';
COMMENT ON FUNCTION agent._audit_guard() IS
  'Internal: refuses UPDATE, DELETE and TRUNCATE on agent.audit_log and its partitions, except inside agent.purge_audit(), agent.maintain_audit() and agent._audit_backdate().';

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON agent.audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_guard();
CREATE TRIGGER audit_log_append_only_row BEFORE UPDATE OR DELETE ON agent.audit_log
  FOR EACH ROW EXECUTE FUNCTION agent._audit_guard();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON agent.audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_guard();
COMMENT ON TRIGGER audit_log_append_only ON agent.audit_log IS 'Refuses UPDATE and DELETE statements (even ones matching no row).';
COMMENT ON TRIGGER audit_log_append_only_row ON agent.audit_log IS 'Refuses each updated or deleted row; inside purge_audit only rows past the retention period pass.';
COMMENT ON TRIGGER audit_log_no_truncate ON agent.audit_log IS 'Refuses TRUNCATE.';
-- also with session_replication_role = replica
ALTER TABLE agent.audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;
ALTER TABLE agent.audit_log ENABLE ALWAYS TRIGGER audit_log_append_only_row;
ALTER TABLE agent.audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate;

-- ---------------------------------------------------------------------------
-- Partitions: one per month (UTC), made ahead by agent.maintain_audit(), and
-- a default one that catches a row no monthly partition takes (so that no row
-- is ever lost when maintenance has not run).  Statement triggers do not
-- reach a partition named directly, so each partition gets its own guard;
-- none is granted to anybody, and row-level security is on without a policy:
-- only the parent is read.
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._audit_partition_setup(part regclass, note text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_citus boolean;
BEGIN
  EXECUTE pg_catalog.format('CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON %s '
                            'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_guard()', part);
  EXECUTE pg_catalog.format('CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON %s '
                            'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_guard()', part);
  EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_append_only', part);
  -- the row guard is the parent's, cloned on the partition; on Citus the
  -- clones on the shards do not carry the name Citus would give them, and
  -- the statement fails there: the parent's setting then stands
  IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_append_only_row', part);
  ELSE
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1)'
      INTO v_citus USING 'agent.audit_log'::pg_catalog.regclass;
    IF NOT v_citus THEN
      EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_append_only_row', part);
    END IF;
  END IF;
  EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER audit_log_no_truncate', part);
  EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', part);
  EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM PUBLIC', part);
  EXECUTE pg_catalog.format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON %s FROM CURRENT_USER', part);
  EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', part, note);
  -- a member of the extension like its parent (its definition comes back
  -- with CREATE EXTENSION or agent.maintain_audit(), not from a dump)
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend
                  WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objid = part
                    AND refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND deptype = 'e') THEN
    EXECUTE pg_catalog.format('ALTER EXTENSION pg_agents ADD TABLE %s', part);
  END IF;
  -- its rows go into a logical dump (pg_dump --load-via-partition-root, see
  -- docs/operations.md), as pg_extension_config_dump() marks the partitions
  -- made at install; that function works inside an extension script only,
  -- so a partition made later is marked the way it marks one
  UPDATE pg_catalog.pg_extension
     SET extconfig = pg_catalog.array_append(extconfig, part::pg_catalog.oid),
         extcondition = pg_catalog.array_append(extcondition, ''::pg_catalog.text)
   WHERE extname = 'pg_agents'
     AND NOT (part::pg_catalog.oid = ANY (coalesce(extconfig, '{}'::pg_catalog.oid[])));
END
$$;
COMMENT ON FUNCTION agent._audit_partition_setup(regclass, text) IS
  'Internal: the guard triggers (enabled ALWAYS), row-level security, privileges, comment, extension membership and logical-dump mark of a new partition of agent.audit_log.';

CREATE TABLE agent.audit_log_default PARTITION OF agent.audit_log DEFAULT;
SELECT agent._audit_partition_setup('agent.audit_log_default',
  'Rows of agent.audit_log that no monthly partition takes; agent.maintain_audit() moves them into the partition it makes for their month.');

CREATE FUNCTION agent._audit_new_partition(name text, lo timestamptz, hi timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
BEGIN
  EXECUTE pg_catalog.format('CREATE TABLE agent.%I PARTITION OF agent.audit_log FOR VALUES FROM (%L) TO (%L)',
                            name, lo, hi);
  PERFORM agent._audit_partition_setup(pg_catalog.format('agent.%I', name)::pg_catalog.regclass,
    pg_catalog.format('Audit rows of %s (UTC), a partition of agent.audit_log.',
                      pg_catalog.to_char(lo AT TIME ZONE 'UTC', 'YYYY-MM')));
END
$$;
COMMENT ON FUNCTION agent._audit_new_partition(text, timestamptz, timestamptz) IS
  'Internal (agent.maintain_audit): makes the partition of agent.audit_log for [lo, hi).';

CREATE FUNCTION agent._audit_default_move(name text, lo timestamptz, hi timestamptz) RETURNS bigint
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'pg_agents_audit_default_move';
COMMENT ON FUNCTION agent._audit_default_move(text, timestamptz, timestamptz) IS
  'Internal (agent.maintain_audit), superuser only: makes the partition of [lo, hi) while agent.audit_log_default holds rows of that range, and moves them into it (same ids, same content); returns how many.';

CREATE FUNCTION agent.maintain_audit(months_ahead integer DEFAULT 3) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_now   timestamp := pg_catalog.date_trunc('month', pg_catalog.now() AT TIME ZONE 'UTC');
  v_month timestamp;
  v_lo    timestamptz;
  v_hi    timestamptz;
  v_name  text;
  v_min   timestamptz;
  v_days  integer := coalesce(pg_catalog.current_setting('pg_agents.audit_retention_days', true), '365')::integer;
  v_made  integer := 0;
BEGIN
  IF months_ahead IS NULL OR months_ahead < 0 OR months_ahead > 120 THEN
    RAISE EXCEPTION 'invalid months_ahead %', coalesce(months_ahead::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Partitions are made from 0 to 120 months ahead.';
  END IF;
  -- the default partition's rows of retained months get their partition too
  SELECT pg_catalog.min(d.at) INTO v_min FROM agent.audit_log_default d;
  v_month := v_now;
  IF v_min IS NOT NULL THEN
    IF v_days > 0 THEN
      v_min := GREATEST(v_min, pg_catalog.now() - pg_catalog.make_interval(days => v_days));
    END IF;
    v_month := LEAST(v_now, pg_catalog.date_trunc('month', v_min AT TIME ZONE 'UTC'));
  END IF;
  WHILE v_month <= v_now + pg_catalog.make_interval(months => months_ahead) LOOP
    v_lo := v_month AT TIME ZONE 'UTC';
    v_hi := (v_month + interval '1 month') AT TIME ZONE 'UTC';
    v_name := 'audit_log_' || pg_catalog.to_char(v_month, 'YYYY_MM');
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
                    WHERE i.inhparent = 'agent.audit_log'::pg_catalog.regclass AND c.relname = v_name) THEN
      IF EXISTS (SELECT 1 FROM agent.audit_log_default d WHERE d.at >= v_lo AND d.at < v_hi) THEN
        PERFORM agent._audit_default_move(v_name, v_lo, v_hi);
      ELSE
        PERFORM agent._audit_new_partition(v_name, v_lo, v_hi);
      END IF;
      v_made := v_made + 1;
    END IF;
    v_month := v_month + interval '1 month';
  END LOOP;
  RETURN v_made;
END
$$;
COMMENT ON FUNCTION agent.maintain_audit(integer) IS
  'Makes the monthly partitions of agent.audit_log from the current month (UTC) to months_ahead months ahead (default 3), and for the retained rows that fell into the default partition, moving them there; returns how many partitions it made. agent.purge_audit() runs it first.';

SELECT agent.maintain_audit();

-- Nobody writes the log through SQL: the C code writes it directly.  Who may
-- read it, and which rows, is in 210_reads.sql and 990_privileges.sql.

-- ---------------------------------------------------------------------------
-- Table triggers
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._audit_trigger() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'pg_agents_audit_trigger';
COMMENT ON FUNCTION agent._audit_trigger() IS
  'Internal: the C audit trigger agent.audit_table() attaches; arguments: target_type, owner column, workspace column.';

CREATE FUNCTION agent._audit_table_event(tbl regclass, action text, target_type text)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_audit_table_event';
COMMENT ON FUNCTION agent._audit_table_event(regclass, text, text) IS
  'Internal: records audit.table / audit.untable; only the table''s owner may.';

CREATE FUNCTION agent._caller() RETURNS regrole
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_caller';
COMMENT ON FUNCTION agent._caller() IS
  'Internal: the role the session acts as (after SET ROLE), also inside a SECURITY DEFINER function; the extension checks the caller''s rights on the caller''s own objects with it.';

CREATE FUNCTION agent.audit_table(tbl regclass, target_type text DEFAULT NULL,
                                  owner_column name DEFAULT NULL,
                                  workspace_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_rel  pg_catalog.pg_class%ROWTYPE;
  v_ws   name := workspace_column;
  v_type text := coalesce(target_type, '');
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO v_rel FROM pg_catalog.pg_class WHERE oid = tbl;
  IF tbl = 'agent.audit_log'::pg_catalog.regclass THEN
    RAISE EXCEPTION 'cannot audit agent.audit_log'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The audit log records changes to other tables; it is append-only itself.';
  END IF;
  IF v_rel.relpersistence = 't' THEN
    RAISE EXCEPTION 'cannot audit temporary table %', tbl
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'A temporary table is seen by its own session only; its changes are not history.';
  END IF;
  IF v_rel.relkind NOT IN ('r', 'p') THEN
    RAISE EXCEPTION '"%" is not a table', tbl
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only tables and partitioned tables can be audited.';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(), v_rel.relowner, 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF target_type IS NOT NULL AND pg_catalog.btrim(target_type) = '' THEN
    RAISE EXCEPTION 'target_type must not be empty'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass NULL to use the table name.';
  END IF;
  IF owner_column IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute
        WHERE attrelid = tbl AND attname = owner_column AND attnum > 0 AND NOT attisdropped) THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', owner_column, tbl
      USING ERRCODE = 'undefined_column';
  END IF;
  IF v_ws IS NULL THEN
    SELECT a.attname INTO v_ws FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = 'workspace_id' AND a.attnum > 0 AND NOT a.attisdropped;
  ELSIF NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_attribute
        WHERE attrelid = tbl AND attname = v_ws AND attnum > 0 AND NOT attisdropped) THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', v_ws, tbl
      USING ERRCODE = 'undefined_column';
  END IF;

  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_truncate ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_stmt ON %s', tbl);
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH ROW EXECUTE FUNCTION agent._audit_trigger(%L, %L, %L)',
    tbl, v_type, coalesce(owner_column, ''), coalesce(v_ws, ''));
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit_truncate AFTER TRUNCATE ON %s '
    'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_trigger(%L, %L, %L)',
    tbl, v_type, '', '');
  -- after the statement's rows: releases the log the row trigger kept open
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER pg_agents_audit_stmt AFTER INSERT OR UPDATE OR DELETE ON %s '
    'FOR EACH STATEMENT EXECUTE FUNCTION agent._audit_trigger()', tbl);
  PERFORM agent._audit_table_event(tbl, 'audit.table', nullif(v_type, ''));
END
$$;
COMMENT ON FUNCTION agent.audit_table(regclass, text, name, name) IS
  'Attaches the C audit trigger to a table: INSERT (new row), UPDATE (changed columns only), DELETE (old row) and TRUNCATE are recorded in agent.audit_log, redacted. Re-running it updates the settings.';

CREATE FUNCTION agent.unaudit_table(tbl regclass) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $$
DECLARE
  v_had boolean;
BEGIN
  IF tbl IS NULL THEN
    RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_catalog.pg_has_role(agent._caller(),
                                (SELECT relowner FROM pg_catalog.pg_class WHERE oid = tbl), 'USAGE') THEN
    RAISE EXCEPTION 'must be owner of table %', tbl
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                  WHERE tgrelid = tbl AND tgname IN ('pg_agents_audit', 'pg_agents_audit_truncate'))
    INTO v_had;
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_truncate ON %s', tbl);
  EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS pg_agents_audit_stmt ON %s', tbl);
  IF v_had THEN
    PERFORM agent._audit_table_event(tbl, 'audit.untable', NULL);
  END IF;
  RETURN v_had;
END
$$;
COMMENT ON FUNCTION agent.unaudit_table(regclass) IS
  'Removes the audit trigger from a table; returns false when the table was not audited. Recorded as audit.untable.';

CREATE VIEW agent.audited_tables WITH (security_invoker = true) AS
SELECT t.tgrelid::pg_catalog.regclass AS table_name,
       coalesce(nullif(pg_catalog.split_part(pg_catalog.encode(t.tgargs, 'escape'), E'\\000', 1), ''),
                c.relname::text) AS target_type,
       nullif(pg_catalog.split_part(pg_catalog.encode(t.tgargs, 'escape'), E'\\000', 2), '') AS owner_column,
       nullif(pg_catalog.split_part(pg_catalog.encode(t.tgargs, 'escape'), E'\\000', 3), '') AS workspace_column
  FROM pg_catalog.pg_trigger t
  JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = 'pg_agents_audit' AND NOT t.tgisinternal;
COMMENT ON VIEW agent.audited_tables IS 'Tables audited by agent.audit_table(), with their settings.';
COMMENT ON COLUMN agent.audited_tables.table_name IS 'Audited table.';
COMMENT ON COLUMN agent.audited_tables.target_type IS 'target_type written in its audit rows.';
COMMENT ON COLUMN agent.audited_tables.owner_column IS 'Column read into owner_id, if any.';
COMMENT ON COLUMN agent.audited_tables.workspace_column IS 'Column read into workspace_id (else pg_agents.workspace), if any.';

-- ---------------------------------------------------------------------------
-- Reads
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.audit_events(target_type text DEFAULT NULL, target_id text DEFAULT NULL,
                                   actor_kind text DEFAULT NULL, status text DEFAULT NULL,
                                   run_id bigint DEFAULT NULL, action text DEFAULT NULL,
                                   since timestamptz DEFAULT NULL, lim integer DEFAULT 100)
RETURNS SETOF agent.audit_log
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- computed once and passed as a value: the query names its workspace
  -- (Citus routes it to that workspace's shard)
  v_ws text := agent.current_workspace();
BEGIN
  IF audit_events.actor_kind IS NOT NULL AND audit_events.actor_kind NOT IN ('agent', 'human', 'system') THEN
    RAISE EXCEPTION 'invalid actor kind "%"', audit_events.actor_kind
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An actor kind is agent, human or system.';
  END IF;
  IF audit_events.status IS NOT NULL AND audit_events.status NOT IN ('success', 'error', 'denied') THEN
    RAISE EXCEPTION 'invalid audit status "%"', audit_events.status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An audit status is success, error or denied.';
  END IF;
  IF lim IS NULL OR lim < 1 OR lim > 10000 THEN
    RAISE EXCEPTION 'invalid limit %', coalesce(lim::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The limit is between 1 and 10000.';
  END IF;
  RETURN QUERY
    SELECT l.* FROM agent.audit_log l
     WHERE l.workspace_id = v_ws
       AND (audit_events.target_type IS NULL OR l.target_type = audit_events.target_type)
       AND (audit_events.target_id IS NULL OR l.target_id = audit_events.target_id)
       AND (audit_events.actor_kind IS NULL OR l.actor_kind = audit_events.actor_kind)
       AND (audit_events.status IS NULL OR l.status = audit_events.status)
       AND (audit_events.run_id IS NULL OR l.run_id = audit_events.run_id)
       AND (audit_events.action IS NULL OR l.action = audit_events.action)
       AND (audit_events.since IS NULL OR l.at >= audit_events.since)
     ORDER BY l.at DESC, l.id DESC
     LIMIT lim;
END
$$;
COMMENT ON FUNCTION agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer) IS
  'Audit rows of the caller''s workspace (pg_agents.workspace), newest first, filtered; without a workspace identity nothing matches.';

CREATE VIEW agent.audit_summary WITH (security_invoker = true) AS
SELECT pg_catalog.date_trunc('day', l.at) AS day, l.workspace_id, l.actor_kind, l.action, l.status,
       pg_catalog.count(*) AS events
  FROM agent.audit_log l
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW agent.audit_summary IS
  'Audit rows per day, workspace, actor kind, action and status (row-level security applies: a non-owner sees its workspace).';
COMMENT ON COLUMN agent.audit_summary.day IS 'Day (UTC midnight in the session time zone).';
COMMENT ON COLUMN agent.audit_summary.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.audit_summary.actor_kind IS 'agent, human or system.';
COMMENT ON COLUMN agent.audit_summary.action IS 'Action.';
COMMENT ON COLUMN agent.audit_summary.status IS 'success, error or denied.';
COMMENT ON COLUMN agent.audit_summary.events IS 'Number of audit rows.';

-- ---------------------------------------------------------------------------
-- Retention and maintenance
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._audit_drop_partitions(cutoff timestamptz, OUT dropped bigint, OUT partitions text[])
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
SET "DateStyle" = 'ISO, YMD'
AS $$
DECLARE
  r record;
  v_n bigint;
BEGIN
  dropped := 0;
  partitions := '{}';
  FOR r IN
    SELECT c.oid::pg_catalog.regclass AS part, b.hi
      FROM pg_catalog.pg_inherits i
      JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
      CROSS JOIN LATERAL (SELECT (pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                                          'TO \(''([^'']*)''\)'))[1]::timestamptz AS hi) b
     WHERE i.inhparent = 'agent.audit_log'::pg_catalog.regclass AND b.hi IS NOT NULL AND b.hi <= cutoff
     ORDER BY b.hi
  LOOP
    EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM %s', r.part) INTO v_n;
    partitions := partitions || r.part::text;
    dropped := dropped + v_n;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_depend
                WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objid = r.part
                  AND refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND deptype = 'e') THEN
      EXECUTE pg_catalog.format('ALTER EXTENSION pg_agents DROP TABLE %s', r.part);
    END IF;
    EXECUTE pg_catalog.format('DROP TABLE %s', r.part);
  END LOOP;
END
$$;
COMMENT ON FUNCTION agent._audit_drop_partitions(timestamptz) IS
  'Internal (agent.purge_audit): drops the monthly partitions of agent.audit_log that end at or before cutoff; returns how many rows they held and their names.';

CREATE FUNCTION agent.purge_audit() RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'pg_agents_purge_audit';
REVOKE ALL ON FUNCTION agent.purge_audit() FROM PUBLIC;
COMMENT ON FUNCTION agent.purge_audit() IS
  'Runs agent.maintain_audit(), then removes audit rows older than pg_agents.audit_retention_days (0 keeps them forever): whole monthly partitions past the cut-off are dropped, the few older rows left (in the partition the cut-off falls in, or the default one) deleted; returns how many rows went. The only deletion the log allows. Recorded as audit.purge.';

CREATE FUNCTION agent._audit_backdate(ids bigint[], age interval) RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_audit_backdate';
REVOKE ALL ON FUNCTION agent._audit_backdate(bigint[], interval) FROM PUBLIC;
COMMENT ON FUNCTION agent._audit_backdate(bigint[], interval) IS
  'Test support, superuser only: moves the time of the given audit rows back by age (nothing else can change), and records audit.backdate.';

CREATE FUNCTION agent.schedule_maintenance()
RETURNS TABLE(job_name text, schedule text, command text, jobid bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_jobs text[][] := ARRAY[
    ARRAY['pg_agents_purge_audit', '17 3 * * *',
          'SELECT agent.set_identity(''system''); SELECT agent.purge_audit()'],
    ARRAY['pg_agents_tick', '* * * * *',
          'SELECT agent.set_identity(''system''); SELECT agent.tick()'],
    -- run retention (agent.purge_runs, docs/runs.md): a batch every 10 minutes
    ARRAY['pg_agents_purge_runs', '*/10 * * * *',
          'SELECT agent.set_identity(''system''); SELECT agent.purge_runs(5000)']];
  i int;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
    RAISE EXCEPTION 'pg_cron is not installed in this database'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'agent.schedule_maintenance() schedules agent.purge_audit(), agent.tick() and agent.purge_runs() through pg_cron.',
            HINT = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database and run CREATE EXTENSION pg_cron; or call agent.purge_audit() daily, agent.tick() every minute and agent.purge_runs() every few minutes from another scheduler.';
  END IF;
  FOR i IN 1 .. pg_catalog.array_length(v_jobs, 1) LOOP
    job_name := v_jobs[i][1];
    schedule := v_jobs[i][2];
    command := v_jobs[i][3];
    -- the worker ticks the database it serves itself (pg_agents.worker_tick,
    -- about once a second): no minute job beside it, and one left from
    -- before goes
    IF job_name = 'pg_agents_tick'
       AND coalesce(pg_catalog.current_setting('pg_agents.worker_tick', true), 'on') = 'on'
       AND pg_catalog.current_setting('pg_agents.database', true) = pg_catalog.current_database() THEN
      IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        EXECUTE 'SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = $1 AND username = current_user'
          USING job_name;
      END IF;
      CONTINUE;
    END IF;
    -- a named job is updated in place when it exists
    EXECUTE 'SELECT cron.schedule($1, $2, $3)' INTO jobid USING job_name, schedule, command;
    RETURN NEXT;
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent.schedule_maintenance() FROM PUBLIC;
COMMENT ON FUNCTION agent.schedule_maintenance() IS
  'Schedules agent.purge_audit() daily (03:17), agent.tick() every minute (not in the database the worker serves with pg_agents.worker_tick on: the worker ticks it) and agent.purge_runs(5000) every 10 minutes through pg_cron; re-running updates the jobs instead of duplicating them.';

CREATE FUNCTION agent.unschedule_maintenance() RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_n integer := 0;
  v_ok boolean;
  v_name text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
    RAISE EXCEPTION 'pg_cron is not installed in this database'
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  FOREACH v_name IN ARRAY ARRAY['pg_agents_purge_audit', 'pg_agents_tick', 'pg_agents_purge_runs'] LOOP
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM cron.job WHERE jobname = $1 AND username = current_user)'
      INTO v_ok USING v_name;
    IF v_ok THEN
      EXECUTE 'SELECT cron.unschedule($1)' USING v_name;
      v_n := v_n + 1;
    END IF;
  END LOOP;
  RETURN v_n;
END
$$;
REVOKE ALL ON FUNCTION agent.unschedule_maintenance() FROM PUBLIC;
COMMENT ON FUNCTION agent.unschedule_maintenance() IS
  'Removes the pg_cron jobs agent.schedule_maintenance() made; returns how many.';
