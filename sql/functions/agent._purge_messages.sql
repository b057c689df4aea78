CREATE FUNCTION agent._purge_messages(cutoff timestamptz, batch_size integer) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n bigint;
BEGIN
  IF cutoff IS NULL OR batch_size IS NULL OR batch_size < 1 THEN
    RETURN 0;
  END IF;
  DELETE FROM agent.messages m
   WHERE m.id IN (SELECT x.id FROM agent.messages x WHERE x.created_at < cutoff
                   ORDER BY x.id LIMIT batch_size);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;
COMMENT ON FUNCTION agent._purge_messages(timestamptz, integer) IS
  'Internal (agent.purge_runs): deletes up to batch_size messages created before cutoff, oldest first; conversations are kept. Returns how many. Superuser only.';
