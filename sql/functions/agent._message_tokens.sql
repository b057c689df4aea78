CREATE FUNCTION agent._message_tokens(p_content text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT ((coalesce(pg_catalog.length(p_content), 0) + 3) / 4)::integer $$;
COMMENT ON FUNCTION agent._message_tokens(text) IS
  'Internal: the estimated size of a message in tokens (characters / 4, rounded up).';
