CREATE OR REPLACE FUNCTION agent._agent_named(p_agent_id bigint, p_by_user text, p_action text,
                                   p_allow_system boolean DEFAULT false)
RETURNS agent.agents
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- agent._agent_for reads the agent in the session's workspace only, so
  -- one of another workspace is "does not exist" before any level check
  RETURN agent._agent_for(p_agent_id, p_by_user, p_action, p_allow_system);
END
$$;
COMMENT ON FUNCTION agent._agent_named(bigint, text, text, boolean) IS
  'Internal: agent._agent_for behind the tenant boundary (an agent of another workspace than the session''s is 42704, like a missing one).';
