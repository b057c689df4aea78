-- Distribution readiness (issue 24, docs/scaling.md), read from the catalog
-- without Citus: every table of schema agent is in agent.distribution_plan()
-- exactly once; a distributed table has workspace_id NOT NULL, and every
-- primary key and unique index of it holds workspace_id; a foreign key
-- between distributed tables is composite on workspace_id in the same
-- position, and none crosses the kinds in a way Citus refuses; no foreign
-- key holding workspace_id has a SET NULL / SET DEFAULT action; every
-- ON CONFLICT target of the extension's SQL functions matches a unique
-- index of its table (PostgreSQL's own inference, through EXPLAIN), and no
-- conflict WHERE clause calls now() or a like function.  Each check lists
-- its offenders, and is shown to catch one.  (The C code's SPI strings:
-- test/t/020_scaling_c.t.)
BEGIN;
SELECT plan(40);

-- The plan under test: the real one, doctored below to prove the checks.
CREATE TEMP TABLE plan ON COMMIT DROP AS
  SELECT table_name::oid AS rel, kind, reason FROM agent.distribution_plan();

-- the tables of the extension (members, so not the shards Citus keeps in
-- schema agent; partitions go with their parent)
CREATE FUNCTION pg_temp.ext_tables() RETURNS SETOF oid LANGUAGE sql AS $$
  SELECT c.oid FROM pg_class c
    JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
                    AND d.refclassid = 'pg_extension'::regclass
                    AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_agents')
   WHERE c.relnamespace = 'agent'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
$$;

-- every table of the extension exactly once; and nothing else, of a known
-- kind, with a reason
CREATE FUNCTION pg_temp.v_plan() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT 'not in the plan: ' || t::regclass FROM pg_temp.ext_tables() t
   WHERE NOT EXISTS (SELECT 1 FROM pg_temp.plan p WHERE p.rel = t)
  UNION ALL
  SELECT 'in the plan ' || count(*) || ' times: ' || p.rel::regclass FROM pg_temp.plan p
   GROUP BY p.rel HAVING count(*) > 1
  UNION ALL
  SELECT 'in the plan but not a table of the extension: ' || p.rel::regclass FROM pg_temp.plan p
   WHERE p.rel NOT IN (SELECT pg_temp.ext_tables())
  UNION ALL
  SELECT 'bad kind or no reason: ' || p.rel::regclass || ' ' || coalesce(p.kind, 'NULL') FROM pg_temp.plan p
   WHERE p.kind IS NULL OR p.kind NOT IN ('distributed', 'reference', 'local') OR coalesce(p.reason, '') = ''
  ORDER BY 1
$$;

-- a distributed table has workspace_id NOT NULL (the distribution column:
-- Citus refuses a NULL; the audit log writes '' for no workspace)
CREATE FUNCTION pg_temp.v_not_null() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT 'distributed without workspace_id NOT NULL: ' || p.rel::regclass FROM pg_temp.plan p
   WHERE p.kind = 'distributed'
     AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = p.rel AND a.attname = 'workspace_id'
                                                     AND a.attnotnull AND NOT a.attisdropped)
  ORDER BY 1
$$;

-- every primary key and unique index of a distributed table holds
-- workspace_id as a key column
CREATE FUNCTION pg_temp.v_uniques() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT 'unique index without workspace_id: ' || i.indexrelid::regclass || ' on ' || i.indrelid::regclass
    FROM pg_index i JOIN pg_temp.plan p ON p.rel = i.indrelid AND p.kind = 'distributed'
   WHERE (i.indisunique OR i.indisprimary)
     AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                      WHERE a.attrelid = i.indrelid AND a.attname = 'workspace_id'
                        AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]))
  ORDER BY 1
$$;

