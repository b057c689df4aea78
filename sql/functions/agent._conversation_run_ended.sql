CREATE OR REPLACE FUNCTION agent._conversation_run_ended() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_conv    bigint;
  v_text    text;
  v_role    text;
  v_trig    bigint;
  v_tprompt text;
  v_start   text;
BEGIN
  IF NEW.status = 'succeeded' THEN
    v_role := 'assistant';
    v_text := coalesce(NEW.output ->> 'text', NEW.output #>> '{}', NEW.output::text, '');
  ELSE
    v_role := 'notice';
    v_text := pg_catalog.format('run %s ended %s%s', NEW.id, NEW.status,
                                coalesce(': ' || NEW.error, ''));
  END IF;
  IF NEW.regime = 'manual' THEN
    -- only a run made by agent.send_message: its user message is there
    SELECT m.conversation_id INTO v_conv
      FROM agent.messages m
     WHERE m.run_id = NEW.id AND m.role = 'user' AND m.workspace_id = NEW.workspace_id
       AND m.conversation_id = (CASE WHEN (NEW.input ->> 'conversation_id') ~ '^[0-9]{1,18}$'
                                     THEN (NEW.input ->> 'conversation_id')::bigint END)
     LIMIT 1;
    IF v_conv IS NULL THEN
      RETURN NULL;
    END IF;
    INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
    VALUES (NEW.workspace_id, v_conv, v_role, v_text, NEW.id, (pg_catalog.length(v_text) + 3) / 4);
    RETURN NULL;
  END IF;
  IF NEW.trigger_id IS NOT NULL THEN
    SELECT CASE WHEN t.conversation = 'trigger' THEN t.id END, t.prompt INTO v_trig, v_tprompt
      FROM agent.triggers t WHERE t.workspace_id = NEW.workspace_id AND t.id = NEW.trigger_id AND t.agent_id = NEW.agent_id;
  END IF;
  -- found, else made once (a concurrent first run waits on the unique index);
  -- every statement names the run's workspace (on Citus this trigger runs
  -- on the shard, where only co-located statements may run)
  SELECT c.id INTO v_conv FROM agent.conversations c
   WHERE c.workspace_id = NEW.workspace_id AND c.agent_id = NEW.agent_id AND c.kind = 'autonomous'
     AND coalesce(c.trigger_id, 0) = coalesce(v_trig, 0);
  IF v_conv IS NULL THEN
    INSERT INTO agent.conversations AS c (workspace_id, agent_id, kind, trigger_id)
    VALUES (NEW.workspace_id, NEW.agent_id, 'autonomous', v_trig)
    ON CONFLICT (agent_id, (coalesce(trigger_id, 0)), workspace_id) WHERE kind = 'autonomous' DO NOTHING
    RETURNING c.id INTO v_conv;
    IF v_conv IS NULL THEN
      SELECT c.id INTO v_conv FROM agent.conversations c
       WHERE c.workspace_id = NEW.workspace_id AND c.agent_id = NEW.agent_id AND c.kind = 'autonomous'
         AND coalesce(c.trigger_id, 0) = coalesce(v_trig, 0);
    END IF;
  END IF;
  -- what started it: the trigger label, and the prompt or the task (never
  -- the event payload, which may hold rows the reader may not see)
  v_start := agent._trigger_label(NEW.origin, NEW.input, NEW.trigger_id, NEW.parent_run_id)
             || coalesce(E'\n' || coalesce(NEW.input ->> 'prompt', v_tprompt, NEW.input ->> 'task'), '');
  -- both rows in one statement; no update of the conversation row, so that
  -- runs of one agent ending at once never wait on each other
  INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
  SELECT NEW.workspace_id, v_conv, v.role, v.content, NEW.id, (pg_catalog.length(v.content) + 3) / 4
    FROM (VALUES (1, 'trigger', v_start), (2, v_role, v_text)) AS v(n, role, content)
   ORDER BY v.n;
  RETURN NULL;
END
$$;
