-- 0.3.0 -> 0.4.0, audit (docs/audit.md, "Storage"): agent.audit_log becomes
-- a table partitioned by month of "at", with a default partition; the rows of
-- the 0.3.0 log are moved into it (same ids, same content) and the identity
-- goes on after the last id.  What depends on the row type (audit_events,
-- audit_summary) is made again.

DROP FUNCTION agent.audit_events(text, text, text, text, bigint, text, timestamptz, integer);
DROP VIEW agent.audit_summary;
ALTER TABLE agent.audit_log RENAME TO audit_log_0_3;
ALTER TABLE agent.audit_log_0_3 DROP CONSTRAINT audit_log_pkey, DROP CONSTRAINT audit_log_actor_kind_check,
  DROP CONSTRAINT audit_log_status_check;
DROP INDEX agent.audit_log_workspace_at_idx, agent.audit_log_target_idx, agent.audit_log_run_idx;
ALTER SEQUENCE agent.audit_log_id_seq RENAME TO audit_log_0_3_id_seq;
-- PostgreSQL 18 keeps NOT NULL constraints in pg_constraint, named
-- audit_log_<column>_not_null and unique in the schema: the old table's give
-- way, so that the new table's get the names a fresh install gives them.
DO $$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT co.conname FROM pg_catalog.pg_constraint co
            WHERE co.conrelid = 'agent.audit_log_0_3'::pg_catalog.regclass AND co.contype = 'n'
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE agent.audit_log_0_3 RENAME CONSTRAINT %I TO %I',
                              c.conname, c.conname || '_0_3');
  END LOOP;
END
$$;

