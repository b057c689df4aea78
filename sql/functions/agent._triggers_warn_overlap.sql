CREATE OR REPLACE FUNCTION agent._triggers_warn_overlap() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  u agent.triggers%ROWTYPE;
  v text;
  k int := 0;
  -- NEW as an agent.triggers row (on a Citus shard it has the shard's row type)
  n agent.triggers := NEW;
BEGIN
  IF NOT NEW.enabled OR NEW.kind NOT IN ('event', 'mention') THEN
    RETURN NULL;
  END IF;
  -- only the triggers that can overlap (same event, compatible resource) are
  -- compared, and at most three are named: a bulk insert of many triggers of
  -- one agent on one event stays linear and its output readable
  FOR u IN SELECT * FROM agent.triggers x
            WHERE x.workspace_id = NEW.workspace_id AND x.agent_id = NEW.agent_id AND x.id <> NEW.id AND x.enabled
              AND x.kind IN ('event', 'mention')
              AND CASE x.kind WHEN 'mention' THEN 'agent.mentioned' ELSE x.event_name END
                  IS NOT DISTINCT FROM CASE NEW.kind WHEN 'mention' THEN 'agent.mentioned' ELSE NEW.event_name END
              AND (x.resource_id IS NULL OR NEW.resource_id IS NULL OR x.resource_id = NEW.resource_id)
            ORDER BY x.id LOOP
    v := agent._trigger_overlap(n, u);
    IF v IS NOT NULL THEN
      k := k + 1;
      IF k > 3 THEN
        RAISE WARNING 'trigger % overlaps more triggers of agent %', NEW.id, NEW.agent_id
          USING HINT = 'agent.trigger_overlaps lists every overlap.';
        EXIT;
      END IF;
      RAISE WARNING 'trigger % overlaps trigger % of agent %', NEW.id, u.id, NEW.agent_id
        USING DETAIL = initcap(left(v, 1)) || substr(v, 2) || ': such an event starts two runs.',
              HINT = 'Narrow a filter or disable one of them; agent.trigger_overlaps lists every overlap.';
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION agent._triggers_warn_overlap() FROM PUBLIC;
COMMENT ON FUNCTION agent._triggers_warn_overlap() IS
  'Trigger: a WARNING for each enabled event or mention trigger of the same agent that a saved trigger overlaps (agent._trigger_overlap), at most three, then one that says there are more.';
