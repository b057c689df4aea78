CREATE OR REPLACE FUNCTION agent._worker_finish_replies(p_replies jsonb, p_lease_secs integer)
RETURNS TABLE(run_id bigint, outcome text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_rows agent.runs[];
  v_out  text[];
  v_ids  bigint[];
  v_all  bigint[];
  v_ws   text;
  v_wids bigint[];
  v_wids_all bigint[] := '{}';
  -- now() and the lease's end as values (Citus takes no volatile or stable
  -- call in the UPDATE's CASE)
  v_now  timestamptz := now();
  v_until timestamptz := v_now + make_interval(secs => p_lease_secs);
BEGIN
  IF EXISTS (SELECT 1 FROM jsonb_to_recordset(p_replies) AS x(tokens_in int, tokens_out int, tokens_cached int)
              WHERE x.tokens_in IS NULL OR x.tokens_out IS NULL OR x.tokens_in < 0 OR x.tokens_out < 0
                 OR x.tokens_cached < 0) THEN
    RAISE EXCEPTION 'token counts must be non-negative' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- One statement per workspace.  The update finds the runs among the running ones
  -- (status = 'running': the small partial index runs_lease_idx, whatever
  -- the size of agent.runs), locks them (a root run's row is its tree
  -- lock), adds the usage (agent.add_usage of a root run: no
  -- ancestor) and ends them as agent._finish_run does, unless messages wait
  -- (then the lease is renewed); the steps are written as src/tools.c
  -- ToolsRecordStep does; the state of ended runs is forgotten.
  v_all := ARRAY(SELECT (e ->> 'run_id')::bigint FROM jsonb_array_elements(p_replies) e);
  -- workspace by workspace (Citus routes each statement by it): those of the
  -- runs still running (runs_lease_idx); a batch is mostly of one
  FOR v_ws, v_wids IN SELECT r.workspace_id, array_agg(r.id) FROM agent.runs r
                       WHERE r.id = ANY (v_all) AND r.status = 'running' GROUP BY r.workspace_id ORDER BY 1
  LOOP
    v_wids_all := v_wids_all || v_wids;
    WITH x AS MATERIALIZED (
      -- (the answer built here: Citus takes no stable call in the UPDATE's CASE)
      SELECT x.*, agent.redact(x.input) AS step_input, agent.redact(x.output) AS step_output,
             jsonb_build_object('text', coalesce(x.text, '')) AS answer,
             EXISTS (SELECT 1 FROM agent.run_messages m
                      WHERE m.workspace_id = v_ws AND m.run_id = x.run_id AND m.delivered_at IS NULL) AS waits
        FROM jsonb_to_recordset(p_replies)
          AS x(run_id bigint, model text, input jsonb, output jsonb, tokens integer,
               tokens_in integer, tokens_out integer, tokens_cached integer, started_us bigint, text text)
       WHERE x.run_id = ANY (v_wids)),
    u AS (
      UPDATE agent.runs r
         SET tokens_total = r.tokens_total + x.tokens_in + x.tokens_out,
             tokens_in = r.tokens_in + x.tokens_in, tokens_out = r.tokens_out + x.tokens_out,
             tokens_cached = r.tokens_cached + coalesce(x.tokens_cached, 0),
             model = coalesce(x.model, r.model),
             -- the live progress of the step (agent._teams_steps_inserted then finds it done)
             current_step = 'llm' || coalesce(':' || x.model, ''),
             preview = agent._teams_step_preview('llm', x.step_output),
             status = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN 'budget_exceeded'
                           WHEN x.waits THEN r.status ELSE 'succeeded' END,
             output = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN r.output
                           WHEN x.waits THEN r.output ELSE x.answer END,
             error = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget)
                            THEN 'token budget of ' || coalesce(r.token_budget, a.default_token_budget)::text
                                 || ' exhausted (' || (r.tokens_total + x.tokens_in + x.tokens_out)::text || ' used)'
                          WHEN x.waits THEN r.error END,
             finished_at = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN v_now
                                WHEN x.waits THEN r.finished_at ELSE v_now END,
             lease_until = CASE WHEN r.tokens_total + x.tokens_in + x.tokens_out >= coalesce(r.token_budget, a.default_token_budget) THEN NULL
                                WHEN x.waits THEN v_until END
        FROM x, agent.agents a
       WHERE r.workspace_id = v_ws AND r.id = ANY (v_wids) AND r.id = x.run_id
         AND a.workspace_id = v_ws AND a.id = r.agent_id
         AND r.status = 'running' AND r.parent_run_id IS NULL AND r.root_run_id = r.id
         AND NOT EXISTS (SELECT 1 FROM agent.runs c
                          WHERE c.workspace_id = v_ws AND c.parent_run_id = r.id AND agent._run_is_active(c.status))
      RETURNING r AS run, r.status <> 'running' AS ended),
    s AS (
      INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, tokens,
                                   started_at, finished_at)
      SELECT (u.run).workspace_id, x.run_id,
             coalesce((SELECT max(st.seq) FROM agent.run_steps st WHERE st.workspace_id = v_ws AND st.run_id = x.run_id), 0) + 1,
             'llm', x.model, x.step_input, x.step_output, 'ok', x.tokens,
             timestamptz 'epoch' + x.started_us * interval '1 microsecond', clock_timestamp()
        FROM u JOIN x ON x.run_id = (u.run).id
       ORDER BY x.run_id),
    d AS (
      DELETE FROM agent.run_state st USING u WHERE st.workspace_id = v_ws AND st.run_id = (u.run).id AND u.ended)
    SELECT v_rows || array_agg(u.run ORDER BY (u.run).id) FILTER (WHERE u.ended),
           v_out || array_agg(CASE WHEN u.ended THEN 'finished' ELSE 'continue' END ORDER BY (u.run).id),
           v_ids || array_agg((u.run).id ORDER BY (u.run).id)
      INTO v_rows, v_out, v_ids
      FROM u;
  END LOOP;

  IF v_rows IS NOT NULL THEN
    PERFORM agent._finish_runs_effects(v_rows);
  END IF;

  -- the others: no longer running (gone), or left to the one-reply path (single)
  RETURN QUERY
  SELECT x.run_id,
         coalesce(v_out[array_position(v_ids, x.run_id)],
                  CASE WHEN x.run_id = ANY (v_wids_all) THEN 'single' ELSE 'gone' END)
    FROM jsonb_to_recordset(p_replies) AS x(run_id bigint);
END
$$;
