CREATE OR REPLACE FUNCTION agent._teams_step_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_label   text := NEW.kind || coalesce(':' || NEW.name, '');
  v_root    bigint;
BEGIN
  UPDATE agent.runs x SET current_step = v_label, preview = agent._teams_step_preview(NEW.kind, NEW.output)
   WHERE x.workspace_id = NEW.workspace_id AND x.id = NEW.run_id RETURNING coalesce(x.root_run_id, x.id) INTO v_root;
  -- (not from a Citus shard, whose node is not where the listeners are and
  -- whose NOTIFY makes the two-phase commit fail: docs/scaling.md)
  IF TG_TABLE_NAME = 'run_steps' THEN
    PERFORM pg_notify('agent_run_steps',
                      json_build_object('run_id', NEW.run_id, 'root_run_id', v_root, 'seq', NEW.seq,
                                        'status', NEW.status)::text);
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._teams_step_changed() IS
  'Trigger on agent.run_steps (UPDATE of status, output; new steps: agent._teams_steps_inserted): writes runs.current_step and runs.preview and sends NOTIFY agent_run_steps {run_id, root_run_id, seq, status} (ids and a code only: the step itself is read through agent.run_detail).';
