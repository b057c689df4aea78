CREATE FUNCTION agent._audit_default_move(name text, lo timestamptz, hi timestamptz) RETURNS bigint
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'pg_agents_audit_default_move';
COMMENT ON FUNCTION agent._audit_default_move(text, timestamptz, timestamptz) IS
  'Internal (agent.maintain_audit), superuser only: makes the partition of [lo, hi) while agent.audit_log_default holds rows of that range, and moves them into it (same ids, same content); returns how many.';
