CREATE OR REPLACE FUNCTION agent.generate_draft(description text, user_id text, workspace_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  v_ws   text := coalesce(nullif(workspace_id, ''), agent._session_workspace());
  v_user text := user_id;
  v_aid  bigint;
  v_run  bigint;
BEGIN
  -- the audit rows of this call name user_id as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(generate_draft.user_id, ''), true);
  IF description IS NULL OR btrim(description) = '' THEN
    RAISE EXCEPTION 'description must not be empty' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Describe what the agent should do, e.g. "triage the tickets of the Support collection".';
  END IF;
  IF length(description) > 4000 THEN
    RAISE EXCEPTION 'description is too long' USING ERRCODE = 'invalid_parameter_value',
          DETAIL = 'A description has at most 4000 characters.';
  END IF;
  PERFORM agent._check_user(v_user);
  IF v_ws IS NULL THEN
    RAISE EXCEPTION 'generate_draft needs a workspace' USING ERRCODE = 'invalid_parameter_value',
          HINT = 'Pass workspace_id or set pg_agents.workspace.';
  END IF;
  PERFORM agent._check_workspace_arg(v_ws);
  v_aid := agent._assistant_for(v_ws);
  -- a manual run acting as the user: its searches go through the user's own ACL
  v_run := agent._enqueue_run(v_aid, 'manual', 'draft',
                              jsonb_build_object('prompt', 'Draft an agent for this description:' || E'\n' || description,
                                                 'description', description),
                              NULL, v_user);
  PERFORM agent._audit_event('agent.generate_draft', 'success', 'run', v_run::text, v_ws, v_user,
                             jsonb_build_object('description', description, 'by_user', v_user),
                             format('%s asked for an agent draft (run %s)', v_user, v_run));
  RETURN v_run;
END
$$;
