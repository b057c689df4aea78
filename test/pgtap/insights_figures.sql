-- Insights: every figure equals a direct query over agent.runs / agent.run_steps
-- for the same period, on a fixture of runs spread over days, statuses and models.
BEGIN;
SELECT plan(17);

SELECT agent.create_agent('ws-if', 'ifown', 'Insights agent') AS aid \gset
SELECT agent.create_agent('ws-if', 'ifown', 'Other agent') AS other \gset
SELECT agent.share(:aid, 'user:if-edit', 'edit', 'ifown');
SELECT agent.share(:aid, 'user:if-full', 'full', 'ifown');
SELECT agent.grant(:aid, 'page', 'p-read', 'read', 'ifown');
SELECT agent.grant(:aid, 'page', 'p-unused', 'read', 'ifown');
SELECT agent.grant(:aid, 'collection', 'c-edit', 'edit', 'ifown');

-- 60 runs over 12 days: statuses, models, tokens and origins vary deterministically
INSERT INTO agent.runs (agent_id, regime, origin, requested_by, status, model, tokens_in, tokens_out, tokens_total,
                        created_at, started_at, finished_at)
SELECT CASE WHEN i % 7 = 0 THEN :other ELSE :aid END,
       CASE WHEN i % 3 = 0 THEN 'manual' ELSE 'autonomous' END,
       CASE WHEN i % 3 = 0 THEN 'chat' WHEN i % 3 = 1 THEN 'schedule' ELSE 'event' END,
       'ifown',
       (ARRAY['succeeded', 'succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired', 'queued', 'succeeded'])[1 + i % 8],
       CASE WHEN i % 4 = 0 THEN NULL WHEN i % 4 = 1 THEN 'model-a' ELSE 'model-b' END,
       10 * i, i, 11 * i + 1000,   -- tokens_total deliberately differs: insights count own tokens
       timestamptz '2026-03-01 00:00:00+00' + (i * interval '5 hours 7 minutes'),
       timestamptz '2026-03-01 00:00:00+00' + (i * interval '5 hours 7 minutes') + interval '1 minute',
       CASE WHEN i % 8 <> 6 THEN timestamptz '2026-03-01 00:00:00+00' + (i * interval '5 hours 7 minutes') + interval '3 minutes' END
  FROM generate_series(1, 60) i;
UPDATE agent.runs SET root_run_id = id WHERE root_run_id IS NULL AND agent_id IN (:aid, :other);
-- steps: reads of p-read in some runs, c-edit read and written, p-extra read (manual), one failed read
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status)
SELECT r.id, 1, 'read', 'read_resource', jsonb_build_object('resource_type', 'page', 'resource_id', 'p-read'),
       jsonb_build_object('resource_type', 'page', 'resource_id', 'p-read'), 'ok'
  FROM agent.runs r WHERE r.agent_id = :aid AND r.tokens_in % 20 = 0;
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status)
SELECT r.id, 2, 'read', 'read_resource', jsonb_build_object('resource_type', 'page', 'resource_id', 'p-read'),
       jsonb_build_object('resource_type', 'page', 'resource_id', 'p-read'), 'ok'
  FROM agent.runs r WHERE r.agent_id = :aid AND r.tokens_in % 40 = 0;
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status)
SELECT r.id, 3, 'write', 'write_resource', jsonb_build_object('resource_type', 'collection', 'resource_id', 'c-edit'),
       '{"updated": 1}', 'ok'
  FROM agent.runs r WHERE r.agent_id = :aid AND r.tokens_in % 50 = 0;
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status)
SELECT r.id, 4, 'read', 'read_resource', jsonb_build_object('resource_type', 'page', 'resource_id', 'p-extra'),
       jsonb_build_object('resource_type', 'page', 'resource_id', 'p-extra'), 'ok'
  FROM agent.runs r WHERE r.agent_id = :aid AND r.regime = 'manual';
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status)
SELECT r.id, 5, 'error', 'read_resource', jsonb_build_object('resource_type', 'page', 'resource_id', 'p-unused'),
       '{"error": "resource page p-unused not found"}', 'error'
  FROM agent.runs r WHERE r.agent_id = :aid LIMIT 3;

\set since '''2026-03-03 00:00:00+00'''
\set until '''2026-03-10 12:00:00+00'''
CREATE TEMP TABLE ins AS SELECT * FROM agent.insights(:aid, 'ifown', :since, :until);
CREATE TEMP VIEW direct AS
  SELECT * FROM agent.runs WHERE agent_id = :aid AND created_at >= :since AND created_at < :until;

