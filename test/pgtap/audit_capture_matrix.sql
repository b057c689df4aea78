-- Capture matrix: every action under every kind of actor, types to jsonb,
-- changed-columns-only updates, no-op updates, TOASTed values.
BEGIN;
SELECT plan(25);

CREATE TABLE public.audit_tm (id int PRIMARY KEY, workspace_id text, owner_id text, b boolean, i2 smallint,
  i8 bigint, f float8, n numeric, t text, vc varchar(10), ch char(3), nm name, j json, jb jsonb,
  ts timestamptz, d date, u uuid, arr int[], big text);
SELECT agent.audit_table('public.audit_tm', NULL, 'owner_id');

SELECT agent.set_identity(a, 'ws-tm', r, s, obo)
  FROM (VALUES ('agent:9', 77::bigint, 'tool', 'erin')) v(a, r, s, obo);
INSERT INTO audit_tm VALUES (1, 'ws-tm', 'erin', true, 2, 9007199254740993, 1.5, 'NaN', 't', 'vc', 'ab', 'nm',
  '{"x": [1, 2]}', '{"y": {"z": null}}', '2026-01-02 03:04:05+00', '2026-01-02',
  '550e8400-e29b-41d4-a716-446655440000', '{1,2}', repeat('q', 100000));
SELECT is((SELECT changes FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'insert') - 'big',
  '{"id": 1, "workspace_id": "ws-tm", "owner_id": "erin", "b": true, "i2": 2, "i8": 9007199254740993, "f": 1.5,
    "n": "NaN", "t": "t", "vc": "vc", "ch": "ab ", "nm": "nm", "j": {"x": [1, 2]}, "jb": {"y": {"z": null}},
    "ts": "2026-01-02T03:04:05+00:00", "d": "2026-01-02", "u": "550e8400-e29b-41d4-a716-446655440000",
    "arr": "{1,2}"}'::jsonb, 'insert: every column, typed like to_jsonb');
SELECT is((SELECT length(changes ->> 'big') FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'insert'),
  2048 + length('...[TRUNCATED 100000 bytes]'), 'a TOASTed 100 kB value is cut');
SELECT is((SELECT row(actor_kind, actor_id, on_behalf_of, run_id, surface, owner_id, workspace_id, target_id, status)::text
             FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'insert'),
          '(agent,9,erin,77,tool,erin,ws-tm,1,success)', 'identity columns');

-- updates: only changed columns, each {old, new}
UPDATE audit_tm SET b = false WHERE id = 1;
SELECT is((SELECT changes FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update' ORDER BY id DESC LIMIT 1),
          '{"b": {"old": true, "new": false}}'::jsonb, 'one changed column');
UPDATE audit_tm SET t = NULL, jb = jb || '{"k": 1}' WHERE id = 1;
SELECT is((SELECT changes FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update' ORDER BY id DESC LIMIT 1),
          '{"t": {"old": "t", "new": null}, "jb": {"old": {"y": {"z": null}}, "new": {"k": 1, "y": {"z": null}}}}'::jsonb,
          'to NULL, and a jsonb change');
UPDATE audit_tm SET t = 'back' WHERE id = 1;
SELECT is((SELECT changes FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update' ORDER BY id DESC LIMIT 1),
          '{"t": {"old": null, "new": "back"}}'::jsonb, 'from NULL');
SELECT is((SELECT summary FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update' ORDER BY id DESC LIMIT 1),
          'update public.audit_tm 1: t', 'summary names the changed columns');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update'), 3, 'three updates');
UPDATE audit_tm SET b = false, t = 'back', big = big WHERE id = 1;
UPDATE audit_tm SET id = id;
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update'), 3,
          'updates that change nothing (TOASTed column included) write nothing');
UPDATE audit_tm SET big = big || 'r' WHERE id = 1;
SELECT is((SELECT jsonb_object_keys(changes) FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update' ORDER BY id DESC LIMIT 1),
          'big', 'a change to a TOASTed value is seen');
UPDATE audit_tm SET id = 2 WHERE id = 1;
SELECT is((SELECT row(target_id, changes::text)::text FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'update' ORDER BY id DESC LIMIT 1),
          '(2,"{""id"": {""new"": 2, ""old"": 1}}")', 'a key change: target_id is the new key');

-- delete: the old row
DELETE FROM audit_tm WHERE id = 2;
SELECT is((SELECT changes ->> 't' FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'delete'), 'back',
          'delete records the old row');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'audit_tm' AND action = 'delete'), 1, 'one delete');

-- multi-row statements write one row per changed row
INSERT INTO audit_tm (id, workspace_id) SELECT g, 'ws-tm' FROM generate_series(10, 19) g;
UPDATE audit_tm SET t = 'x' WHERE id BETWEEN 10 AND 14;
DELETE FROM audit_tm WHERE id >= 10;
SELECT results_eq($$SELECT action, count(*)::int FROM agent.audit_log WHERE target_type = 'audit_tm'
                     AND target_id::int >= 10 GROUP BY action ORDER BY action$$,
                  $$VALUES ('delete', 10), ('insert', 10), ('update', 5)$$, 'one row per changed row');

-- rolled back changes leave nothing
SAVEPOINT sp;
INSERT INTO audit_tm (id) VALUES (50);
ROLLBACK TO SAVEPOINT sp;
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE target_type = 'audit_tm' AND target_id = '50'), 0,
          'a rolled-back change leaves no audit row');

