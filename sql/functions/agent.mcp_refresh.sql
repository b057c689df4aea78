CREATE OR REPLACE FUNCTION agent.mcp_refresh(server_id bigint)
RETURNS TABLE(id bigint, name text, connected boolean, tool_count integer, error text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
  t jsonb;
  v_names text[] := '{}';
  v_name text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m
   WHERE m.id = mcp_refresh.server_id AND agent._workspace_ok(m.workspace_id) FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_refresh.server_id USING ERRCODE = 'undefined_object';
  END IF;
  r := agent._mcp_list(s.id, s.url, s.headers);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_servers m SET last_error = r->>'error' WHERE m.id = s.id;
    RETURN QUERY SELECT s.id, s.name, false, NULL::integer, r->>'error';
    RETURN;
  END IF;
  FOR t IN SELECT * FROM jsonb_array_elements(r->'tools') LOOP
    v_name := t->>'name';
    IF v_name IS NULL OR v_name = ANY (v_names) THEN
      CONTINUE;
    END IF;
    v_names := v_names || v_name;
    INSERT INTO agent.mcp_tools AS mt (workspace_id, server_id, name, exposed_name, description,
                                       input_schema, annotations, refreshed_at)
    VALUES (s.workspace_id, s.id, v_name, agent._mcp_exposed_name(s.id, v_name), t->>'description',
            CASE WHEN jsonb_typeof(t->'inputSchema') = 'object' THEN t->'inputSchema'
                 ELSE '{"type": "object"}' END,
            t->'annotations', now())
    ON CONFLICT ON CONSTRAINT mcp_tools_pkey DO UPDATE
       SET description = EXCLUDED.description, input_schema = EXCLUDED.input_schema,
           annotations = EXCLUDED.annotations, refreshed_at = EXCLUDED.refreshed_at;
  END LOOP;
  DELETE FROM agent.mcp_tools mt WHERE mt.server_id = s.id AND NOT (mt.name = ANY (v_names));
  UPDATE agent.mcp_servers m
     SET last_error = NULL, tools_refreshed_at = now(),
         protocol_version = r->>'protocolVersion', server_info = r->'serverInfo',
         tools_ttl_ms = CASE WHEN jsonb_typeof(r->'ttlMs') = 'number' THEN (r->>'ttlMs')::integer END,
         tools_stale = false
   WHERE m.id = s.id;
  RETURN QUERY SELECT s.id, s.name, true, cardinality(v_names), NULL::text;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh(bigint) IS
  'Connects to one MCP server from this backend (initialize, tools/list to the last page) and replaces its tools in agent.mcp_tools; a failure is recorded in last_error and returned, never raised.';
