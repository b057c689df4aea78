CREATE OR REPLACE FUNCTION agent._audit_partition_setup(part regclass, note text) RETURNS void
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
