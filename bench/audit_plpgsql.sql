-- The comparison point of bench/audit.sh: a typical PL/pgSQL jsonb audit
-- trigger (supa_audit / classic audit-trigger style) doing the same job as
-- agent.audit_table: to_jsonb of the rows, primary key looked up in the
-- catalogs, changed columns only, credential keys and values redacted, one
-- insert into an indexed log table.
DROP SCHEMA IF EXISTS bench_audit CASCADE;
CREATE SCHEMA bench_audit;

CREATE TABLE bench_audit.log (LIKE agent.audit_log INCLUDING DEFAULTS INCLUDING IDENTITY);
ALTER TABLE bench_audit.log ADD PRIMARY KEY (id);
CREATE INDEX ON bench_audit.log (workspace_id, at);
CREATE INDEX ON bench_audit.log (target_type, target_id);
CREATE INDEX ON bench_audit.log (run_id) WHERE run_id IS NOT NULL;

CREATE FUNCTION bench_audit.primary_key_columns(rel oid) RETURNS text[]
LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(a.attname::text ORDER BY a.attnum), '{}')
    FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
   WHERE i.indrelid = rel AND i.indisprimary
$$;

CREATE FUNCTION bench_audit.redact(v jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  k text; e jsonb; out jsonb;
BEGIN
  CASE jsonb_typeof(v)
  WHEN 'object' THEN
    out := '{}';
    FOR k, e IN SELECT * FROM jsonb_each(v) LOOP
      IF k ~* '(password|passwd|secret|token|api_?key|authorization|cookie|private_?key|access_?key|credential)'
         AND jsonb_typeof(e) NOT IN ('number', 'boolean', 'null') THEN
        out := out || jsonb_build_object(k, '[REDACTED]');
      ELSE
        out := out || jsonb_build_object(k, bench_audit.redact(e));
      END IF;
    END LOOP;
    RETURN out;
  WHEN 'array' THEN
    SELECT coalesce(jsonb_agg(bench_audit.redact(x)), '[]') INTO out FROM jsonb_array_elements(v) x;
    RETURN out;
  WHEN 'string' THEN
    IF v #>> '{}' ~ '(Bearer [A-Za-z0-9._~+/=-]{8,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[A-Z0-9]{16}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+\.)' THEN
      RETURN to_jsonb('[REDACTED]'::text);
    END IF;
    IF length(v #>> '{}') > 2048 THEN
      RETURN to_jsonb(left(v #>> '{}', 2048) || '...[TRUNCATED]');
    END IF;
    RETURN v;
  ELSE
    RETURN v;
  END CASE;
END
$$;

CREATE FUNCTION bench_audit.plpgsql_audit_trigger() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  pkey text[] := bench_audit.primary_key_columns(TG_RELID);
  new_j jsonb; old_j jsonb; changes jsonb := '{}'; k text; v jsonb;
  actor text := nullif(current_setting('pg_agents.actor', true), '');
  rec jsonb;
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN new_j := to_jsonb(NEW); END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN old_j := to_jsonb(OLD); END IF;
  IF TG_OP = 'UPDATE' THEN
    FOR k, v IN SELECT * FROM jsonb_each(new_j) LOOP
      IF v IS DISTINCT FROM old_j -> k THEN
        changes := changes || jsonb_build_object(k, jsonb_build_object('old', old_j -> k, 'new', v));
      END IF;
    END LOOP;
    IF changes = '{}' THEN RETURN NULL; END IF;
  ELSE
    changes := coalesce(new_j, old_j);
  END IF;
  rec := coalesce(new_j, old_j);
  INSERT INTO bench_audit.log (actor_kind, actor_id, on_behalf_of, run_id, surface, action, status,
                               target_type, target_id, owner_id, workspace_id, changes, summary)
  VALUES (CASE WHEN actor LIKE 'agent:%' THEN 'agent' WHEN actor = 'system' THEN 'system' ELSE 'human' END,
          CASE WHEN actor LIKE 'agent:%' THEN substr(actor, 7) WHEN actor LIKE 'user:%' THEN substr(actor, 6) END,
          nullif(current_setting('pg_agents.on_behalf_of', true), ''),
          nullif(current_setting('pg_agents.run_id', true), '')::bigint,
          nullif(current_setting('pg_agents.surface', true), ''),
          lower(TG_OP), 'success', TG_ARGV[0],
          (SELECT string_agg(rec ->> c, ',') FROM unnest(pkey) c),
          rec ->> 'owner_id',
          coalesce(rec ->> 'workspace_id', nullif(current_setting('pg_agents.workspace', true), '')),
          bench_audit.redact(changes),
          lower(TG_OP) || ' ' || TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);
  RETURN NULL;
END
$$;

-- The plain PL/pgSQL audit trigger of bench/audit.sh's (d): to_jsonb of the
-- row into a log with an identity primary key, nothing else (no redaction,
-- no changed-columns diff, no tenant) -- the cheapest trigger a user writes.
CREATE TABLE bench_audit.plain_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    table_name text NOT NULL,
    op text NOT NULL,
    actor text,
    row_data jsonb
);

CREATE FUNCTION bench_audit.plain_audit_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO bench_audit.plain_log (table_name, op, actor, row_data)
  VALUES (TG_TABLE_NAME, TG_OP, current_setting('pg_agents.actor', true),
          CASE WHEN TG_OP = 'DELETE' THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END);
  RETURN NULL;
END
$$;
