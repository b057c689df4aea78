CREATE OR REPLACE FUNCTION agent._fill_workspace() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NEW.workspace_id IS NULL THEN
    IF TG_ARGV[0] = 'agent' THEN
      SELECT a.workspace_id INTO NEW.workspace_id FROM agent.agents a WHERE a.id = NEW.agent_id;
    ELSIF TG_ARGV[0] = 'run' THEN
      SELECT r.workspace_id INTO NEW.workspace_id FROM agent.runs r WHERE r.id = NEW.run_id;
    ELSIF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
      NEW.workspace_id := nullif(current_setting('pg_agents.workspace', true), '');
    END IF;
  END IF;
  RETURN NEW;
END
$$;
