CREATE OR REPLACE FUNCTION agent._grant_owned_sequences(p_tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_seq regclass;
BEGIN
  -- the sequences of the table's identity and serial columns (their defaults)
  FOR v_seq IN
    SELECT d.objid::regclass FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
     WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
       AND d.refobjid = p_tbl AND d.deptype IN ('a', 'i')
     ORDER BY 1
  LOOP
    EXECUTE format('GRANT USAGE ON SEQUENCE %s TO agents_tool', v_seq);
  END LOOP;
END
$$;
COMMENT ON FUNCTION agent._grant_owned_sequences(regclass) IS
  'Internal: grants agents_tool USAGE on the sequences the table''s identity and serial columns own, so that the row tools can insert rows whose ids they generate.';
