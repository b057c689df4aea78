CREATE FUNCTION agent._queue_mark_lower() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- the marks of the run's workspace; and (not on a Citus shard, where
  -- every statement names the row's workspace; the claim of several
  -- workspaces keeps none there) those of the queue of all workspaces,
  -- workspace ''
  IF EXISTS (SELECT 1 FROM agent.run_queue_marks m
              WHERE m.workspace_id = NEW.workspace_id AND m.priority = NEW.priority
                AND (m.low_id > NEW.id OR m.next_id > NEW.id))
     OR (TG_TABLE_NAME = 'runs'
         AND EXISTS (SELECT 1 FROM agent.run_queue_marks m
                      WHERE m.workspace_id = '' AND m.priority = NEW.priority
                        AND (m.low_id > NEW.id OR m.next_id > NEW.id))) THEN
    INSERT INTO agent.run_queue_returns (workspace_id, priority, run_id) VALUES (NEW.workspace_id, NEW.priority, NEW.id);
  END IF;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION agent._queue_mark_lower() FROM PUBLIC;
COMMENT ON FUNCTION agent._queue_mark_lower() IS
  'Internal (trigger runs_queue_mark on agent.runs): a run that becomes queued again (or changes queue) below the mark or candidate of its workspace and priority, or of the queue of all workspaces (workspace ''''), is noted in agent.run_queue_returns, where the claims find it.';
