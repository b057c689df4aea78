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