-- foreign keys of the extension's tables: between two distributed tables,
-- composite with workspace_id at the same position on both sides; a
-- distributed table may reference a reference table; a reference table only
-- a reference table; a local table nothing of the plan (and nothing of the
-- plan references a local table)
CREATE FUNCTION pg_temp.v_fkeys() RETURNS SETOF text LANGUAGE sql AS $$
  WITH fk AS (
    SELECT co.conname, co.conrelid, co.confrelid, co.conkey, co.confkey,
           coalesce(pf.kind, 'outside the plan') AS from_kind, coalesce(pt.kind, 'outside the plan') AS to_kind,
           (SELECT a.attnum FROM pg_attribute a WHERE a.attrelid = co.conrelid AND a.attname = 'workspace_id') AS ws_from,
           (SELECT a.attnum FROM pg_attribute a WHERE a.attrelid = co.confrelid AND a.attname = 'workspace_id') AS ws_to
      FROM pg_constraint co
      LEFT JOIN pg_temp.plan pf ON pf.rel = co.conrelid
      LEFT JOIN pg_temp.plan pt ON pt.rel = co.confrelid
     WHERE co.contype = 'f'
       AND (co.conrelid IN (SELECT rel FROM pg_temp.plan) OR co.confrelid IN (SELECT rel FROM pg_temp.plan)))
  SELECT CASE
           WHEN from_kind = 'distributed' AND to_kind = 'distributed' THEN
             'foreign key not composite on workspace_id at the same position: '
           ELSE 'foreign key from a ' || from_kind || ' table to a ' || to_kind || ' table: ' END
         || conname || ' on ' || conrelid::regclass || ' -> ' || confrelid::regclass
    FROM fk
   WHERE CASE
           WHEN from_kind = 'distributed' AND to_kind = 'distributed' THEN
             ws_from IS NULL OR ws_to IS NULL
             OR NOT EXISTS (SELECT 1 FROM generate_subscripts(conkey, 1) k
                             WHERE conkey[k] = ws_from AND confkey[k] = ws_to)
           WHEN from_kind IN ('distributed', 'reference') AND to_kind = 'reference' THEN false
           ELSE true END
  ORDER BY 1
$$;

-- no SET NULL / SET DEFAULT action on a foreign key holding workspace_id
CREATE FUNCTION pg_temp.v_set_null() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT 'SET NULL/SET DEFAULT on a key holding workspace_id: ' || co.conname || ' on ' || co.conrelid::regclass
    FROM pg_constraint co JOIN pg_temp.plan p ON p.rel = co.conrelid
   WHERE co.contype = 'f' AND (co.confdeltype IN ('n', 'd') OR co.confupdtype IN ('n', 'd'))
     AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = co.conrelid AND a.attname = 'workspace_id'
                                                AND a.attnum = ANY (co.conkey))
  ORDER BY 1
$$;

-- every sequence of the extension belongs to a column of a planned table
-- (so that agent.set_id_range, which takes those, moves them all)
CREATE FUNCTION pg_temp.v_sequences() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT 'sequence of no planned table: ' || c.oid::regclass FROM pg_class c
    JOIN pg_depend e ON e.classid = 'pg_class'::regclass AND e.objid = c.oid AND e.deptype = 'e'
                    AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_agents')
   WHERE c.relkind = 'S'
     AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_temp.plan p ON p.rel = d.refobjid
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass
                        AND d.deptype IN ('a', 'i'))
  ORDER BY 1
$$;

-- The ON CONFLICT clauses of the SQL and PL/pgSQL functions of schema agent:
-- (function, table, conflict target, the rest of the statement).  Comments
-- are stripped; a statement ends at the first semicolon.
CREATE FUNCTION pg_temp.conflicts(src text)
RETURNS TABLE (tbl text, target text, rest text) LANGUAGE plpgsql AS $$
DECLARE
  s     text := regexp_replace(src, '--[^\n]*', '', 'g');
  stmt  text;
  m     text[];
  i     int;
  depth int;
  ch    text;
