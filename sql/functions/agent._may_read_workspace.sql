CREATE OR REPLACE FUNCTION agent._may_read_workspace(p_workspace_id text) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_workspace_id IS NULL THEN
    RETURN false;
  END IF;
  -- the application first, without reading a table (under Citus a policy
  -- runs inside the shard query, where no Citus table may be read)
  IF pg_catalog.pg_has_role('agents_app', 'USAGE') THEN
    RETURN true;
  END IF;
  RETURN EXISTS (SELECT 1 FROM agent.reader_workspaces b
                  WHERE b.workspace_id = p_workspace_id
                    AND coalesce(pg_catalog.pg_has_role(b.role_id, 'USAGE'), false));
END
$$;
COMMENT ON FUNCTION agent._may_read_workspace(text) IS
  'Internal to the read policies: whether the current role may read the rows of a workspace (the application may read any; an analytics role those bound to it; superusers all).';
