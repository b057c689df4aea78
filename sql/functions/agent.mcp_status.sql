CREATE OR REPLACE FUNCTION agent.mcp_status(workspace_id text DEFAULT agent.current_workspace(),
                                 owner_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  -- the session's workspace (42501 for a non-superuser session bound to none)
  v_ws  text := agent._session_workspace();
  v_srv jsonb;
BEGIN
  -- (plpgsql, not sql: Citus plans no SQL function with a distributed table)
  IF v_ws IS NOT NULL AND v_ws IS DISTINCT FROM mcp_status.workspace_id THEN
    v_ws := NULL;  -- another workspace than the session's: nothing
  ELSE
    v_ws := mcp_status.workspace_id;
  END IF;
  -- the servers first, then their tools (each statement names the workspace)
  SELECT coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'name', m.name, 'enabled', m.enabled,
                                               'connected', m.enabled AND m.last_error IS NULL AND m.tools_refreshed_at IS NOT NULL,
                                               'last_error', m.last_error)), '[]')
    INTO v_srv
    FROM agent.mcp_servers m
   WHERE m.workspace_id = v_ws
     AND (m.scope = 'workspace' OR m.owner_id = mcp_status.owner_id);
  RETURN (
    WITH s AS (
      SELECT (e ->> 'id')::bigint AS id, e ->> 'name' AS name, (e ->> 'enabled')::boolean AS enabled,
             (e ->> 'connected')::boolean AS connected, e ->> 'last_error' AS last_error
        FROM jsonb_array_elements(v_srv) e
    ), t AS (
      SELECT s.name AS source, t.exposed_name, t.description
        FROM agent.mcp_tools t JOIN s ON s.id = t.server_id
       WHERE t.workspace_id = v_ws AND t.server_id = ANY (ARRAY(SELECT s.id FROM s WHERE s.connected))
    )
    SELECT jsonb_build_object(
      'configuredServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.enabled),
      'connectedServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.connected),
      'totalTools', (SELECT count(*) FROM t),
      'tools', (SELECT coalesce(jsonb_agg(jsonb_build_object('source', t.source, 'name', t.exposed_name,
                                                             'description', t.description)
                                          ORDER BY t.exposed_name), '[]') FROM t),
      'errors', (SELECT coalesce(jsonb_object_agg(s.name, s.last_error), '{}')
                   FROM s WHERE s.enabled AND s.last_error IS NOT NULL)));
END
$$;
