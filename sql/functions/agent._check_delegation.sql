CREATE OR REPLACE FUNCTION agent._check_delegation(p_agent_id bigint, p_delegation jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_bad text;
  v_ws  text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT e #>> '{}' INTO v_bad
    FROM agent.agents a, jsonb_array_elements(p_delegation) e
   WHERE a.workspace_id = v_ws AND a.id = p_agent_id
     AND NOT EXISTS (SELECT 1 FROM agent.agents d
                      WHERE d.id = CASE WHEN (e #>> '{}') ~ '^[0-9]{1,18}$' THEN (e #>> '{}')::bigint END
                        AND d.workspace_id = a.workspace_id
                        AND (d.deleted_at IS NULL
                             OR EXISTS (SELECT 1 FROM jsonb_array_elements(a.delegation) o
                                         WHERE (o #>> '{}') = (e #>> '{}'))))
   LIMIT 1;
  IF v_bad IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', v_bad
      USING ERRCODE = 'undefined_object',
            DETAIL = 'A delegation list names only agents of the delegating agent''s own workspace.';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._check_delegation(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._check_delegation(bigint, jsonb) IS
  'Internal: refuses (42704, as an unknown agent) a delegation list naming anything but agents of the delegating agent''s workspace (not deleted, unless already listed).';
