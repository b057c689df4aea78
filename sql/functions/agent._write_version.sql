CREATE OR REPLACE FUNCTION agent._write_version(p_agent_id bigint, p_by_user text, p_note text,
                                     p_prev jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_snap    jsonb := agent._snapshot(p_agent_id);
  v_changed text;
  v_note    text;
  v_id      bigint;
  v_ws      text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  v_next    integer;
BEGIN
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;

  IF p_prev IS NULL THEN
    v_note := p_note;
  ELSE
    v_changed := agent._changed_sections(p_prev, v_snap);
    v_note := CASE WHEN v_changed = '' THEN 'no changes' ELSE 'changed: ' || v_changed END;
    IF p_note IS NOT NULL THEN
      v_note := p_note || ' (' || v_note || ')';
    END IF;
  END IF;
  -- computed first and inserted as values (one routed statement each; no
  -- INSERT ... SELECT for Citus to plan)
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = p_agent_id) THEN
    RETURN NULL;
  END IF;
  SELECT coalesce(max(v.version), 0) + 1 INTO v_next
    FROM agent.versions v WHERE v.workspace_id = v_ws AND v.agent_id = p_agent_id;
  INSERT INTO agent.versions (workspace_id, agent_id, version, snapshot, created_by, note)
  VALUES (v_ws, p_agent_id, v_next, v_snap, p_by_user, v_note)
  RETURNING id INTO v_id;
  RETURN v_id;
END
$$;
COMMENT ON FUNCTION agent._write_version(bigint, text, text, jsonb) IS
  'Internal: writes the agent''s next version (snapshot of now); with the previous snapshot, the note lists the changed sections.';
