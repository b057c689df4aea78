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

\ir ../../tables/agent.audit_log.sql

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

\ir ../../tables/agent.audit_log_default.sql
SELECT agent._audit_partition_setup('agent.audit_log_default',
  'Rows of agent.audit_log that no monthly partition takes; agent.maintain_audit() moves them into the partition it makes for their month.');

\ir ../../functions/agent._audit_new_partition.sql

\ir ../../functions/agent._audit_default_move.sql

\ir ../../functions/agent.maintain_audit.sql

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

\ir ../../functions/agent.audit_events.sql

\ir ../../views/agent.audit_summary.sql

\ir ../../functions/agent._audit_drop_partitions.sql

COMMENT ON FUNCTION agent.purge_audit() IS
  'Runs agent.maintain_audit(), then removes audit rows older than pg_agents.audit_retention_days (0 keeps them forever): whole monthly partitions past the cut-off are dropped, the few older rows left (in the partition the cut-off falls in, or the default one) deleted; returns how many rows went. The only deletion the log allows. Recorded as audit.purge.';
