CREATE FUNCTION agent._triggers_check_run_as() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NEW.kind <> 'schedule' AND NEW.run_as IS DISTINCT FROM 'creator' THEN
    RAISE EXCEPTION 'run_as "%" cannot be set on a trigger of kind %', NEW.run_as, NEW.kind
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A run of an event or mention trigger acts for the event''s user, a run of an API trigger for the user who fired it.',
            HINT = 'run_as applies to schedule triggers only; leave it out for other kinds.';
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION agent._triggers_check_run_as() IS
  'Trigger: refuses (22023) run_as other than its default creator on a trigger whose kind is not schedule (run_as applies to schedule triggers only).';