BEGIN
  FOREACH stmt IN ARRAY regexp_split_to_array(s, ';') LOOP
    m := regexp_match(stmt, '\mINSERT\s+INTO\s+agent\.(\w+).*\mON\s+CONFLICT\M(.*)$', 'is');
    CONTINUE WHEN m IS NULL;
    tbl := m[1];
    rest := m[2];
    target := '';
    IF rest ~* '^\s*ON\s+CONSTRAINT\M' THEN
      target := substring(rest FROM '(?i)^\s*(ON\s+CONSTRAINT\s+\w+)');
      rest := substr(rest, length(target) + 1);
    ELSIF rest ~ '^\s*\(' THEN
      -- the balanced parentheses of the target
      i := position('(' IN rest); depth := 0;
      LOOP
        ch := substr(rest, i, 1);
        EXIT WHEN ch = '';
        IF ch = '(' THEN depth := depth + 1; ELSIF ch = ')' THEN depth := depth - 1; END IF;
        i := i + 1;
        EXIT WHEN depth = 0;
      END LOOP;
      target := substr(rest, 1, i - 1);
      rest := substr(rest, i);
      -- the index predicate, up to DO
      target := target || coalesce(substring(rest FROM '(?i)^(\s+WHERE\s.*?)\s+DO\s'), '');
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$;
CREATE TEMP TABLE conflict_sites ON COMMIT DROP AS
  SELECT p.oid::regprocedure AS fn, c.tbl, btrim(regexp_replace(c.target, '\s+', ' ', 'g')) AS target, c.rest
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang AND l.lanname IN ('sql', 'plpgsql'),
         pg_temp.conflicts(p.prosrc) c
   WHERE p.pronamespace = 'agent'::regnamespace;

-- the target as PostgreSQL infers it: the arbiter index, or the error
CREATE FUNCTION pg_temp.arbiter(tbl text, target text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  got  text;
BEGIN
  FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) INSERT INTO agent.%I SELECT * FROM agent.%I WHERE false ON CONFLICT %s DO NOTHING',
                             tbl, tbl, target) LOOP
    IF line ~ 'Conflict Arbiter Indexes:' THEN
      got := btrim(substring(line FROM 'Conflict Arbiter Indexes:(.*)$'));
    END IF;
  END LOOP;
  RETURN coalesce(got, 'no arbiter index');
EXCEPTION WHEN OTHERS THEN
  RETURN 'error: ' || SQLERRM;
END
$$;

