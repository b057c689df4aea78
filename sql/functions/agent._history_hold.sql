CREATE OR REPLACE FUNCTION agent._history_hold(p_agent_id bigint, p_hold boolean) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ws text := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
BEGIN
  IF p_hold THEN
    IF v_ws IS NULL THEN
      SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
    END IF;
    INSERT INTO agent._history_holds (xact, agent_id, workspace_id)
    SELECT txid_current(), a.id, a.workspace_id FROM agent.agents a
     WHERE a.workspace_id = v_ws AND a.id = p_agent_id
    ON CONFLICT DO NOTHING;
  ELSE
    DELETE FROM agent._history_holds h WHERE h.xact = txid_current() AND h.agent_id = p_agent_id;
  END IF;
END
$$;
COMMENT ON FUNCTION agent._history_hold(bigint, boolean) IS
  'Internal: holds (true) or releases (false) the agent''s trigger writes of this transaction from the history triggers; the caller versions and audits them itself.';
