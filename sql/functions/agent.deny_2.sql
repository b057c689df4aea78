CREATE OR REPLACE FUNCTION agent.deny(approval_key text, by_user text, run_id bigint) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT agent.deny($1, $2, $3, NULL::text) $$;
COMMENT ON FUNCTION agent.deny(text, text, bigint) IS
  'Denies one pending tool call without a reason; see agent.deny(text, text, bigint, text). Returns the run id.';
