-- Audit storage for volume: the rows of a statement buffered and written
-- together (multi-insert), their fate tied to their (sub)transaction, the
-- monthly partitions made ahead, retention by dropping partitions, and the
-- append-only guard on every partition, attacks included.
BEGIN;
SELECT plan(58);

-- ---------------------------------------------------------------- setup
-- the application role (the documented grants: membership of agents_app),
-- a role with no grants, and a non-superuser owner for the owner cases
CREATE ROLE audit_bulk_app NOLOGIN IN ROLE agents_app;
CREATE ROLE audit_bulk_nobody NOLOGIN;
CREATE ROLE audit_bulk_owner NOLOGIN;
GRANT USAGE, CREATE ON SCHEMA public TO audit_bulk_app, audit_bulk_nobody;
CREATE TABLE public.audit_bulk_items (id int PRIMARY KEY, workspace_id text, title text,
                                      api_token text, note text, doc json);
ALTER TABLE public.audit_bulk_items OWNER TO audit_bulk_app;
CREATE TABLE public.audit_bulk_side (id int PRIMARY KEY, workspace_id text);
SELECT agent.audit_table('public.audit_bulk_side', 'bulk_side');

-- --------------------------------------------- a 10,000-row statement, whole
SET LOCAL ROLE audit_bulk_app;
SELECT lives_ok($$SELECT agent.audit_table('public.audit_bulk_items', 'bulk')$$, 'the application audits its table');
-- an agent session of the application
SELECT agent.set_identity('agent:77', 'ws-bulk-a', run_id => 4242, surface => 'tool');
SELECT lives_ok($$INSERT INTO public.audit_bulk_items (id, workspace_id, title, api_token, note)
                  SELECT g, CASE WHEN g % 2 = 0 THEN 'ws-bulk-a' ELSE 'ws-bulk-b' END, 'item ' || g,
                         'ghp_' || md5(g::text), 'Authorization: Bearer abc.DEF-' || g
                    FROM generate_series(1, 10000) g$$,
                'one INSERT of 10,000 rows');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk' AND action = 'insert'), 10000,
          'every row of the statement has its audit row');
SELECT is((SELECT count(DISTINCT target_id)::int FROM agent.audit_log WHERE target_type = 'bulk'), 10000,
          'one per row, none twice');
SELECT is((SELECT count(DISTINCT id)::int FROM agent.audit_log WHERE target_type = 'bulk'), 10000,
          'each with its own id');
SELECT ok((SELECT bool_and(actor_kind = 'agent' AND actor_id = '77' AND run_id = 4242 AND surface = 'tool'
                           AND db_user = session_user)
             FROM agent.audit_log WHERE target_type = 'bulk'),
          'each with the identity of the session');
SELECT is((SELECT count(*)::int FROM agent.audit_log
            WHERE target_type = 'bulk' AND (changes::text LIKE '%ghp_%' OR changes::text LIKE '%DEF-%')), 0,
          'redaction in bulk: no token, no bearer string stored');
SELECT is((SELECT count(*)::int FROM agent.audit_log
            WHERE target_type = 'bulk' AND changes ->> 'api_token' = '[REDACTED]'
              AND changes ->> 'note' = 'Authorization: Bearer [REDACTED]'), 10000,
          'redaction in bulk: every row redacted');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk' AND workspace_id = 'ws-bulk-a'), 5000,
          'rows carry their own workspace');
SELECT is((SELECT count(DISTINCT tableoid)::int FROM agent.audit_log WHERE target_type = 'bulk'), 1,
          'they are in one partition');
SELECT is((SELECT c.relname::text FROM agent.audit_log l JOIN pg_class c ON c.oid = l.tableoid
            WHERE target_type = 'bulk' LIMIT 1),
          'audit_log_' || to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM'), 'the partition of this month');

-- ------------------------------------------------------------ scoping
SET LOCAL ROLE audit_bulk_app;
SELECT agent.set_identity('user:ann', 'ws-bulk-b');
SELECT is((SELECT count(*)::int FROM agent.audit_events(target_type => 'bulk', lim => 10000)), 5000,
          'audit_events: the other workspace sees its 5,000 rows');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk'), 5000,
          'RLS: a direct SELECT sees the same 5,000');
SELECT is((SELECT array_agg(DISTINCT workspace_id) FROM agent.audit_log WHERE target_type = 'bulk'), ARRAY['ws-bulk-b'],
          'and none of ws-bulk-a');