SELECT ok((SELECT count(*) FROM direct) > 20, 'the period holds a fair share of the fixture');
SELECT results_eq('SELECT runs, succeeded, failed, tokens FROM ins WHERE section = ''total''',
  $$SELECT count(*), count(*) FILTER (WHERE status = 'succeeded'),
           count(*) FILTER (WHERE status IN ('failed', 'budget_exceeded', 'expired')),
           sum(tokens_in + tokens_out)::bigint FROM direct$$, 'total = direct count, successes, failures, tokens');
SELECT is((SELECT failure_rate FROM ins WHERE section = 'total'),
          (SELECT round(count(*) FILTER (WHERE status IN ('failed', 'budget_exceeded', 'expired'))::numeric
                        / count(*) FILTER (WHERE status NOT IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')), 4)
             FROM direct), 'failure rate = failures over finished runs');
SELECT set_eq('SELECT key, runs, tokens FROM ins WHERE section = ''status''',
  'SELECT status, count(*), sum(tokens_in + tokens_out)::bigint FROM direct GROUP BY status', 'by status');
SELECT set_eq('SELECT key, runs, tokens FROM ins WHERE section = ''day''',
  $$SELECT to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD'), count(*), sum(tokens_in + tokens_out)::bigint
      FROM direct GROUP BY 1$$, 'by UTC day');
SELECT set_eq('SELECT key, runs, failed FROM ins WHERE section = ''week''',
  $$SELECT to_char(date_trunc('week', created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD'), count(*) AS n,
           count(*) FILTER (WHERE status IN ('failed', 'budget_exceeded', 'expired')) AS f FROM direct GROUP BY 1$$, 'by week');
SELECT set_eq('SELECT key, runs, tokens FROM ins WHERE section = ''model''',
  $$SELECT coalesce(model, '(none)'), count(*), sum(tokens_in + tokens_out)::bigint FROM direct GROUP BY 1$$, 'models used');
SELECT set_eq('SELECT key, runs FROM ins WHERE section = ''origin''',
  'SELECT origin, count(*) FROM direct GROUP BY 1', 'by origin');
SELECT set_eq($$SELECT key, runs, (detail ->> 'reads')::bigint FROM ins WHERE section = 'resource'
                 AND (detail ->> 'reads')::int > 0$$,
  $$SELECT (s.output ->> 'resource_type') || ':' || (s.output ->> 'resource_id'), count(DISTINCT s.run_id) AS nruns, count(*) AS nreads
      FROM agent.run_steps s JOIN direct d ON d.id = s.run_id WHERE s.kind = 'read' AND s.status = 'ok' GROUP BY 1$$,
  'resources actually read = read steps of the period');
SELECT is((SELECT detail ->> 'state' FROM ins WHERE key = 'page:p-read'), 'granted_and_read', 'granted and read');
SELECT is((SELECT detail ->> 'state' FROM ins WHERE key = 'page:p-unused'), 'granted_not_read', 'granted, never read (a failed read does not count)');
SELECT is((SELECT detail ->> 'state' FROM ins WHERE key = 'page:p-extra'), 'read_not_granted', 'read without a grant (manual runs)');
SELECT is((SELECT (detail ->> 'writes')::bigint FROM ins WHERE key = 'collection:c-edit'),
          (SELECT count(*) FROM agent.run_steps s JOIN direct d ON d.id = s.run_id WHERE s.kind = 'write'), 'writes counted');

-- the view equals a direct GROUP BY
SELECT set_eq($$SELECT day, status, runs, tokens FROM agent.insights WHERE agent_id = $$ || :aid,
  $$SELECT (created_at AT TIME ZONE 'UTC')::date, status, count(*), sum(tokens_in + tokens_out)::bigint
      FROM agent.runs WHERE agent_id = $$ || :aid || ' GROUP BY 1, 2', 'view: per day and status');
SELECT is_empty($$SELECT 1 FROM agent.insights v WHERE agent_id = $$ || :aid || $$ AND day_runs <>
                  (SELECT count(*) FROM agent.runs r WHERE r.agent_id = v.agent_id AND (r.created_at AT TIME ZONE 'UTC')::date = v.day)$$,
                'view: day_runs per agent and day');

-- full level only; unknown agents answer the same
SELECT throws_ok(format('SELECT * FROM agent.insights(%s, %L)', :aid, 'if-edit'), '42501',
                 format('user "if-edit" cannot view the insights of agent %s', :aid), 'edit cannot see insights');
SELECT throws_ok('SELECT * FROM agent.insights(987654322, ''ifown'')', '42501',
                 'user "ifown" cannot view the insights of agent 987654322', 'unknown agent: the same refusal');
SELECT * FROM finish();
ROLLBACK;
