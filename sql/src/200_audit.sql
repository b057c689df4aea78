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

\ir ../functions/agent._audit_partition_setup.sql

\ir ../tables/agent.audit_log_default.sql
SELECT agent._audit_partition_setup('agent.audit_log_default',
  'Rows of agent.audit_log that no monthly partition takes; agent.maintain_audit() moves them into the partition it makes for their month.');

\ir ../functions/agent._audit_new_partition.sql

\ir ../functions/agent._audit_default_move.sql

\ir ../functions/agent.maintain_audit.sql

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

\ir ../functions/agent.audit_events.sql

\ir ../views/agent.audit_summary.sql

-- ---------------------------------------------------------------------------
-- Retention and maintenance
-- ---------------------------------------------------------------------------

\ir ../functions/agent._audit_drop_partitions.sql

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

\ir ../functions/agent.schedule_maintenance.sql
REVOKE ALL ON FUNCTION agent.schedule_maintenance() FROM PUBLIC;
COMMENT ON FUNCTION agent.schedule_maintenance() IS
  'Schedules agent.purge_audit() daily (03:17), agent.tick() every minute (not in the database the worker serves with pg_agents.worker_tick on: the worker ticks it) and agent.purge_runs(5000) every 10 minutes through pg_cron; re-running updates the jobs instead of duplicating them.';

\ir ../functions/agent.unschedule_maintenance.sql
