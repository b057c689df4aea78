CREATE OR REPLACE FUNCTION agent._trigger_direct_write(p_agent_id bigint, p_op text, p_trigger_id bigint,
                                            p_old jsonb, p_new jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a agent.agents%ROWTYPE;
BEGIN
  IF EXISTS (SELECT 1 FROM agent._history_holds h WHERE h.xact = txid_current() AND h.agent_id = p_agent_id) THEN
    RETURN;   -- the extension's own function versions this write
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.id = p_agent_id;
  IF NOT FOUND THEN
    RETURN;   -- the agent itself is being deleted (ON DELETE CASCADE)
  END IF;
  IF NOT agent._workspace_ok(a.workspace_id) THEN
    RAISE EXCEPTION 'agent % does not exist', a.id USING ERRCODE = 'undefined_object';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.versions v WHERE v.workspace_id = a.workspace_id AND v.agent_id = a.id) THEN
    RETURN;   -- being created: its first version records the trigger
  END IF;
  PERFORM agent._trigger_history(a, p_op, p_trigger_id, p_old, p_new, NULL, true);
END
$$;
COMMENT ON FUNCTION agent._trigger_direct_write(bigint, text, bigint, jsonb, jsonb) IS
  'Internal (agent._triggers_history): versions and audits one direct trigger write, unless the agent is held, being deleted or being created; an agent outside the session''s workspace is 42704.';
