CREATE FUNCTION agent._mcp_like_patterns(p_patterns jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce(array_agg(replace(replace(replace(replace(pat, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%')), '{}')
    FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(p_patterns) = 'array' THEN p_patterns ELSE '[]' END) AS pat
$$;
COMMENT ON FUNCTION agent._mcp_like_patterns(jsonb) IS
  'Internal: a JSON array of names or * patterns as LIKE patterns (agent._mcp_match''s rules), for name LIKE ANY (...).';