SELECT throws_ok(format('SELECT count(*) FROM agent.%I', 'audit_log_' || to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM')),
                 '42501', NULL, 'a partition read directly: refused (no way around the policy)');
RESET ROLE;

-- -------------------------------------- a statement that fails midway
SAVEPOINT s_fail;
-- row 4,500 holds a json value jsonb refuses: its audit row cannot be
-- built after 4,000 rows were already written in batches
SELECT throws_ok($$INSERT INTO public.audit_bulk_items (id, workspace_id, title, doc)
                   SELECT 20000 + g, 'ws-bulk-a', 'fail ' || g,
                          CASE WHEN g = 4500 THEN '{"x": "\u0000"}'::json ELSE '{"x": 1}'::json END
                     FROM generate_series(1, 5000) g$$,
                 NULL, NULL, 'a 5,000-row INSERT failing at row 4,500');
SELECT is((SELECT count(*)::int FROM agent.audit_log
            WHERE target_type = 'bulk' AND target_id::int BETWEEN 20001 AND 25000), 0,
          'no audit row of it remains, not even of the batches written before the error');
ROLLBACK TO SAVEPOINT s_fail;

-- ------------------------------------------- savepoints and nested statements
-- rows buffered in a savepoint (the statement trigger disabled: they wait
-- for the next write) go with it when it rolls back
ALTER TABLE public.audit_bulk_side DISABLE TRIGGER pg_agents_audit_stmt;
SAVEPOINT s1;
INSERT INTO public.audit_bulk_side SELECT g, 'ws-bulk-a' FROM generate_series(1, 300) g;
ROLLBACK TO SAVEPOINT s1;
SAVEPOINT s2;
INSERT INTO public.audit_bulk_side SELECT g, 'ws-bulk-a' FROM generate_series(1001, 1200) g;
RELEASE SAVEPOINT s2;
SELECT agent.set_identity('system');
SELECT agent._audit_event('x.bulk_flush');   -- writes what waits in this (sub)transaction
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk_side' AND target_id::int <= 300), 0,
          'a rolled-back savepoint drops its buffered rows');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk_side' AND target_id::int > 1000), 200,
          'a released savepoint hands its buffered rows to its parent');
ALTER TABLE public.audit_bulk_side ENABLE TRIGGER pg_agents_audit_stmt;

-- a trigger of the audited table runs a statement on another audited table
-- inside an exception block that fails: the inner rows go, the outer rows
-- (buffered before the inner subtransaction began) stay
CREATE FUNCTION pg_temp.audit_bulk_nested() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    INSERT INTO public.audit_bulk_side VALUES (100000 + NEW.id, 'ws-bulk-a');
    RAISE EXCEPTION 'inner failure';
  EXCEPTION WHEN raise_exception THEN
    NULL;
  END;
  RETURN NULL;
END
$$;
CREATE TRIGGER zz_audit_bulk_nested AFTER INSERT ON public.audit_bulk_items
  FOR EACH ROW EXECUTE FUNCTION pg_temp.audit_bulk_nested();
INSERT INTO public.audit_bulk_items (id, workspace_id, title)
  SELECT 30000 + g, 'ws-bulk-a', 'nested ' || g FROM generate_series(1, 1500) g;
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk' AND target_id::int > 30000), 1500,
          'nested statements in failed subtransactions: the outer statement''s 1,500 rows all written');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk_side' AND target_id::int > 100000), 0,
          'and none of the rolled-back inner statements');
DROP TRIGGER zz_audit_bulk_nested ON public.audit_bulk_items;

-- ------------------------------------------------------ partitions ahead
SELECT cmp_ok(agent.maintain_audit(6), '>=', 3, 'maintain_audit(6) makes the partitions up to six months ahead');
SELECT ok(to_regclass(format('agent.audit_log_%s', to_char((now() AT TIME ZONE 'UTC') + interval '6 months', 'YYYY_MM'))) IS NOT NULL,
          'the partition of the sixth month ahead exists');
SELECT is(agent.maintain_audit(6), 0, 'running it again makes nothing');
SELECT is((SELECT string_agg(tgname || '/' || tgenabled::text, ',' ORDER BY tgname) FROM pg_trigger
            WHERE tgrelid = to_regclass(format('agent.audit_log_%s', to_char((now() AT TIME ZONE 'UTC') + interval '6 months', 'YYYY_MM')))),
          'audit_log_append_only/A,audit_log_append_only_row/A,audit_log_no_truncate/A',
          'a new partition carries the guard, enabled ALWAYS');