-- every ON CONFLICT target names one unique index of its table, exactly
-- (PostgreSQL infers an arbiter only from an index whose columns and
-- expressions are exactly the target's); on a distributed table, one that
-- holds workspace_id (pg_temp.v_uniques); an ON CONFLICT with no target
-- (DO NOTHING) is not one
CREATE FUNCTION pg_temp.v_targets() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT 'ON CONFLICT ' || s.target || ' on agent.' || s.tbl || ' in ' || s.fn || ': ' || a.arbiter
    FROM pg_temp.conflict_sites s, LATERAL (SELECT pg_temp.arbiter(s.tbl, s.target) AS arbiter) a
   WHERE s.target <> ''
     AND (a.arbiter LIKE 'error: %' OR a.arbiter = 'no arbiter index' OR a.arbiter LIKE '%,%')
  ORDER BY 1
$$;

-- no now() (or a like stable or volatile function, or interval arithmetic:
-- timestamptz - interval is STABLE) in the WHERE of an ON CONFLICT (index
-- predicate or DO UPDATE ... WHERE) on a distributed table: Citus refuses
-- it; the value is computed first and passed in
CREATE FUNCTION pg_temp.where_parts(clause text, kw text DEFAULT 'WHERE') RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  kws   text[] := ARRAY(SELECT upper(m[1]) FROM regexp_matches(clause, '\m(WHERE|DO|SET|RETURNING)\M', 'gi') m);
  parts text[] := regexp_split_to_array(clause, '\m(WHERE|DO|SET|RETURNING)\M', 'i');
BEGIN
  FOR k IN 1 .. coalesce(array_length(kws, 1), 0) LOOP
    IF kws[k] = kw THEN
      RETURN NEXT parts[k + 1];
    END IF;
  END LOOP;
END
$$;
CREATE FUNCTION pg_temp.v_conflict_now() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT DISTINCT 'ON CONFLICT ... WHERE calls ' || lower((regexp_match(w.part, '\m(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|current_timestamp|localtimestamp|current_date|current_time|make_interval|interval)\M', 'i'))[1])
         || ' on agent.' || s.tbl || ' in ' || s.fn
    FROM pg_temp.conflict_sites s
    JOIN pg_temp.plan p ON p.rel = to_regclass('agent.' || s.tbl) AND p.kind = 'distributed',
         LATERAL pg_temp.where_parts(s.target || ' ' || s.rest) w(part)
   WHERE w.part ~* '\m(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|current_timestamp|localtimestamp|current_date|current_time|make_interval|interval)\M'
  ORDER BY 1
$$;

-- likewise in DO UPDATE SET on a distributed or reference table (Citus:
-- "functions used in the DO UPDATE SET clause of INSERTs on distributed
-- tables must be marked IMMUTABLE"): now() goes into the VALUES, the SET
-- takes EXCLUDED's
CREATE FUNCTION pg_temp.v_conflict_set_now() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT DISTINCT 'ON CONFLICT ... DO UPDATE SET calls ' || lower((regexp_match(w.part, '\m(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|current_timestamp|localtimestamp|current_date|current_time)\M', 'i'))[1])
         || ' on agent.' || s.tbl || ' in ' || s.fn
    FROM pg_temp.conflict_sites s
    JOIN pg_temp.plan p ON p.rel = to_regclass('agent.' || s.tbl) AND p.kind IN ('distributed', 'reference'),
         LATERAL pg_temp.where_parts(s.target || ' ' || s.rest, 'SET') w(part)
   WHERE w.part ~* '\m(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|current_timestamp|localtimestamp|current_date|current_time)\M'
  ORDER BY 1
$$;

-- every INSERT of the SQL functions into a distributed table names
-- workspace_id (Citus routes the row by it before any trigger could fill it)
CREATE FUNCTION pg_temp.v_inserts() RETURNS SETOF text LANGUAGE sql AS $$
  WITH s AS (
    SELECT p.oid::regprocedure AS fn, stmt
      FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang AND l.lanname IN ('sql', 'plpgsql'),
           regexp_split_to_table(regexp_replace(p.prosrc, '--[^\n]*', '', 'g'), ';') stmt
     WHERE p.pronamespace = 'agent'::regnamespace),
  i AS (
    SELECT s.fn, m[1] AS tbl, m[2] AS cols
      FROM s, regexp_matches(s.stmt, '\mINSERT\s+INTO\s+agent\.(\w+)(?:\s+AS\s+\w+)?\s*(\([^)]*\))?', 'gi') m)
  SELECT DISTINCT 'INSERT without workspace_id into agent.' || i.tbl || ' in ' || i.fn
    FROM i JOIN pg_temp.plan p ON p.rel = to_regclass('agent.' || i.tbl) AND p.kind = 'distributed'
   WHERE i.cols IS NULL OR i.cols !~ '\mworkspace_id\M'
  ORDER BY 1
$$;

-- ---- the schema as installed -------------------------------------------
SELECT is((SELECT array_agg(v) FROM pg_temp.v_plan() v), NULL,
          'every table of schema agent is in agent.distribution_plan() exactly once, with a kind and a reason');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_not_null() v), NULL,
          'every distributed table has workspace_id NOT NULL');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_uniques() v), NULL,
          'every primary key and unique index of a distributed table holds workspace_id');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_fkeys() v), NULL,
          'every foreign key is composite on workspace_id between distributed tables, and none crosses kinds as Citus refuses');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_set_null() v), NULL,
          'no foreign key holding workspace_id has SET NULL or SET DEFAULT');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_sequences() v), NULL,
          'every sequence of the extension is the identity of a planned table');
