CREATE OR REPLACE FUNCTION agent._draft_trigger_problem(t jsonb) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k    text;
  kind text;
BEGIN
  IF t IS NULL OR jsonb_typeof(t) <> 'object' THEN
    RETURN 'a trigger must be a JSON object';
  END IF;
  FOR k IN SELECT jsonb_object_keys(t) LOOP
    IF k NOT IN ('kind', 'event_name', 'resource_type', 'resource_id', 'filter', 'schedule', 'timezone',
                 'prompt', 'allow_self_retrigger', 'show_typing', 'run_as', 'enabled') THEN
      RETURN format('unknown key "%s"', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['kind', 'event_name', 'resource_type', 'resource_id', 'schedule',
                                      'timezone', 'prompt', 'run_as']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) NOT IN ('string', 'null') THEN
      RETURN format('"%s" must be a string', k);
    END IF;
  END LOOP;
  FOR k IN SELECT x FROM unnest(ARRAY['allow_self_retrigger', 'show_typing', 'enabled']) x LOOP
    IF t ? k AND jsonb_typeof(t -> k) <> 'boolean' THEN
      RETURN format('"%s" must be a boolean', k);
    END IF;
  END LOOP;
  kind := t ->> 'kind';
  IF kind IS NULL OR kind NOT IN ('schedule', 'event', 'mention', 'api') THEN
    RETURN format('kind "%s" is not schedule, event, mention or api', coalesce(kind, 'NULL'));
  END IF;
  IF kind = 'schedule' THEN
    IF t ->> 'schedule' IS NULL OR NOT agent.cron_valid(t ->> 'schedule') THEN
      RETURN format('invalid schedule "%s"', coalesce(t ->> 'schedule', 'NULL'));
    END IF;
  END IF;
  IF t ->> 'timezone' IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = t ->> 'timezone') THEN
    RETURN format('unknown time zone "%s"', t ->> 'timezone');
  END IF;
  IF kind = 'event' THEN
    IF coalesce(btrim(t ->> 'event_name'), '') = '' THEN
      RETURN 'an event trigger needs event_name';
    END IF;
    IF (t ->> 'event_name') !~ '^[A-Za-z0-9_.:-]{1,200}$' THEN
      RETURN format('invalid event_name "%s"', t ->> 'event_name');
    END IF;
    IF coalesce(btrim(t ->> 'resource_type'), '') = '' THEN
      RETURN 'an event trigger needs resource_type';
    END IF;
  END IF;
  IF t ->> 'resource_id' IS NOT NULL AND t ->> 'resource_type' IS NULL THEN
    RETURN 'resource_id needs resource_type';
  END IF;
  IF t ->> 'run_as' IS NOT NULL AND t ->> 'run_as' NOT IN ('creator', 'shared') THEN
    RETURN format('run_as "%s" is not creator or shared', t ->> 'run_as');
  END IF;
  IF t ? 'run_as' AND t ->> 'kind' IS DISTINCT FROM 'schedule' THEN
    RETURN 'run_as applies to schedule triggers only';
  END IF;
  IF t ? 'filter' AND jsonb_typeof(t -> 'filter') <> 'null' THEN
    -- a filter view must be readable by the session's outer role (the
    -- application's, not the owner of a SECURITY DEFINER caller such as
    -- create_from_draft): it is read with that role's rights, which become
    -- the trigger's saved_by.  Validation never runs the view.
    BEGIN
      PERFORM agent.validate_filter(t -> 'filter');
    EXCEPTION WHEN invalid_parameter_value OR insufficient_privilege THEN
      RETURN SQLERRM;
    END;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._draft_trigger_problem(jsonb) IS
  'Internal: why a draft trigger is invalid (keys and types, kind, cron via agent.cron_valid, time zone, event name and resource type, run_as (schedule triggers only), filter via agent.validate_filter, whose view the session''s outer role must be allowed to read), or NULL when it is valid.';