-- a row with no monthly partition lands in the default one, and maintenance
-- moves it (same id) into the partition it makes for its month
SELECT agent._audit_event('x.bulk_aged');
SELECT agent._audit_backdate(array_agg(id), '200 days') FROM agent.audit_log WHERE action = 'x.bulk_aged';
SELECT is((SELECT tableoid::regclass::text FROM agent.audit_log WHERE action = 'x.bulk_aged'), 'agent.audit_log_default',
          'a row of a month without partition is kept in the default partition');
CREATE TEMP TABLE audit_bulk_aged AS SELECT * FROM agent.audit_log WHERE action = 'x.bulk_aged';
SELECT cmp_ok(agent.maintain_audit(), '>=', 1, 'maintenance makes the partition of its month');
SELECT is((SELECT tableoid::regclass::text FROM agent.audit_log WHERE action = 'x.bulk_aged'),
          format('agent.audit_log_%s', to_char((now() - interval '200 days') AT TIME ZONE 'UTC', 'YYYY_MM')),
          'and moves the row there');
SELECT is((SELECT l::text FROM agent.audit_log l WHERE action = 'x.bulk_aged'),
          (SELECT a::text FROM audit_bulk_aged a), 'unchanged: same id, same content');

-- ------------------------------------------------ purge by partition drop
SET LOCAL pg_agents.audit_retention_days = 36500;
SELECT agent._audit_event('x.bulk_old');
SELECT agent._audit_event('x.bulk_old');
SELECT agent._audit_backdate(array_agg(id), '430 days') FROM agent.audit_log WHERE action = 'x.bulk_old';
SELECT agent.maintain_audit();
SELECT ok(to_regclass(format('agent.audit_log_%s', to_char((now() - interval '430 days') AT TIME ZONE 'UTC', 'YYYY_MM'))) IS NOT NULL,
          'with a long retention, the partition of a 430-day-old row is made');
SET LOCAL pg_agents.audit_retention_days = 365;
SELECT is(agent.purge_audit(), 2::bigint, 'purge_audit removes the two rows past retention');
SELECT ok(to_regclass(format('agent.audit_log_%s', to_char((now() - interval '430 days') AT TIME ZONE 'UTC', 'YYYY_MM'))) IS NULL,
          'by dropping their partition whole');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'audit.purge'
                   AND inputs @> '{"deleted": 2}' AND (inputs ->> 'dropped_partitions')::int >= 1),
          'the purge is audited with the partitions it dropped');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk'), 11500, 'younger rows stay');

