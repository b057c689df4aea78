-- ===========================================================================
-- Every function of the extension that pinned search_path = pg_catalog now
-- pins pg_catalog, pg_temp (pg_temp last, so that no temporary object ever
-- shadows a name the function resolves; functions redefined by the parts
-- above already have it).
-- ===========================================================================
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure
      FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                                  AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
      JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid AND x.extname = 'pg_agents'
     WHERE p.proconfig @> ARRAY['search_path=pg_catalog']
  LOOP
    EXECUTE pg_catalog.format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
  END LOOP;
END
$$;
