-- 0.3.0 -> 0.4.0, issue 32: every table of the extension in a logical dump.
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

-- ---------------------------------------------------------------------------
-- A logical dump is a backup (issue 32).  pg_dump writes CREATE EXTENSION
-- for an extension and the rows of the tables the extension marked with
-- pg_extension_config_dump() only.  Every table of schema agent that is a
-- member of the extension is marked here, from the catalog, with the
-- sequences its columns own (identity and serial), so that a table added
-- later is marked too; the few left out are named below with the reason
-- (test/t/040_dump_roundtrip.t fails on a table neither marked nor named).
-- Partitions of agent.audit_log made later by agent.maintain_audit() are
-- marked when made (agent._audit_partition_setup).  How to restore:
-- docs/operations.md.
-- ---------------------------------------------------------------------------
DO $dump$
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT c.oid::pg_catalog.regclass AS rel
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_depend d
        ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
       AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
      JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_agents'
     WHERE c.relnamespace = 'agent'::pg_catalog.regnamespace
       AND c.relkind = 'r'
       AND c.relname NOT IN (
         -- rows the extension installs, that no user writes: they come back
         -- with CREATE EXTENSION (a dumped copy would collide with them)
         'templates',        -- the gallery (SELECT only)
         'access_config',    -- one row; agent.set_acl_function() again after a restore
         'worker_control',   -- one row: the pause state (a restored worker runs)
         -- bookkeeping that is only true in the database that made it
         '_history_holds',   -- rows live inside one function call
         'run_queue_marks',  -- claim scan marks, lowered again by the queue itself
         'run_queue_returns')
     ORDER BY c.oid
  LOOP
    PERFORM pg_catalog.pg_extension_config_dump(r.rel, '');
  END LOOP;
  FOR r IN
    SELECT s.oid::pg_catalog.regclass AS seq
      FROM pg_catalog.pg_class s
      JOIN pg_catalog.pg_depend d
        ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = s.oid
       AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype IN ('a', 'i')
      JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
      JOIN pg_catalog.pg_extension e ON e.extname = 'pg_agents'
     WHERE s.relkind = 'S'
       -- of a marked table, or of agent.audit_log (a partitioned table has
       -- no rows of its own: its partitions are marked)
       AND (t.oid = ANY (e.extconfig) OR t.oid = 'agent.audit_log'::pg_catalog.regclass)
     ORDER BY s.oid
  LOOP
    PERFORM pg_catalog.pg_extension_config_dump(r.seq, '');
  END LOOP;
END
$dump$;