SELECT cmp_ok((SELECT count(*) FROM pg_temp.conflict_sites WHERE target <> ''), '>=', 8::bigint,
              'the ON CONFLICT targets of the SQL functions are found');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_targets() v), NULL,
          'every ON CONFLICT target of the SQL functions matches exactly one unique index of its table');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_conflict_now() v), NULL,
          'no ON CONFLICT ... WHERE on a distributed table calls now() or a like function');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_inserts() v), NULL,
          'every INSERT of the SQL functions into a distributed table names workspace_id');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_conflict_set_now() v), NULL,
          'no ON CONFLICT ... DO UPDATE SET on a distributed or reference table calls now() or a like function');
SELECT ok((SELECT bool_and(kind = 'distributed') FROM pg_temp.plan
            WHERE rel IN ('agent.agents'::regclass, 'agent.runs'::regclass, 'agent.audit_log'::regclass)),
          'agents, runs and the audit log are distributed');
SELECT is((SELECT kind FROM agent.distribution_plan() LIMIT 1), 'reference',
          'the plan lists the reference tables first');
SELECT is((SELECT array_agg(table_name::text ORDER BY table_name::text) FROM agent.distribution_plan() WHERE kind = 'reference'),
          ARRAY['agent.access_config', 'agent.allowlist_tables', 'agent.comment_tables', 'agent.group_members', 'agent.providers',
                'agent.reader_workspaces', 'agent.relations', 'agent.resource_acl', 'agent.resource_tables',
                'agent.secrets', 'agent.templates'],
          'the reference tables: group_members, resource_acl and the configuration');

-- ---- each check catches an offender ------------------------------------
-- (tables and functions of this test only, in schema agent, rolled back)
SAVEPOINT offenders;
CREATE TABLE agent.zz_forgotten (id int GENERATED BY DEFAULT AS IDENTITY);
ALTER EXTENSION pg_agents ADD TABLE agent.zz_forgotten;
ALTER EXTENSION pg_agents ADD SEQUENCE agent.zz_forgotten_id_seq;
CREATE SEQUENCE agent.zz_loose;
ALTER EXTENSION pg_agents ADD SEQUENCE agent.zz_loose;
INSERT INTO pg_temp.plan SELECT 'agent.runs'::regclass, 'distributed', 'twice';
SELECT is((SELECT array_agg(v) FROM pg_temp.v_plan() v),
          ARRAY['in the plan 2 times: agent.runs', 'not in the plan: agent.zz_forgotten'],
          'the plan check names a forgotten table and a table listed twice');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_sequences() v),
          ARRAY['sequence of no planned table: agent.zz_forgotten_id_seq', 'sequence of no planned table: agent.zz_loose'],
          'the sequence check names the identity of a forgotten table and a loose sequence');
DELETE FROM pg_temp.plan WHERE reason = 'twice';
ALTER EXTENSION pg_agents DROP TABLE agent.zz_forgotten;
ALTER EXTENSION pg_agents DROP SEQUENCE agent.zz_forgotten_id_seq;
ALTER EXTENSION pg_agents DROP SEQUENCE agent.zz_loose;
DROP TABLE agent.zz_forgotten;
DROP SEQUENCE agent.zz_loose;

UPDATE pg_temp.plan SET kind = 'distributed' WHERE rel = 'agent.group_members'::regclass;
SELECT is((SELECT array_agg(v) FROM pg_temp.v_not_null() v),
          ARRAY['distributed without workspace_id NOT NULL: agent.group_members'],
          'the NOT NULL check names a distributed table whose workspace_id may be NULL');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_uniques() v),
          ARRAY['unique index without workspace_id: agent.group_members_pkey on agent.group_members'],
          'the key check names a primary key without workspace_id');
UPDATE pg_temp.plan SET kind = 'reference' WHERE rel = 'agent.group_members'::regclass;

CREATE TABLE agent.zz_a (
    workspace_id text NOT NULL,
    id           bigint NOT NULL,
    k            text,
    PRIMARY KEY (id, workspace_id),
    UNIQUE (k, workspace_id));
