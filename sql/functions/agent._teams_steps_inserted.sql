CREATE OR REPLACE FUNCTION agent._teams_steps_inserted() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_ids      bigint[];
  v_wss      text[];
  v_labels   text[];
  v_previews text[];
  v_ws       text;
  v_n        bigint;
  v_id       bigint;
  v_label    text;
  v_preview  text;
BEGIN
  -- each run shows its latest new step (as the row trigger would leave it)
  SELECT array_agg(l.run_id ORDER BY l.run_id), array_agg(l.workspace_id ORDER BY l.run_id),
         array_agg(l.label ORDER BY l.run_id), array_agg(l.preview ORDER BY l.run_id)
    INTO v_ids, v_wss, v_labels, v_previews
    FROM (SELECT DISTINCT ON (s.run_id) s.run_id, s.workspace_id, s.kind || coalesce(':' || s.name, '') AS label,
                 agent._teams_step_preview(s.kind, s.output) AS preview
            FROM new_steps s ORDER BY s.run_id, s.seq DESC) l;
  IF v_ids IS NULL THEN
    RETURN NULL;
  END IF;
  -- a run that shows it already (the worker's batch writes it with its own
  -- update) is left alone
  IF TG_TABLE_NAME = 'run_steps' AND cardinality(v_ids) = 1 THEN
    -- one run (each step the worker writes outside its batch of final
    -- answers): a primary-key update on scalars, whose generic plan is kept;
    -- the statement on the arrays below is planned anew at every call (its
    -- custom plan always looks cheaper than a generic one, which may also
    -- be a scan of agent.runs)
    v_id := v_ids[1]; v_ws := v_wss[1]; v_label := v_labels[1]; v_preview := v_previews[1];
    UPDATE agent.runs x SET current_step = v_label, preview = v_preview
     WHERE x.id = v_id AND x.workspace_id = v_ws
       AND (x.current_step IS DISTINCT FROM v_label OR x.preview IS DISTINCT FROM v_preview);
  ELSIF TG_TABLE_NAME = 'run_steps' THEN
    -- on the table itself: one statement, probing the primary key from each
    -- run of the arrays (the plan of the single-node bulk load: a statement
    -- that also filters on the workspace may be planned as a scan of the
    -- workspace's runs around a rescanned function scan, quadratic)
    UPDATE agent.runs x SET current_step = u.label, preview = u.preview
      FROM unnest(v_ids, v_wss, v_labels, v_previews) AS u(run_id, ws, label, preview)
     WHERE x.id = u.run_id AND x.workspace_id = u.ws
       AND (x.current_step IS DISTINCT FROM u.label OR x.preview IS DISTINCT FROM u.preview);
  ELSE
    -- on a Citus shard: workspace by workspace, each statement naming it
    -- (only co-located statements may run there)
    FOR v_ws IN SELECT DISTINCT w FROM unnest(v_wss) w LOOP
      WITH u AS (
        UPDATE agent.runs x SET current_step = u.label, preview = u.preview
          FROM unnest(v_ids, v_wss, v_labels, v_previews) AS u(run_id, ws, label, preview)
         WHERE x.workspace_id = v_ws AND u.ws = v_ws AND x.id = u.run_id
           AND (x.current_step IS DISTINCT FROM u.label OR x.preview IS DISTINCT FROM u.preview)
        RETURNING 1)
      SELECT count(*) INTO v_n FROM u;
    END LOOP;
  END IF;
  -- (not from a Citus shard, whose node is not where the listeners are and
  -- whose NOTIFY makes the two-phase commit fail: docs/scaling.md)
  IF TG_TABLE_NAME = 'run_steps' THEN
    PERFORM pg_notify('agent_run_steps',
                      json_build_object('run_id', n.run_id,
                                        'root_run_id', (SELECT coalesce(x.root_run_id, x.id) FROM agent.runs x
                                                         WHERE x.workspace_id = n.workspace_id AND x.id = n.run_id),
                                        'seq', n.seq, 'status', n.status)::text)
       FROM new_steps n;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._teams_steps_inserted() IS
  'Statement trigger on agent.run_steps (INSERT): what agent._teams_step_changed does for each new step, set-based: current_step and preview of each run from its latest new step (one UPDATE by primary key, on scalars when the steps are of one run), NOTIFY agent_run_steps per step.';