-- ------------------------------------- append-only on every partition
CREATE TEMP TABLE audit_bulk_part AS
  SELECT format('agent.audit_log_%s', to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM')) AS p;
GRANT SELECT ON audit_bulk_part TO PUBLIC;
SELECT throws_ok(format('UPDATE %s SET summary = %L', p, 'x'), '42501', 'agent.audit_log is append-only',
                 'superuser: UPDATE of a partition refused') FROM audit_bulk_part;
SELECT throws_ok(format('DELETE FROM %s', p), '42501', 'agent.audit_log is append-only',
                 'superuser: DELETE from a partition refused') FROM audit_bulk_part;
SELECT throws_ok(format('TRUNCATE %s', p), '42501', 'agent.audit_log is append-only',
                 'superuser: TRUNCATE of a partition refused') FROM audit_bulk_part;
SELECT throws_ok('TRUNCATE agent.audit_log_default', '42501', 'agent.audit_log is append-only',
                 'superuser: TRUNCATE of the default partition refused');
SET LOCAL session_replication_role = replica;
SELECT throws_ok(format('DELETE FROM %s', p), '42501', 'agent.audit_log is append-only',
                 'also with session_replication_role = replica') FROM audit_bulk_part;
SET LOCAL session_replication_role = origin;
-- a partition's owner (not a superuser), even after granting itself
SELECT lives_ok(format('ALTER TABLE %s OWNER TO audit_bulk_owner', p), 'a partition given to another owner')
  FROM audit_bulk_part;
SET LOCAL ROLE audit_bulk_owner;
SELECT throws_ok(format('INSERT INTO %s (actor_kind, action) VALUES (%L, %L)', p, 'human', 'forged'),
                 '42501', NULL, 'partition owner: INSERT refused') FROM audit_bulk_part;
SELECT lives_ok(format('GRANT UPDATE, DELETE, TRUNCATE ON %s TO audit_bulk_owner', p), 'which grants itself the rest')
  FROM audit_bulk_part;
SELECT throws_ok(format('DELETE FROM %s', p), '42501', 'agent.audit_log is append-only',
                 'partition owner: DELETE still refused') FROM audit_bulk_part;
SELECT throws_ok(format('TRUNCATE %s', p), '42501', 'agent.audit_log is append-only',
                 'partition owner: TRUNCATE still refused') FROM audit_bulk_part;
RESET ROLE;
-- the application role
SET LOCAL ROLE audit_bulk_app;
SELECT throws_ok(format('INSERT INTO %s (actor_kind, action) VALUES (%L, %L)', p, 'human', 'forged'),
                 '42501', NULL, 'app: INSERT into a partition refused') FROM audit_bulk_part;
SELECT throws_ok(format('DELETE FROM %s', p), '42501', NULL, 'app: DELETE from a partition refused') FROM audit_bulk_part;

-- ----------------------------------------------------------- attacks
-- the application tries to make its own table a partition of the log
-- (rows it could then change at will, read by everybody's audit_events)
CREATE TABLE public.audit_bulk_fake (LIKE agent.audit_log);
SELECT throws_ok($$ALTER TABLE agent.audit_log ATTACH PARTITION public.audit_bulk_fake
                   FOR VALUES FROM ('2000-01-01') TO ('2000-02-01')$$,
                 '42501', NULL, 'app: attaching its own table as a partition fails');
SELECT throws_ok($$CREATE TABLE agent.audit_log_2000_01 PARTITION OF agent.audit_log
                   FOR VALUES FROM ('2000-01-01') TO ('2000-02-01')$$,
                 '42501', NULL, 'app: creating a partition in schema agent fails');
SELECT throws_ok($$CREATE TABLE public.audit_bulk_part2 PARTITION OF agent.audit_log
                   FOR VALUES FROM ('2000-01-01') TO ('2000-02-01')$$,
                 '42501', NULL, 'app: creating a partition of the log elsewhere fails');
SELECT throws_ok('ALTER TABLE agent.audit_log DETACH PARTITION agent.audit_log_default',
                 '42501', NULL, 'app: detaching a partition fails');
SELECT throws_ok('SELECT agent.maintain_audit()', '42501', NULL, 'app: maintenance is not the application''s');
RESET ROLE;
SET LOCAL ROLE audit_bulk_nobody;
SELECT throws_ok($$CREATE TABLE public.audit_bulk_part3 PARTITION OF agent.audit_log DEFAULT$$,
                 '42501', NULL, 'a role with no grants cannot add a partition either');
RESET ROLE;

-- ------------------------------------------- indexes of the log kept open
-- The writer keeps the partition's indexes described from one statement to
-- the next: an index made on the log in between gets the rows of the next
-- statement, a dropped one is no longer written.
CREATE FUNCTION pg_temp.audit_bulk_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; o text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP o := o || l || E'\n'; END LOOP;
  RETURN o;
END $$;
SELECT agent.set_identity('agent:78', 'ws-bulk-a', run_id => 5151);
INSERT INTO public.audit_bulk_side VALUES (9001, 'ws-bulk-a');
INSERT INTO public.audit_bulk_side VALUES (9002, 'ws-bulk-a');
CREATE INDEX audit_bulk_probe ON agent.audit_log (summary);
INSERT INTO public.audit_bulk_side VALUES (9003, 'ws-bulk-a');
INSERT INTO public.audit_bulk_side VALUES (9004, 'ws-bulk-a');
SET LOCAL enable_seqscan = off;
SELECT ok(pg_temp.audit_bulk_plan($$SELECT count(*) FROM agent.audit_log
                                    WHERE summary = 'insert public.audit_bulk_side 9004'$$) LIKE '%Index%summary_idx%',
          'a read by summary goes through the index made between the statements');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE summary IN ('insert public.audit_bulk_side 9003',
                                                                        'insert public.audit_bulk_side 9004')), 2,
          'which has the rows of the statements after it');
SELECT ok(pg_temp.audit_bulk_plan('SELECT count(*) FROM agent.audit_log WHERE run_id = 5151') LIKE '%Index%run_id_idx%',
          'a read by run goes through the partial run index');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE run_id = 5151), 4,
          'which has the rows of the run written with the indexes kept open');
RESET enable_seqscan;
DROP INDEX agent.audit_bulk_probe;
INSERT INTO public.audit_bulk_side VALUES (9005, 'ws-bulk-a');
SELECT lives_ok($$INSERT INTO public.audit_bulk_side VALUES (9006, 'ws-bulk-a')$$,
                'once the index is dropped, the next statements write without it');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'bulk_side' AND target_id IN ('9005', '9006')), 2,
          'and their rows are there');

SELECT * FROM finish();
ROLLBACK;
