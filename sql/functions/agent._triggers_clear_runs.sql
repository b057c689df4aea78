CREATE FUNCTION agent._triggers_clear_runs() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- (the runs of an agent being deleted go with it: left alone, so that
  -- their update does not check the foreign key to the deleted agent)
  UPDATE agent.runs r SET trigger_id = NULL
   WHERE r.workspace_id = OLD.workspace_id AND r.trigger_id = OLD.id
     AND EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id);
  RETURN OLD;
END
$$;
COMMENT ON FUNCTION agent._triggers_clear_runs() IS
  'Internal (trigger triggers_clear_runs): clears agent.runs.trigger_id of the runs of a trigger being deleted, in its workspace.';
