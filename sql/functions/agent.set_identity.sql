CREATE OR REPLACE FUNCTION agent.set_identity(actor text, workspace text DEFAULT NULL,
                                   run_id bigint DEFAULT NULL,
                                   surface text DEFAULT 'sql',
                                   on_behalf_of text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF actor IS NOT NULL AND actor !~ '^(user:.+|agent:[0-9]{1,18}|system)$' THEN
    RAISE EXCEPTION 'invalid actor "%"', actor
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An actor is written user:<id>, agent:<id> or system.';
  END IF;
  IF surface IS NOT NULL AND surface NOT IN ('sql','tool','http','frontend','cli','mcp','a2a') THEN
    RAISE EXCEPTION 'invalid surface "%"', surface
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A surface is one of sql, tool, http, frontend, cli, mcp, a2a.';
  END IF;
  -- SET LOCAL statements rather than set_config(): on Citus (with
  -- citus.propagate_set_commands = 'local') they reach the workers too,
  -- where shard triggers and policies read them (docs/scaling.md)
  EXECUTE pg_catalog.format('SET LOCAL pg_agents.actor = %L', coalesce(actor, ''));
  EXECUTE pg_catalog.format('SET LOCAL pg_agents.workspace = %L', coalesce(workspace, ''));
  EXECUTE pg_catalog.format('SET LOCAL pg_agents.run_id = %L', coalesce(run_id::text, ''));
  EXECUTE pg_catalog.format('SET LOCAL pg_agents.surface = %L', coalesce(surface, ''));
  EXECUTE pg_catalog.format('SET LOCAL pg_agents.on_behalf_of = %L', coalesce(on_behalf_of, ''));
END
$$;
COMMENT ON FUNCTION agent.set_identity(text, text, bigint, text, text) IS
  'Sets the session identity GUCs for the current transaction (like SET LOCAL).';
