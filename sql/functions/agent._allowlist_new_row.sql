CREATE OR REPLACE FUNCTION agent._allowlist_new_row(p_parent_type text, p_parent_id text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT p_parent_id IS NOT NULL
         AND coalesce(agent.can_access(agent.current_agent_id(), p_parent_type, p_parent_id, 'edit'), false)
$$;
COMMENT ON FUNCTION agent._allowlist_new_row(text, text) IS
  'Internal to the insert policy of the allowlist on a table of rows of collections: may the session''s agent add a row to this collection (edit on it, in the autonomous regime)?';
