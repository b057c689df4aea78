CREATE OR REPLACE FUNCTION agent.create_from_draft(draft jsonb, by_user text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  d         jsonb := draft;
  k         text;
  e         jsonb;
  i         integer;
  v_ws      text;
  v_name    text;
  v_id      bigint;
  v_problem text;
  v_access  jsonb := '[]';
  v_ntrig   integer := 0;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(create_from_draft.by_user, ''), true);
  PERFORM agent._check_user(by_user);
  IF d IS NULL OR jsonb_typeof(d) <> 'object' THEN
    RAISE EXCEPTION 'invalid draft: a draft must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k IN SELECT jsonb_object_keys(d) LOOP
    IF k NOT IN ('name', 'instructions', 'triggers', 'access', 'workspace_id', 'model', 'approval_mode', 'template') THEN
      RAISE EXCEPTION 'invalid draft: unknown key "%"', k USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A draft has name, instructions, triggers, access and optionally workspace_id, model, approval_mode, template.';
    END IF;
  END LOOP;
  v_ws := coalesce(nullif(d ->> 'workspace_id', ''), agent._session_workspace());
  IF v_ws IS NULL THEN
    RAISE EXCEPTION 'invalid draft: no workspace' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Give workspace_id in the draft or set pg_agents.workspace.';
  END IF;
  PERFORM agent._check_workspace_arg(v_ws);
  IF jsonb_typeof(d -> 'name') IS DISTINCT FROM 'string' OR length(btrim(d ->> 'name')) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'invalid draft: name must be a string of 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  v_name := btrim(d ->> 'name');
  IF d ? 'instructions' AND jsonb_typeof(d -> 'instructions') <> 'string' THEN
    RAISE EXCEPTION 'invalid draft: instructions must be a string' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF d ? 'access' AND jsonb_typeof(d -> 'access') <> 'array' THEN
    RAISE EXCEPTION 'invalid draft: access must be an array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF d ? 'triggers' AND jsonb_typeof(d -> 'triggers') <> 'array' THEN
    RAISE EXCEPTION 'invalid draft: triggers must be an array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM agent._check_settings(jsonb_strip_nulls(jsonb_build_object('model', d -> 'model',
                                                                     'approval_mode', d -> 'approval_mode')));
  -- every grant has the shape of a grant
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'access', '[]')) x LOOP
    i := i + 1;
    IF jsonb_typeof(e) <> 'object' OR EXISTS (SELECT 1 FROM jsonb_object_keys(e) ok
                                               WHERE ok NOT IN ('resource_type', 'resource_id', 'access')) THEN
      RAISE EXCEPTION 'invalid draft: access %: a grant is {"resource_type", "resource_id", "access"}', i
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM agent._check_grant(e ->> 'resource_type', e ->> 'resource_id', coalesce(e ->> 'access', 'read'));
    v_access := v_access || jsonb_build_object('resource_type', e ->> 'resource_type',
                                               'resource_id', e ->> 'resource_id',
                                               'access', coalesce(e ->> 'access', 'read'));
  END LOOP;
  -- every trigger is valid
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'triggers', '[]')) x LOOP
    i := i + 1;
    v_problem := agent._draft_trigger_problem(e);
    IF v_problem IS NOT NULL THEN
      RAISE EXCEPTION 'invalid draft: trigger %: %', i, v_problem USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;

  -- the agent, then the access checks against it (same transaction: a
  -- refusal saves nothing)
  INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, model, approval_mode)
  VALUES (v_ws, by_user, v_name, coalesce(d ->> 'instructions', ''), d ->> 'model',
          coalesce(d ->> 'approval_mode', 'writes'))
  RETURNING id INTO v_id;
  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(v_access) x LOOP
    i := i + 1;
    IF NOT agent._user_reads(v_id, by_user, e ->> 'resource_type', e ->> 'resource_id', e ->> 'access') THEN
      RAISE EXCEPTION 'invalid draft: access %: user "%" cannot % % "%"', i, by_user,
            CASE e ->> 'access' WHEN 'edit' THEN 'edit' ELSE 'read' END, e ->> 'resource_type', e ->> 'resource_id'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A draft grants only what its creator may read (or edit) themselves.';
    END IF;
  END LOOP;
  PERFORM agent._apply_settings(v_id, jsonb_build_object('access', v_access), by_user);

  i := 0;
  FOR e IN SELECT x FROM jsonb_array_elements(coalesce(d -> 'triggers', '[]')) x LOOP
    i := i + 1;
    IF e ->> 'resource_type' IN ('page', 'collection', 'skill', 'agent') AND e ->> 'resource_id' IS NOT NULL
       AND NOT agent._user_reads(v_id, by_user, e ->> 'resource_type', e ->> 'resource_id') THEN
      RAISE EXCEPTION 'invalid draft: trigger %: user "%" cannot read % "%"', i, by_user,
            e ->> 'resource_type', e ->> 'resource_id'
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'A trigger may only watch a resource its creator can read.';
    END IF;
    -- every trigger is created disabled, whatever the draft says
    INSERT INTO agent.triggers (workspace_id, agent_id, kind, event_name, resource_type, resource_id, filter,
                                schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as,
                                created_by)
    VALUES (v_ws, v_id, e ->> 'kind', e ->> 'event_name', e ->> 'resource_type', e ->> 'resource_id',
            coalesce(CASE WHEN jsonb_typeof(e -> 'filter') = 'object' THEN e -> 'filter' END, '{}'),
            e ->> 'schedule', coalesce(e ->> 'timezone', 'UTC'), e ->> 'prompt', false,
            coalesce((e ->> 'allow_self_retrigger')::boolean, false),
            coalesce((e ->> 'show_typing')::boolean, true), coalesce(e ->> 'run_as', 'creator'), by_user);
    v_ntrig := v_ntrig + 1;
  END LOOP;

  PERFORM agent._write_version(v_id, by_user,
                               CASE WHEN d ? 'template' THEN format('created from template %s', d ->> 'template')
                                    ELSE 'created from draft' END);
  PERFORM agent._audit_event('agent.create_from_draft', 'success', 'agent', v_id::text, v_ws, by_user,
                             jsonb_build_object('draft', d, 'by_user', by_user),
                             format('%s created agent %s "%s" from a draft (%s grant(s), %s trigger(s), all disabled)',
                                    by_user, v_id, v_name, jsonb_array_length(v_access), v_ntrig));
  RETURN v_id;
END
$$;