CREATE UNIQUE INDEX zz_a_id ON agent.zz_a (id);
CREATE UNIQUE INDEX zz_a_partial ON agent.zz_a (k) WHERE k IS NOT NULL;
CREATE TABLE agent.zz_b (
    workspace_id text NOT NULL,
    a_id         bigint,
    k            text,
    FOREIGN KEY (a_id) REFERENCES agent.zz_a (id),
    CONSTRAINT zz_b_crossed FOREIGN KEY (k, workspace_id) REFERENCES agent.zz_a (workspace_id, k),
    CONSTRAINT zz_b_set_null FOREIGN KEY (workspace_id, a_id) REFERENCES agent.zz_a (workspace_id, id) ON DELETE SET NULL (a_id),
    CONSTRAINT zz_b_to_agents FOREIGN KEY (workspace_id, a_id) REFERENCES agent.agents (workspace_id, id));
INSERT INTO pg_temp.plan VALUES ('agent.zz_a'::regclass, 'distributed', 'test'), ('agent.zz_b'::regclass, 'distributed', 'test');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_uniques() v),
          ARRAY['unique index without workspace_id: agent.zz_a_id on agent.zz_a',
                'unique index without workspace_id: agent.zz_a_partial on agent.zz_a'],
          'the key check names a unique index and a partial one without workspace_id');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_fkeys() v),
          ARRAY['foreign key not composite on workspace_id at the same position: zz_b_a_id_fkey on agent.zz_b -> agent.zz_a',
                'foreign key not composite on workspace_id at the same position: zz_b_crossed on agent.zz_b -> agent.zz_a'],
          'the foreign key check names a key by id alone and one with workspace_id at another position');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_set_null() v),
          ARRAY['SET NULL/SET DEFAULT on a key holding workspace_id: zz_b_set_null on agent.zz_b'],
          'the action check names a SET NULL on a key holding workspace_id');
UPDATE pg_temp.plan SET kind = 'reference' WHERE rel = 'agent.zz_b'::regclass;
UPDATE pg_temp.plan SET kind = 'local' WHERE rel = 'agent.zz_a'::regclass;
SELECT is((SELECT array_agg(v) FROM pg_temp.v_fkeys() v),
          ARRAY['foreign key from a reference table to a distributed table: zz_b_to_agents on agent.zz_b -> agent.agents',
                'foreign key from a reference table to a local table: zz_b_a_id_fkey on agent.zz_b -> agent.zz_a',
                'foreign key from a reference table to a local table: zz_b_crossed on agent.zz_b -> agent.zz_a',
                'foreign key from a reference table to a local table: zz_b_set_null on agent.zz_b -> agent.zz_a'],
          'the foreign key check names keys from a reference table to a distributed or a local one');
UPDATE pg_temp.plan SET kind = 'distributed' WHERE rel IN ('agent.zz_a'::regclass, 'agent.zz_b'::regclass);

-- ON CONFLICT targets: one without workspace_id (the old shares_user_uq),
-- one naming no index, one matching, and a cutoff taken with now()
CREATE FUNCTION agent.zz_upserts(p_ws text, p_agent bigint, p_trigger bigint) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO agent.shares (workspace_id, agent_id, user_id, level)
  VALUES (p_ws, p_agent, 'u', 'full')
  ON CONFLICT (agent_id, user_id) WHERE user_id IS NOT NULL DO UPDATE SET created_at = now();
  INSERT INTO agent.zz_a AS a (workspace_id, id, k) VALUES (p_ws, 1, 'k')
  ON CONFLICT (workspace_id) DO UPDATE SET k = excluded.k;
  INSERT INTO agent.zz_a AS a (workspace_id, id, k) VALUES (p_ws, 1, 'k')
  ON CONFLICT (k, workspace_id) DO UPDATE SET k = excluded.k WHERE a.id > 0;
  INSERT INTO agent.event_dedup AS d (workspace_id, trigger_id, fingerprint, seen_at)
  VALUES (p_ws, p_trigger, 'f', now())
  ON CONFLICT (workspace_id, trigger_id, fingerprint) DO UPDATE SET seen_at = excluded.seen_at
  WHERE d.seen_at <= now() - interval '10 minutes';
