CREATE OR REPLACE FUNCTION agent.readable_resources(agent_id bigint, resource_type text, mode text DEFAULT 'read')
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_self   bigint := agent.current_agent_id();
  v_ws     text;
BEGIN
  IF mode IS NULL OR mode NOT IN ('read', 'edit') THEN
    RAISE EXCEPTION 'invalid mode "%"', coalesce(mode, '(null)')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A mode is read or edit.';
  END IF;
  IF v_self IS NOT NULL AND agent_id IS DISTINCT FROM v_self THEN
    RAISE EXCEPTION 'an agent session can only list its own resources'
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = format('The session acts as agent %s.', v_self);
  END IF;
  IF agent_id IS NULL OR resource_type IS NULL THEN
    RETURN;
  END IF;
  -- an agent of another workspace than the session's is unknown: nothing
  -- (the session's workspace named; a session bound to none: the agent's own)
  v_ws := agent._session_workspace();
  IF v_ws IS NULL THEN
    SELECT a.workspace_id INTO v_ws FROM agent.agents a WHERE a.id = readable_resources.agent_id;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = v_ws AND a.id = readable_resources.agent_id) THEN
    RETURN;
  END IF;
  -- (a) direct grants at >= mode, bounded by the owner's ACL (their user and
  --     group rows, and what is shared with the whole workspace);
  -- (b) with a workspace_shared grant: what is shared with the whole
  --     workspace now, bounded by the owner's ACL;
  -- each candidate decided by the code of agent.can_access (src/access.c).
  RETURN QUERY SELECT unnest(agent._readable_ids(agent_id, resource_type, mode));
END
$$;
COMMENT ON FUNCTION agent.readable_resources(bigint, text, text) IS
  'Ids of the resources of a type an agent may read (or edit) in the autonomous regime, exactly those agent.can_access allows: direct grants bounded by the owner''s ACL, plus what is shared with the workspace when the agent holds workspace_shared. Empty for an unknown, deleted or suspended agent. With a custom ACL function (agent.set_acl_function): the direct grants that function allows, without the workspace shares, which such a function cannot list. An agent session may only ask for itself.';
