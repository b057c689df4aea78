CREATE OR REPLACE FUNCTION agent._triggers_history() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- NEW and OLD as agent.triggers rows (on a Citus shard they have the
  -- shard's row type, which agent._trigger_json does not take)
  n agent.triggers;
  o agent.triggers;
BEGIN
  IF TG_OP <> 'DELETE' THEN
    n := NEW;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    o := OLD;
  END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM agent._trigger_direct_write(n.agent_id, 'create', n.id, NULL, agent._trigger_json(n));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM agent._trigger_direct_write(o.agent_id, 'delete', o.id, agent._trigger_json(o), NULL);
  ELSIF o.agent_id <> n.agent_id THEN
    -- moved to another agent: it leaves the one and joins the other
    PERFORM agent._trigger_direct_write(o.agent_id, 'delete', o.id, agent._trigger_json(o), NULL);
    PERFORM agent._trigger_direct_write(n.agent_id, 'create', n.id, NULL, agent._trigger_json(n));
  ELSIF agent._trigger_json(o) IS DISTINCT FROM agent._trigger_json(n) THEN
    PERFORM agent._trigger_direct_write(n.agent_id, 'update', n.id, agent._trigger_json(o),
                                        agent._trigger_json(n));
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._triggers_history() IS
  'Trigger: versions and audits a direct write to agent.triggers (one version and one agent.trigger.* audit row per trigger changed); writes the extension versions itself are held out, bookkeeping columns (last_*, next_run_at, updated_at) are not settings.';
