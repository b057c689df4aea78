CREATE FUNCTION agent.set_id_range(node integer DEFAULT NULL)
RETURNS TABLE (sequence_name regclass, min_value bigint, max_value bigint, next_value bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_node integer := node;
  v_lo   bigint;
  v_hi   bigint;
  v_last bigint;
  v_ddl  text;
  s      record;
BEGIN
  IF v_node IS NULL THEN
    -- the node's group id on Citus (0: the coordinator), else 0
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL THEN
      EXECUTE 'SELECT groupid FROM pg_catalog.pg_dist_local_group' INTO v_node;
    END IF;
    v_node := coalesce(v_node, 0);
  END IF;
  -- on Citus, this node's own sequences only: Citus refuses (and would
  -- propagate) an ALTER SEQUENCE of a distributed table's sequence
  IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL THEN
    v_ddl := pg_catalog.current_setting('citus.enable_ddl_propagation', true);
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
  END IF;
  IF v_node < 0 OR v_node > 32767 THEN
    RAISE EXCEPTION 'invalid node number %', v_node
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A node number (a Citus group id) is between 0 and 32767: its ids are (node << 48) + 1 to ((node + 1) << 48) - 1.';
  END IF;
  v_lo := (v_node::bigint << 48) + 1;
  v_hi := (v_node::bigint << 48) + ((1::bigint << 48) - 1);
  FOR s IN
    SELECT d.objid::pg_catalog.regclass AS seq, q.last_value
      FROM pg_catalog.pg_depend d
      JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
      JOIN pg_catalog.pg_sequences q
        ON q.schemaname = 'agent' AND q.sequencename = (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = d.objid)
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.deptype IN ('a', 'i') AND t.relnamespace = 'agent'::pg_catalog.regnamespace
       AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = d.objid) = 'S'
     ORDER BY d.objid::pg_catalog.regclass::pg_catalog.text
  LOOP
    v_last := s.last_value;
    IF v_last > v_hi THEN
      RAISE EXCEPTION 'sequence % is past the id range of node %', s.seq, v_node
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = pg_catalog.format('Its last value %s is above %s, the end of the range of node %s.', v_last, v_hi, v_node),
              HINT = 'Give this node another number.';
    END IF;
    -- a sequence already inside the range keeps its place (its ids are taken)
    IF v_last IS NULL OR v_last < v_lo THEN
      EXECUTE pg_catalog.format('ALTER SEQUENCE %s MINVALUE %s MAXVALUE %s START WITH %s RESTART WITH %s',
                                s.seq, v_lo, v_hi, v_lo, v_lo);
      next_value := v_lo;
    ELSE
      EXECUTE pg_catalog.format('ALTER SEQUENCE %s MINVALUE %s MAXVALUE %s START WITH %s',
                                s.seq, v_lo, v_hi, v_lo);
      next_value := v_last + 1;
    END IF;
    sequence_name := s.seq; min_value := v_lo; max_value := v_hi;
    RETURN NEXT;
  END LOOP;
  IF v_ddl IS NOT NULL THEN
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', v_ddl, true);
  END IF;
END
$$;
COMMENT ON FUNCTION agent.set_id_range(integer) IS
  'Citus: puts every identity sequence of the extension on this node into the id range of node number node ((node << 48) + 1 to ((node + 1) << 48) - 1; by default the node''s Citus group id, 0 on the coordinator or without Citus), so that ids made on different nodes never collide; run on every node (docs/scaling.md). Superuser only.';