-- a statement failing half-way (row 2 cannot be converted) leaves the log
-- usable: the guard still answers TRUNCATE, DDL on the log still works
SAVEPOINT sp2;
SELECT throws_ok($$INSERT INTO audit_tm (id, j) VALUES (70, '{}'), (71, '"\u0000"')$$, '22P05', NULL,
                 'an audit row that cannot be built fails the change');
ROLLBACK TO SAVEPOINT sp2;
SELECT throws_ok($$TRUNCATE agent.audit_log$$, '42501', 'agent.audit_log is append-only',
                 'after it, TRUNCATE of the log meets the append-only guard');

-- schema changes are picked up
ALTER TABLE audit_tm ADD COLUMN extra text, DROP COLUMN arr;
INSERT INTO audit_tm (id, extra) VALUES (60, 'new column');
SELECT is((SELECT row(changes ? 'arr', changes ->> 'extra')::text FROM agent.audit_log
            WHERE target_type = 'audit_tm' AND target_id = '60'), '(f,"new column")', 'ALTER TABLE is picked up');

-- target_type and settings updated by re-running audit_table
SELECT agent.audit_table('public.audit_tm', 'thing');
INSERT INTO audit_tm (id) VALUES (61);
SELECT is((SELECT target_type FROM agent.audit_log WHERE target_id = '61' AND action = 'insert' ORDER BY id DESC LIMIT 1),
          'thing', 're-running audit_table changes target_type');
SELECT is((SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 'public.audit_tm'::regclass AND tgname LIKE 'pg_agents_audit%'), 3,
          'and does not duplicate triggers');

-- partitioned table
CREATE TABLE public.audit_tp (id int, region text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE public.audit_tp_eu PARTITION OF public.audit_tp FOR VALUES IN ('eu');
SELECT agent.audit_table('public.audit_tp', 'region_row');
INSERT INTO audit_tp VALUES (1, 'eu');
SELECT is((SELECT target_id FROM agent.audit_log WHERE target_type = 'region_row'), '["1","eu"]',
          'partitioned tables: rows of partitions are recorded');

-- table without a primary key: no target_id, still recorded
CREATE TABLE public.audit_tnk (v text);
SELECT agent.audit_table('public.audit_tnk');
INSERT INTO audit_tnk VALUES ('a');
SELECT is((SELECT row(target_id IS NULL, changes::text)::text FROM agent.audit_log WHERE target_type = 'audit_tnk'),
          '(t,"{""v"": ""a""}")', 'no primary key: target_id NULL');

-- the extension's own events carry the session identity
SELECT agent._audit_event('agent.grant', 'denied', 'page', 'p1', NULL, 'owner1', '{"access": "edit"}', 'grant refused', 'not_granted');
SELECT is((SELECT row(actor_kind, actor_id, run_id, status, error_code, target_type, target_id, owner_id, workspace_id, inputs::text)::text
             FROM agent.audit_log WHERE action = 'agent.grant' ORDER BY id DESC LIMIT 1),
          '(agent,9,77,denied,not_granted,page,p1,owner1,ws-tm,"{""access"": ""edit""}")', '_audit_event');

-- past the payload budget of a row, the columns cut are the last ones of the
-- row (column order), whatever the order of their names
DO $$
BEGIN
  EXECUTE 'CREATE TABLE public.audit_tm_budget (id int PRIMARY KEY, ' ||
          (SELECT string_agg(format('%I text', repeat('k', 40 - g)), ', ' ORDER BY g)
             FROM generate_series(1, 35) g) || ')';
END $$;
SELECT agent.audit_table('public.audit_tm_budget');
DO $$
BEGIN
  EXECUTE 'INSERT INTO public.audit_tm_budget VALUES (1, ' ||
          (SELECT string_agg(quote_literal(repeat('v', 3000)), ', ') FROM generate_series(1, 35)) || ')';
END $$;
SELECT is((SELECT changes ->> repeat('k', 5) FROM agent.audit_log WHERE target_type = 'audit_tm_budget'),
          '[TRUNCATED]', 'past the payload budget, the last column of the row is cut');
SELECT is((SELECT length(changes ->> repeat('k', 39)) FROM agent.audit_log WHERE target_type = 'audit_tm_budget'),
          2048 + length('...[TRUNCATED 3000 bytes]'), 'and the first one is kept');

SELECT * FROM finish();
ROLLBACK;
