CREATE FUNCTION agent._filters_exclude(p_a jsonb, p_b jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  WITH ca AS (
    SELECT c ->> 'property' AS prop, c ->> 'op' AS op, c -> 'value' AS val
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_a -> 'all') = 'array' THEN p_a -> 'all' ELSE '[]' END
                                || CASE WHEN jsonb_typeof(p_a -> 'any') = 'array' AND jsonb_array_length(p_a -> 'any') = 1
                                        THEN p_a -> 'any' ELSE '[]' END) c
     WHERE jsonb_typeof(c) = 'object'),
  cb AS (
    SELECT c ->> 'property' AS prop, c ->> 'op' AS op, c -> 'value' AS val
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_b -> 'all') = 'array' THEN p_b -> 'all' ELSE '[]' END
                                || CASE WHEN jsonb_typeof(p_b -> 'any') = 'array' AND jsonb_array_length(p_b -> 'any') = 1
                                        THEN p_b -> 'any' ELSE '[]' END) c
     WHERE jsonb_typeof(c) = 'object')
  SELECT format('property %s: %s', a.prop,
                CASE WHEN a.op IN ('is_empty', 'is_not_empty') AND b.op IN ('is_empty', 'is_not_empty')
                       THEN 'empty in one filter, not empty in the other'
                     WHEN 'is_empty' IN (a.op, b.op) THEN format('empty in one filter, %s in the other', coalesce(nullif(a.val, 'null'), b.val))
                     WHEN 'neq' IN (a.op, b.op) THEN format('equal to and different from %s', coalesce(a.val, b.val))
                     WHEN 'in' IN (a.op, b.op) THEN format('%s is not in %s', CASE WHEN a.op = 'in' THEN b.val ELSE a.val END,
                                                         CASE WHEN a.op = 'in' THEN a.val ELSE b.val END)
                     ELSE format('%s in one filter, %s in the other', a.val, b.val) END)
    FROM ca a JOIN cb b ON a.prop = b.prop
   WHERE (a.op IN ('eq', 'changed_to') AND b.op IN ('eq', 'changed_to')
          AND jsonb_typeof(a.val) NOT IN ('object', 'array') AND jsonb_typeof(b.val) NOT IN ('object', 'array')
          AND a.val <> b.val AND (a.val #>> '{}') IS DISTINCT FROM (b.val #>> '{}'))
      OR (a.op = 'eq' AND b.op = 'neq' OR a.op = 'neq' AND b.op = 'eq') AND a.val = b.val
      OR (a.op = 'eq' AND b.op = 'in' AND jsonb_typeof(a.val) NOT IN ('object', 'array') AND jsonb_typeof(b.val) = 'array'
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(b.val) e
                           WHERE e = a.val OR (e #>> '{}') = (a.val #>> '{}')))
      OR (b.op = 'eq' AND a.op = 'in' AND jsonb_typeof(b.val) NOT IN ('object', 'array') AND jsonb_typeof(a.val) = 'array'
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(a.val) e
                           WHERE e = b.val OR (e #>> '{}') = (b.val #>> '{}')))
      OR (a.op = 'is_empty' AND b.op = 'is_not_empty' OR a.op = 'is_not_empty' AND b.op = 'is_empty')
      OR (a.op = 'eq' AND b.op = 'is_empty' AND a.val NOT IN ('null', '""', '[]', '{}')
          OR b.op = 'eq' AND a.op = 'is_empty' AND b.val NOT IN ('null', '""', '[]', '{}'))
   ORDER BY 1
   LIMIT 1
$$;
COMMENT ON FUNCTION agent._filters_exclude(jsonb, jsonb) IS
  'Internal: why no event payload can satisfy both trigger filters (a property that must equal two different values, equal and differ from one value, equal a value outside a list, or be empty and not empty, in the "all" conditions or a one-condition "any"), or NULL when that cannot be shown.';
