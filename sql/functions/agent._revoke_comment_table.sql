CREATE OR REPLACE FUNCTION agent._revoke_comment_table(p_tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  EXECUTE format('REVOKE INSERT ON %s FROM agents_tool', p_tbl);
END
$$;
COMMENT ON FUNCTION agent._revoke_comment_table(regclass) IS
  'Internal: revokes agents_tool''s INSERT on a comment table that is no longer registered.';
