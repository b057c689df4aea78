CREATE OR REPLACE FUNCTION agent.draft(run_id bigint, user_id text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r          agent.runs%ROWTYPE;
  v_run      bigint := run_id;
  v_user     text;
  j          jsonb;
  e          jsonb;
  v_found    jsonb;
  v_access   jsonb := '[]';
  v_triggers jsonb := '[]';
  v_dropped  jsonb := '[]';
  v_down     jsonb := '[]';
  v_seen     text[] := '{}';
  v_rt       text;
  v_rid      text;
  v_acc      text;
  v_problem  text;
  v_name     text;
  i          integer;
  v_ws       text;
BEGIN
  IF v_run IS NULL THEN
    RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the session's workspace (a session bound to none: the run's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.runs x WHERE x.id = v_run;
  END IF;
  SELECT * INTO r FROM agent.runs x WHERE x.workspace_id = v_ws AND x.id = v_run AND x.origin = 'draft';
  IF r.id IS NULL
     OR (user_id IS NOT NULL AND r.requested_by IS DISTINCT FROM user_id) THEN
    -- another user's draft, or one of another workspace, looks exactly like no draft
    RAISE EXCEPTION 'draft run % does not exist', v_run USING ERRCODE = 'undefined_object';
  END IF;
  v_user := r.requested_by;
  IF r.status <> 'succeeded' THEN
    RETURN jsonb_build_object('run_id', r.id, 'status', r.status, 'ready', false,
                              'error', CASE WHEN agent._run_is_active(r.status) THEN NULL
                                            ELSE coalesce(r.error, 'the draft run ended ' || r.status) END);
  END IF;
  j := CASE WHEN jsonb_typeof(r.output) = 'object' AND r.output ? 'name' THEN r.output
            ELSE agent._draft_json(r.output ->> 'text') END;
  IF j IS NULL THEN
    RETURN jsonb_build_object('run_id', r.id, 'status', r.status, 'ready', false,
                              'error', 'the model''s answer is not a JSON draft',
                              'answer', left(coalesce(r.output ->> 'text', r.output::text), 500));
  END IF;

  -- what the run's searches (as the user) really found, still readable by the user now
  -- (read first, then checked: agent.can_access inside the routed query
  -- would run on the shard's node under Citus)
  SELECT coalesce(jsonb_agg(DISTINCT jsonb_build_object('resource_type', f.rt, 'resource_id', f.rid)), '[]')
    INTO v_found
    FROM (SELECT x ->> 'resource_type' AS rt, x ->> 'resource_id' AS rid
            FROM agent.run_steps s,
                 jsonb_array_elements(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                           THEN s.output -> 'results' ELSE '[]' END) x
           WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id AND s.kind = 'tool'
             AND s.name = 'search_resources' AND coalesce(s.status, 'ok') = 'ok') f
   WHERE f.rt IS NOT NULL AND f.rid IS NOT NULL;
  SELECT coalesce(jsonb_agg(c ORDER BY c), '[]') INTO v_found
    FROM jsonb_array_elements(v_found) c
   WHERE agent.can_access(r.agent_id, c ->> 'resource_type', c ->> 'resource_id', 'read', 'manual', v_user);

  -- proposed access: only what a search found and the user can read
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j -> 'access') = 'array'
                                                   THEN j -> 'access' ELSE '[]' END) x LOOP
    i := i + 1;
    v_rt := CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'resource_type' END;
    v_rid := CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'resource_id' END;
    v_acc := coalesce(CASE WHEN jsonb_typeof(e) = 'object' THEN e ->> 'access' END, 'read');
    IF v_rt IS NULL OR v_rid IS NULL OR v_acc NOT IN ('read', 'edit') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'proposed', e, 'reason', 'malformed');
    ELSIF v_rt NOT IN ('page', 'collection', 'skill', 'agent') THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                                   'reason', 'invalid_resource_type');
    ELSIF NOT v_found @> jsonb_build_array(jsonb_build_object('resource_type', v_rt, 'resource_id', v_rid)) THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                                   'reason', CASE WHEN EXISTS (
                                                                    SELECT 1 FROM agent.run_steps s,
                                                                           jsonb_array_elements(CASE WHEN jsonb_typeof(s.output -> 'results') = 'array'
                                                                                                     THEN s.output -> 'results' ELSE '[]' END) x
                                                                     WHERE s.workspace_id = r.workspace_id AND s.run_id = r.id
                                                                       AND s.kind = 'tool' AND s.name = 'search_resources'
                                                                       AND x ->> 'resource_type' = v_rt AND x ->> 'resource_id' = v_rid)
                                                                  THEN 'not_readable' ELSE 'not_found_by_search' END);
    ELSIF (v_rt || ':' || v_rid) = ANY (v_seen) THEN
      CONTINUE;
    ELSE
      IF v_acc = 'edit' AND NOT agent.can_access(r.agent_id, v_rt, v_rid, 'edit', 'manual', v_user) THEN
        v_acc := 'read';
        v_down := v_down || jsonb_build_object('kind', 'access', 'resource_type', v_rt, 'resource_id', v_rid,
                                               'from', 'edit', 'to', 'read', 'reason', 'no_edit_access');
      END IF;
      v_seen := v_seen || (v_rt || ':' || v_rid);
      v_access := v_access || jsonb_build_object('resource_type', v_rt, 'resource_id', v_rid, 'access', v_acc);
    END IF;
  END LOOP;

  -- proposed triggers: valid ones, disabled; one naming a resource keeps it
  -- only when a search found it and the user can read it
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j -> 'triggers') = 'array'
                                                   THEN j -> 'triggers' ELSE '[]' END) x LOOP
    i := i + 1;
    v_problem := agent._draft_trigger_problem(e);
    IF v_problem IS NULL AND e ->> 'resource_id' IS NOT NULL
       AND NOT v_found @> jsonb_build_array(jsonb_build_object('resource_type', e ->> 'resource_type',
                                                               'resource_id', e ->> 'resource_id')) THEN
      v_problem := format('resource %s %s was not found by a search of this run', e ->> 'resource_type', e ->> 'resource_id');
    END IF;
    IF v_problem IS NOT NULL THEN
      v_dropped := v_dropped || jsonb_build_object('kind', 'trigger', 'index', i, 'proposed', e, 'reason', v_problem);
    ELSE
      v_triggers := v_triggers || (e || '{"enabled": false}');
    END IF;
  END LOOP;

  v_name := CASE WHEN jsonb_typeof(j -> 'name') = 'string' AND length(btrim(j ->> 'name')) BETWEEN 1 AND 200
                 THEN btrim(j ->> 'name') ELSE 'New agent' END;
  RETURN jsonb_build_object(
    'run_id', r.id, 'status', r.status, 'ready', true,
    'draft', jsonb_build_object('name', v_name,
                                'instructions', CASE WHEN jsonb_typeof(j -> 'instructions') = 'string'
                                                     THEN j ->> 'instructions' ELSE '' END,
                                'triggers', v_triggers, 'access', v_access,
                                'workspace_id', r.workspace_id),
    'found', v_found, 'dropped', v_dropped, 'downgraded', v_down);
END
$$;
REVOKE ALL ON FUNCTION agent.draft(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.draft(bigint, text) IS
  'The draft of a draft run: {run_id, status, ready, draft {name, instructions, triggers (disabled), access, workspace_id}, found, dropped, downgraded}. Proposed access keeps only resources that a search_resources step of that run found and the requesting user can still read (edit downgraded to read without the user''s edit right); anything else the model proposed is dropped and reported, never guessed. Invalid triggers are dropped with the reason. user_id, when given, must be the requesting user (otherwise 42704, like an unknown draft); a draft run of another workspace than the session''s is unknown too.';