END
$f$;
DROP TABLE pg_temp.conflict_sites;
CREATE TEMP TABLE conflict_sites ON COMMIT DROP AS
  SELECT p.oid::regprocedure AS fn, c.tbl, btrim(regexp_replace(c.target, '\s+', ' ', 'g')) AS target, c.rest
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang AND l.lanname IN ('sql', 'plpgsql'),
         pg_temp.conflicts(p.prosrc) c
   WHERE p.pronamespace = 'agent'::regnamespace;
SELECT is((SELECT array_agg(v) FROM pg_temp.v_targets() v),
          ARRAY['ON CONFLICT (agent_id, user_id) WHERE user_id IS NOT NULL on agent.shares in agent.zz_upserts(text,bigint,bigint): error: there is no unique or exclusion constraint matching the ON CONFLICT specification',
                'ON CONFLICT (workspace_id) on agent.zz_a in agent.zz_upserts(text,bigint,bigint): error: there is no unique or exclusion constraint matching the ON CONFLICT specification'],
          'the target check names a target without workspace_id and one matching no index');
SELECT is((SELECT array_agg(v) FROM pg_temp.v_conflict_now() v),
          ARRAY['ON CONFLICT ... WHERE calls now on agent.event_dedup in agent.zz_upserts(text,bigint,bigint)'],
          'the conflict WHERE check names a cutoff taken with now()');
SELECT ok((SELECT array_agg(v) FROM pg_temp.v_conflict_set_now() v)
          @> ARRAY['ON CONFLICT ... DO UPDATE SET calls now on agent.shares in agent.zz_upserts(text,bigint,bigint)'],
          'the DO UPDATE SET check names a now() in the SET');
CREATE FUNCTION agent.zz_insert(p_run bigint) RETURNS void LANGUAGE sql AS $f$
  INSERT INTO agent.approvals (run_id, approval_key, tool, expires_at) VALUES (p_run, 'k', 't', now());
  INSERT INTO agent.approvals AS a (workspace_id, run_id, approval_key, tool, expires_at)
  SELECT r.workspace_id, r.id, 'k', 't', now() FROM agent.runs r WHERE r.id = p_run;
$f$;
SELECT is((SELECT array_agg(v) FROM pg_temp.v_inserts() v),
          ARRAY['INSERT without workspace_id into agent.approvals in agent.zz_insert(bigint)'],
          'the INSERT check names an INSERT that leaves workspace_id to the trigger');
ROLLBACK TO SAVEPOINT offenders;

-- ---- ids: a node's range --------------------------------------------------
SAVEPOINT ids;
SELECT is((SELECT count(*) FROM agent.set_id_range() WHERE min_value = 1 AND max_value = (1::bigint << 48) - 1),
          (SELECT count(*) FROM pg_class c JOIN pg_depend e ON e.objid = c.oid AND e.deptype = 'e'
                                                             AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_agents')
            WHERE c.relkind = 'S'),
          'without Citus the node is the coordinator, 0: ids 1 to 2^48 - 1');
SELECT is((SELECT count(*) FROM agent.set_id_range(3) WHERE min_value = (3::bigint << 48) + 1
                                                         AND max_value = (4::bigint << 48) - 1),
          (SELECT count(*) FROM pg_class c JOIN pg_depend e ON e.objid = c.oid AND e.deptype = 'e'
                                                             AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_agents')
            WHERE c.relkind = 'S'),
          'set_id_range(3) puts every sequence of the extension into node 3''s range');
INSERT INTO agent.agents (workspace_id, owner_id, name) VALUES ('ws-scale-ids', 'u1', 'ids');
SELECT ok((SELECT id FROM agent.agents WHERE workspace_id = 'ws-scale-ids') = (3::bigint << 48) + 1,
          'a new agent takes the first id of node 3');
