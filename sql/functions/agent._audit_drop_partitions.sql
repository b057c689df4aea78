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