CREATE TABLE agent.audit_log (
    id           bigint GENERATED ALWAYS AS IDENTITY,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_kind   text NOT NULL CHECK (actor_kind IN ('agent', 'human', 'system')),
    actor_id     text,
    on_behalf_of text,
    db_user      text NOT NULL DEFAULT session_user,
    run_id       bigint,
    surface      text,
    action       text NOT NULL,
    status       text NOT NULL DEFAULT 'success' CHECK (status IN ('success', 'error', 'denied')),
    error_code   text,
    target_type  text,
    target_id    text,
    owner_id     text,
    workspace_id text NOT NULL,
    inputs       jsonb,
    changes      jsonb,
    summary      text,
    txid         bigint NOT NULL DEFAULT txid_current()
) PARTITION BY RANGE (at);
-- One partition per month (UTC) and a default one (200_audit.sql); only the
-- indexes the documented reads need (docs/audit.md, "Storage").
CREATE INDEX audit_log_at_brin ON agent.audit_log USING brin (at);
CREATE INDEX audit_log_workspace_at_idx ON agent.audit_log (workspace_id, at);
CREATE INDEX audit_log_target_idx ON agent.audit_log (target_type, target_id);
CREATE INDEX audit_log_run_idx ON agent.audit_log (run_id) WHERE run_id IS NOT NULL;
COMMENT ON TABLE agent.audit_log IS 'Append-only, redacted, tenant-scoped record of who changed what, human or agent; partitioned by month of at.';
COMMENT ON COLUMN agent.audit_log.id IS 'Audit row id.';
COMMENT ON COLUMN agent.audit_log.at IS 'When it happened.';
COMMENT ON COLUMN agent.audit_log.actor_kind IS 'agent, human or system.';
COMMENT ON COLUMN agent.audit_log.actor_id IS 'Agent id or user id of the actor.';
COMMENT ON COLUMN agent.audit_log.on_behalf_of IS 'User an agent acted for.';
COMMENT ON COLUMN agent.audit_log.db_user IS 'PostgreSQL session user, always recorded.';
COMMENT ON COLUMN agent.audit_log.run_id IS 'Agent run, when the change came from one.';
COMMENT ON COLUMN agent.audit_log.surface IS 'sql, tool, http, frontend, cli, mcp or a2a.';
COMMENT ON COLUMN agent.audit_log.action IS 'insert, update, delete, or a named action such as agent.grant.';
COMMENT ON COLUMN agent.audit_log.status IS 'success, error or denied.';
COMMENT ON COLUMN agent.audit_log.error_code IS 'Reason code or SQLSTATE of a refusal or error.';
COMMENT ON COLUMN agent.audit_log.target_type IS 'Kind of the changed object.';
COMMENT ON COLUMN agent.audit_log.target_id IS 'Id (primary key) of the changed object.';
COMMENT ON COLUMN agent.audit_log.owner_id IS 'Owner of the changed object, when known.';
COMMENT ON COLUMN agent.audit_log.workspace_id IS 'Workspace (tenant) of the row, '''' for an action of no workspace; reads are scoped by it (the distribution column on Citus, never NULL).';
COMMENT ON COLUMN agent.audit_log.inputs IS 'Inputs of a named action (redacted).';
COMMENT ON COLUMN agent.audit_log.changes IS 'Row data: new row, changed columns {col: {old, new}}, or old row (redacted).';
COMMENT ON COLUMN agent.audit_log.summary IS 'One line in clear.';
COMMENT ON COLUMN agent.audit_log.txid IS 'Transaction id of the change.';

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

ALTER TABLE agent.audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_log_workspace_read ON agent.audit_log FOR SELECT TO agents_app, agents_reader
  USING (workspace_id = agent.current_workspace()
         AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON POLICY audit_log_workspace_read ON agent.audit_log IS
  'The application and analytics roles read only the rows of the session''s workspace (pg_agents.workspace), and only of a workspace they may read (agent.bind_reader).';

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
  -- a member of the extension like its parent (pg_dump leaves the log to
  -- physical backups; a partition dumped alone would not restore)
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend
                  WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objid = part
                    AND refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND deptype = 'e') THEN
    EXECUTE pg_catalog.format('ALTER EXTENSION pg_agents ADD TABLE %s', part);
  END IF;
END
$$;
COMMENT ON FUNCTION agent._audit_partition_setup(regclass, text) IS
  'Internal: the guard triggers (enabled ALWAYS), row-level security, privileges, comment and extension membership of a new partition of agent.audit_log.';

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

-- the months of the 0.3.0 rows, then the months ahead, then the rows
DO $$
DECLARE
  v_month timestamp;
BEGIN
  SELECT pg_catalog.date_trunc('month', pg_catalog.min(at) AT TIME ZONE 'UTC') INTO v_month FROM agent.audit_log_0_3;
  WHILE v_month IS NOT NULL AND v_month < pg_catalog.date_trunc('month', pg_catalog.now() AT TIME ZONE 'UTC') LOOP
    PERFORM agent._audit_new_partition('audit_log_' || pg_catalog.to_char(v_month, 'YYYY_MM'),
                                       v_month AT TIME ZONE 'UTC', (v_month + interval '1 month') AT TIME ZONE 'UTC');
    v_month := v_month + interval '1 month';
  END LOOP;
END
$$;
SELECT agent.maintain_audit();
INSERT INTO agent.audit_log (id, at, actor_kind, actor_id, on_behalf_of, db_user, run_id, surface, action, status,
                             error_code, target_type, target_id, owner_id, workspace_id, inputs, changes, summary, txid)
  OVERRIDING SYSTEM VALUE
SELECT id, at, actor_kind, actor_id, on_behalf_of, db_user, run_id, surface, action, status,
       error_code, target_type, target_id, owner_id, coalesce(workspace_id, ''), inputs, changes, summary, txid
  FROM agent.audit_log_0_3 ORDER BY id;
SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence('agent.audit_log', 'id'), pg_catalog.max(id))
  FROM agent.audit_log_0_3 HAVING pg_catalog.max(id) IS NOT NULL;
DROP TABLE agent.audit_log_0_3;

CREATE FUNCTION agent.audit_events(target_type text DEFAULT NULL, target_id text DEFAULT NULL,
                                   actor_kind text DEFAULT NULL, status text DEFAULT NULL,
                                   run_id bigint DEFAULT NULL, action text DEFAULT NULL,
                                   since timestamptz DEFAULT NULL, lim integer DEFAULT 100)
RETURNS SETOF agent.audit_log
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
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
     WHERE l.workspace_id = agent.current_workspace()
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

COMMENT ON FUNCTION agent.purge_audit() IS
  'Runs agent.maintain_audit(), then removes audit rows older than pg_agents.audit_retention_days (0 keeps them forever): whole monthly partitions past the cut-off are dropped, the few older rows left (in the partition the cut-off falls in, or the default one) deleted; returns how many rows went. The only deletion the log allows. Recorded as audit.purge.';