SELECT throws_ok($$SELECT agent.set_id_range(32768)$$, '22023', 'invalid node number 32768',
                 'a node number past the 48-bit ranges is refused');
ROLLBACK TO SAVEPOINT ids;

-- ---- the plan and the ranges are the DBA's -----------------------------------
CREATE ROLE zz_scaling_nobody;
SET LOCAL ROLE zz_scaling_nobody;
SELECT throws_ok($$SELECT * FROM agent.distribution_plan()$$, '42501', NULL,
                 'a role with no grants may not read the plan');
RESET ROLE;
SET LOCAL ROLE agents_app;
SELECT throws_ok($$SELECT * FROM agent.set_id_range(1)$$, '42501', NULL,
                 'the application may not move the id ranges');
SELECT throws_ok($$SELECT * FROM agent.distribution_plan()$$, '42501', NULL,
                 'the application may not read the plan');
RESET ROLE;
SELECT agent.set_identity('agent:924001', 'ws-scale-a');
SET LOCAL ROLE agents_tool;
SELECT throws_ok($$SELECT * FROM agent.set_id_range(1)$$, '42501', NULL,
                 'an agent session may not move the id ranges');
RESET ROLE;

-- ---- the audit log's workspace: '' for none, never NULL -------------------
SELECT agent.set_identity('system');
SELECT agent._audit_event('scaling.check', 'success', 'test', '924');
SELECT is((SELECT workspace_id FROM agent.audit_log WHERE action = 'scaling.check' AND target_id = '924'), '',
          'an action of no workspace is audited with workspace_id ''''');

-- ---- runs.trigger_id: cleared by a trigger, not by SET NULL ---------------
-- (two workspaces: the same trigger id in another workspace is left alone)
INSERT INTO agent.agents (id, workspace_id, owner_id, name)
VALUES (924001, 'ws-scale-a', 'u1', 'scaling a'), (924002, 'ws-scale-b', 'u2', 'scaling b');
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind)
VALUES (924011, 'ws-scale-a', 924001, 'api'), (924012, 'ws-scale-b', 924002, 'api');
INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, regime, origin)
VALUES (924021, 'ws-scale-a', 924001, 924011, 'autonomous', 'api'),
       (924022, 'ws-scale-b', 924002, 924012, 'autonomous', 'api');
INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, parent_run_id, depth, regime, origin)
VALUES (924023, 'ws-scale-a', 924001, 924011, 924021, 1, 'autonomous', 'delegation');
SELECT throws_ok($$INSERT INTO agent.runs (id, workspace_id, agent_id, parent_run_id, regime, origin)
                   VALUES (924024, 'ws-scale-b', 924002, 924021, 'autonomous', 'delegation')$$,
                 '23503', NULL, 'a child run in another workspace than its parent is refused by the composite key');
SET LOCAL pg_agents.workspace = 'ws-scale-a';
SET LOCAL ROLE agents_app;
SELECT lives_ok($$DELETE FROM agent.triggers WHERE workspace_id = 'ws-scale-a' AND id = 924011$$,
                'the application deletes a trigger that has runs (it may not update agent.runs)');
RESET ROLE;
RESET pg_agents.workspace;
SELECT is((SELECT array_agg(id::text || ':' || coalesce(trigger_id::text, 'null') ORDER BY id) FROM agent.runs
            WHERE id BETWEEN 924021 AND 924023),
          ARRAY['924021:null', '924022:924012', '924023:null'],
          'its runs stay, trigger_id cleared; the other workspace''s run keeps its trigger');
SELECT lives_ok($$DELETE FROM agent.agents WHERE workspace_id = 'ws-scale-b' AND id = 924002$$,
                'deleting an agent deletes its triggers and their runs together');
SELECT is((SELECT count(*) FROM agent.runs WHERE id BETWEEN 924021 AND 924023), 2::bigint,
          'the deleted agent''s run is gone, the others stay');

SELECT * FROM finish();
ROLLBACK;
