CREATE OR REPLACE FUNCTION agent._check_trigger(p_trigger jsonb, p_complete boolean) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k text;
  v jsonb;
  t text;
BEGIN
  IF p_trigger IS NULL OR jsonb_typeof(p_trigger) <> 'object' THEN
    RAISE EXCEPTION 'trigger must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOR k, v IN SELECT * FROM jsonb_each(p_trigger) LOOP
    t := jsonb_typeof(v);
    CASE k
      WHEN 'id' THEN
        IF NOT (t = 'null' OR t = 'number' AND (v #>> '{}') ~ '^[0-9]{1,18}$') THEN
          RAISE EXCEPTION 'trigger key "id" must be a trigger id' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'kind' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('schedule', 'event', 'mention', 'api') THEN
          RAISE EXCEPTION 'invalid trigger kind %', v::text
            USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A trigger kind is schedule, event, mention or api.';
        END IF;
      WHEN 'event_name', 'resource_type', 'resource_id', 'schedule', 'prompt' THEN
        IF t NOT IN ('string', 'null') THEN
          RAISE EXCEPTION 'trigger key "%" must be a string or null', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'timezone' THEN
        IF t <> 'string' THEN
          RAISE EXCEPTION 'trigger key "timezone" must be a string' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A time zone of the tz database, e.g. Europe/Paris (UTC when the key is left out).';
        END IF;
      WHEN 'filter' THEN
        IF t NOT IN ('object', 'null') THEN
          RAISE EXCEPTION 'trigger key "filter" must be an object' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'enabled', 'allow_self_retrigger', 'show_typing' THEN
        IF t <> 'boolean' THEN
          RAISE EXCEPTION 'trigger key "%" must be a boolean', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'run_as' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('creator', 'shared') THEN
          RAISE EXCEPTION 'trigger key "run_as" must be creator or shared' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      WHEN 'conversation' THEN
        IF t <> 'string' OR v #>> '{}' NOT IN ('agent', 'trigger') THEN
          RAISE EXCEPTION 'trigger key "conversation" must be agent or trigger' USING ERRCODE = 'invalid_parameter_value';
        END IF;
      ELSE
        RAISE EXCEPTION 'unknown trigger key "%"', k
          USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'Known keys: id, kind, event_name, resource_type, resource_id, filter, schedule, timezone, prompt, enabled, allow_self_retrigger, show_typing, run_as, conversation.';
    END CASE;
  END LOOP;
  IF p_complete THEN
    IF p_trigger ->> 'kind' IS NULL THEN
      RAISE EXCEPTION 'invalid trigger: kind is required'
        USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A trigger kind is schedule, event, mention or api.';
    END IF;
    IF p_trigger ->> 'kind' = 'schedule' AND p_trigger ->> 'schedule' IS NULL THEN
      RAISE EXCEPTION 'invalid schedule trigger: schedule is required'
        USING ERRCODE = 'invalid_parameter_value', HINT = 'A schedule is a 5-field cron expression, e.g. 0 9 * * 1-5.';
    END IF;
  END IF;
END
$$;

COMMENT ON FUNCTION agent._check_trigger(jsonb, boolean) IS
  'Internal (agent.set_trigger): refuses (22023) a trigger definition with an unknown key or a value of the wrong shape, naming the key; p_complete also requires a kind, and a schedule for a schedule trigger.';
