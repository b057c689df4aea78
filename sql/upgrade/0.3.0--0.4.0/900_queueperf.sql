-- pg_agents 0.3.0 -> 0.4.0, teams progress (queueperf): the whole new definition of each object changed.

CREATE OR REPLACE FUNCTION agent._teams_steps_inserted() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ids      bigint[];
  v_labels   text[];
  v_previews text[];
BEGIN
  -- each run shows its latest new step (as the row trigger would leave it)
  SELECT array_agg(l.run_id ORDER BY l.run_id), array_agg(l.label ORDER BY l.run_id),
         array_agg(l.preview ORDER BY l.run_id)
    INTO v_ids, v_labels, v_previews
    FROM (SELECT DISTINCT ON (s.run_id) s.run_id, s.kind || coalesce(':' || s.name, '') AS label,
                 agent._teams_step_preview(s.kind, s.output) AS preview
            FROM new_steps s ORDER BY s.run_id, s.seq DESC) l;
  IF v_ids IS NULL THEN
    RETURN NULL;
  END IF;
  -- a run that shows it already (the worker's batch writes it with its own
  -- update) is left alone
  UPDATE agent.runs x SET current_step = u.label, preview = u.preview
    FROM unnest(v_ids, v_labels, v_previews) AS u(run_id, label, preview)
   WHERE x.id = u.run_id
     AND (x.current_step IS DISTINCT FROM u.label OR x.preview IS DISTINCT FROM u.preview);
  -- one notification per step, in insertion order
  PERFORM pg_notify('agent_run_steps',
                    json_build_object('run_id', n.run_id,
                                      'root_run_id', (SELECT coalesce(x.root_run_id, x.id) FROM agent.runs x WHERE x.id = n.run_id),
                                      'seq', n.seq, 'step', n.kind || coalesce(':' || n.name, ''),
                                      'status', n.status)::text)
     FROM new_steps n;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._teams_steps_inserted() IS
  'Statement trigger on agent.run_steps (INSERT): what agent._teams_step_changed does for each new step, set-based: current_step and preview of each run from its latest new step (one UPDATE by primary key), NOTIFY agent_run_steps per step.';
