CREATE OR REPLACE FUNCTION agent._trigger_label(p_origin text, p_input jsonb, p_trigger_id bigint, p_parent_run_id bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t    agent.triggers%ROWTYPE;
  v_ws text;
BEGIN
  IF p_origin IN ('schedule', 'event') AND p_trigger_id IS NOT NULL THEN
    -- the trigger of the session's workspace, else (a session bound to none,
    -- a run of another workspace's row) the trigger's own
    v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
    SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = p_trigger_id;
    -- by id alone only without Citus: called by a trigger on a Citus shard
    -- (agent._conversation_run_ended), a statement that does not name the
    -- workspace is refused there; the label then says what the input says
    IF NOT FOUND AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
      SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = p_trigger_id;
      SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = p_trigger_id;
    END IF;
  END IF;
  RETURN CASE p_origin
    WHEN 'schedule' THEN 'schedule: ' || coalesce(
           agent.cron_describe(t.schedule) || CASE WHEN t.timezone <> 'UTC' THEN ' (' || t.timezone || ')' ELSE '' END,
           '(trigger deleted)')
    WHEN 'event' THEN 'event: ' || coalesce(p_input ->> 'event', t.event_name, '?')
                      || ' on ' || coalesce(p_input ->> 'resource_id', 'any ' || coalesce(p_input ->> 'resource_type', 'resource'))
    WHEN 'mention' THEN 'mention in ' || coalesce(p_input ->> 'resource_type', 'resource') || ' '
                        || coalesce(p_input ->> 'resource_id', '?')
    WHEN 'chat' THEN 'chat'
    WHEN 'api' THEN 'api'
    WHEN 'delegation' THEN 'delegation from run ' || coalesce(p_parent_run_id::text, p_input ->> 'parent_run_id', '?')
    WHEN 'rerun' THEN 're-run of run ' || coalesce(p_input ->> 'rerun_of', '?')
    WHEN 'draft' THEN 'draft: assisted creation'
    ELSE p_origin
  END;
END
$$;
COMMENT ON FUNCTION agent._trigger_label(text, jsonb, bigint, bigint) IS
  'Internal: what started a run, in clear ("schedule: at 09:00 every day", "event: collection.row_added on public.tickets", "chat", "delegation from run N", "re-run of run N").';
