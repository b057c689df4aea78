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
         'run_queue_returns',
         'locks')            -- rows locked to serialise (claim and tick made by the script, the others on first use)
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
