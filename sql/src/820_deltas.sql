-- pg_agents: the streamed text of a run (docs/worker.md, "Streaming").
--   agent.run_stream_text  the text of each published delta (the worker writes it)
--   agent.run_deltas       reads it, with the visibility of agent.run_detail
-- NOTIFY agent_run_deltas carries the ids of a delta only (run, step,
-- attempt, offset): a channel has no privileges, so the text is read here.

CREATE TABLE agent.run_stream_text (
    workspace_id text NOT NULL,
    run_id bigint NOT NULL,
    step integer NOT NULL,
    attempt integer NOT NULL,
    "offset" bigint NOT NULL,
    text text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT run_stream_text_pkey PRIMARY KEY (workspace_id, run_id, step, attempt, "offset"),
    FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE
) WITH (toast_tuple_target = 8160);  -- a delta (<= 3,000 bytes) is stored as it is: no pglz per row
COMMENT ON TABLE agent.run_stream_text IS
  'The text of each delta of a streamed reply, as published on NOTIFY agent_run_deltas (whose payload holds its ids only); read through agent.run_deltas; removed with its run.';

CREATE FUNCTION agent.run_deltas(run_id bigint, user_id text, after_step integer DEFAULT 0,
                                 after_offset bigint DEFAULT -1)
RETURNS TABLE(step integer, attempt integer, "offset" bigint, text text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r       agent.runs%ROWTYPE;
  v_scope text;
  v_run   bigint := run_id;
  v_user  text := user_id;
  v_ws    text;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_user(v_user);
  -- a run of another workspace is an unknown run (a session bound to none:
  -- the run's own), as in agent.run_detail
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = v_run;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_run;
  IF r.id IS NULL THEN
    RETURN;
  END IF;
  v_scope := agent.activity_scope(v_user, r.agent_id);
  IF r.origin = 'draft' AND r.requested_by = v_user THEN
    v_scope := 'own_manual';
  END IF;
  IF v_scope IS NULL OR (v_scope <> 'all' AND NOT (r.regime = 'manual' AND r.requested_by = v_user)) THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT d.step, d.attempt, d."offset", d.text
    FROM agent.run_stream_text d
   WHERE d.workspace_id = r.workspace_id AND d.run_id = r.id
     AND (d.step, d."offset") > (coalesce(after_step, 0), coalesce(after_offset, -1))
   ORDER BY d.step, d.attempt, d."offset";
END
$$;
COMMENT ON FUNCTION agent.run_deltas(bigint, text, integer, bigint) IS
  'The streamed text of one run, delta by delta (step, attempt, offset, text) after (after_step, after_offset), as NOTIFY agent_run_deltas announced it. Same visibility as agent.run_detail: a run the user may not see, or a run of another workspace than the session''s, gives nothing, exactly like an unknown run.';
