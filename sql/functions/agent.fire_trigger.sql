CREATE OR REPLACE FUNCTION agent.fire_trigger(trigger_id bigint, by_user text, payload jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_variable
DECLARE
  t        agent.triggers%ROWTYPE;
  a        agent.agents%ROWTYPE;
  v_ws     text := agent._session_workspace();
  v_cap    integer;
  v_recent bigint;
  v_window interval := coalesce(nullif(current_setting('pg_agents.dedup_window', true), ''), '0')::interval;
  v_fp     text;
  v_now    timestamptz := now();
  v_cutoff timestamptz;
  v_new    integer;
  v_id     bigint;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(fire_trigger.by_user, ''), true);
  IF trigger_id IS NULL THEN
    RAISE EXCEPTION 'trigger_id must not be null' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF by_user IS NULL OR by_user = '' THEN
    RAISE EXCEPTION 'an API trigger run needs the requesting user'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'The run is manual: it acts as the user who fired the trigger (by_user).';
  END IF;
  IF payload IS NOT NULL AND jsonb_typeof(payload) <> 'object' THEN
    RAISE EXCEPTION 'trigger payload must be a json object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF v_ws IS NULL THEN
    -- a superuser session bound to no workspace: the trigger's own
    SELECT x.workspace_id INTO v_ws FROM agent.triggers x WHERE x.id = trigger_id;
  END IF;
  -- a trigger of another workspace does not exist for this session
  SELECT * INTO t FROM agent.triggers x WHERE x.workspace_id = v_ws AND x.id = trigger_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'trigger % does not exist', trigger_id USING ERRCODE = 'undefined_object';
  END IF;
  IF t.kind <> 'api' THEN
    RAISE EXCEPTION 'trigger % is of kind %, not api', trigger_id, t.kind
      USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only a trigger of kind api is fired through agent.fire_trigger; events, schedules and mentions fire the others.';
  END IF;
  IF NOT t.enabled THEN
    RAISE EXCEPTION 'trigger % is disabled', trigger_id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Enable it in the agent''s settings (agent.save_settings).';
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = t.workspace_id AND x.id = t.agent_id;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'agent % does not exist', t.agent_id USING ERRCODE = 'undefined_object';
  END IF;
  IF a.status = 'suspended' THEN
    RAISE EXCEPTION 'agent % is suspended', a.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = 'A suspended agent is started by no trigger; chat still works.';
  END IF;
  IF NOT coalesce(agent.user_can(by_user, a.id, 'chat'), false) THEN
    RAISE EXCEPTION 'user "%" may not run agent %', by_user, a.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Firing an API trigger requires the interact level or higher on the agent.';
  END IF;
  -- deduplication, as for events: the first transaction to insert the
  -- fingerprint wins, a concurrent one waits for it
  IF v_window > interval '0' THEN
    -- the time and the cutoff as values: Citus refuses now() in the conflict
    -- clause of a distributed table
    v_fp := 'api:' || md5(coalesce(payload, '{}')::text);
    v_cutoff := v_now - v_window;
    INSERT INTO agent.event_dedup AS d (workspace_id, trigger_id, fingerprint, seen_at)
    VALUES (t.workspace_id, t.id, v_fp, v_now)
    ON CONFLICT ON CONSTRAINT event_dedup_pkey DO UPDATE SET seen_at = excluded.seen_at
      WHERE d.seen_at <= v_cutoff
    RETURNING 1 INTO v_new;
    IF v_new IS NULL THEN
      SELECT r.id INTO v_id FROM agent.runs r
       WHERE r.workspace_id = t.workspace_id AND r.trigger_id = t.id AND r.origin = 'api'
         AND r.input -> 'payload' = coalesce(payload, '{}')
       ORDER BY r.id DESC LIMIT 1;
      IF v_id IS NOT NULL THEN
        RETURN v_id;
      END IF;
    END IF;
  END IF;
  -- the hourly cap: one decision at a time per agent (the lock of
  -- agent._enqueue_run), counting stops at the cap
  v_cap := coalesce(a.hourly_run_cap, current_setting('pg_agents.hourly_run_cap')::integer);
  PERFORM agent._lock('cap', a.id::text);
  SELECT count(*) INTO v_recent FROM (
    SELECT 1 FROM agent.runs r
     WHERE r.workspace_id = a.workspace_id AND r.agent_id = a.id
       AND (r.regime = 'autonomous' OR (r.origin = 'api' AND r.trigger_id IS NOT NULL))
       AND r.created_at > now() - interval '1 hour' AND r.status <> 'budget_exceeded'
     LIMIT v_cap) s;
  IF v_recent >= v_cap THEN
    RAISE EXCEPTION 'hourly run cap of % reached for agent %', v_cap, a.id
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = 'Runs of API triggers count with the agent''s autonomous runs against its hourly run cap.';
  END IF;
  v_id := agent._enqueue_run(a.id, 'manual', 'api',
            jsonb_build_object('event', 'api.fired', 'resource_type', 'trigger', 'resource_id', t.id::text,
                               'actor', 'user:' || by_user, 'prompt', t.prompt,
                               'payload', coalesce(payload, '{}')),
            t.id, by_user);
  UPDATE agent.triggers x SET last_run_at = now() WHERE x.workspace_id = t.workspace_id AND x.id = t.id;
  RETURN v_id;
END
$$;
