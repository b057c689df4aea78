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
