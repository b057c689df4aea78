-- Activity: visibility per level (§7.4), labels, steps, filters, re-run linkage.
BEGIN;
SELECT plan(38);

SELECT agent.create_agent('ws-ia', 'own', 'Activity agent') AS aid \gset
SELECT agent.share(:aid, 'user:full1', 'full', 'own');
SELECT agent.share(:aid, 'user:edit1', 'edit', 'own');
SELECT agent.share(:aid, 'user:int1', 'interact', 'own');
INSERT INTO agent.group_members (group_id, user_id) VALUES ('ia-g-int', 'gm1'), ('ia-g-full', 'gfull');
SELECT agent.share(:aid, 'group:ia-g-int', 'interact', 'own');
SELECT agent.share(:aid, 'group:ia-g-full', 'full', 'own');

INSERT INTO agent.triggers (agent_id, kind, schedule, timezone, prompt)
VALUES (:aid, 'schedule', '0 9 * * *', 'UTC', 'daily') RETURNING id AS sched \gset
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, resource_id, prompt)
VALUES (:aid, 'event', 'collection.row_added', 'collection', 'public.tickets', 'triage') RETURNING id AS evt \gset

-- runs: four manual (own, edit1, int1, gm1), one api autonomous, one schedule, one event
SELECT agent.start_run(:aid, 'own', '{"message": "hi"}') AS r_own \gset
SELECT agent.start_run(:aid, 'edit1', '{"message": "hi"}') AS r_edit \gset
SELECT agent.start_run(:aid, 'int1', '{"message": "hi"}') AS r_int \gset
SELECT agent.start_run(:aid, 'gm1', '{"message": "hi"}') AS r_gm \gset
SELECT agent.start_run(:aid, 'app', '{}', 'autonomous', 'api') AS r_api \gset
SELECT agent._enqueue_run(:aid, 'autonomous', 'schedule', '{"prompt": "daily"}', :sched, 'own') AS r_sched \gset
SET LOCAL pg_agents.workspace = 'ws-ia';  -- the event's workspace
SELECT r AS r_evt FROM agent.fire_event('collection.row_added', 'collection', 'public.tickets',
                                       '{"row": {"id": 1}}', 'user:someone', 'ia-evt-1') r \gset
SET LOCAL pg_agents.workspace = '';
-- a child run made by delegation (recorded directly)
INSERT INTO agent.runs (agent_id, parent_run_id, root_run_id, depth, regime, origin, status, input)
VALUES (:aid, :r_api, :r_api, 1, 'autonomous', 'delegation', 'queued', '{"task": "sub"}') RETURNING id AS r_child \gset

-- what the runs did
UPDATE agent.runs SET status = 'running', started_at = now() - interval '30 seconds' WHERE id IN (:r_own, :r_sched);
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status, tokens) VALUES
  (:r_own, 1, 'llm', 'gpt-test', '{}', '{}', 'ok', 120),
  (:r_own, 2, 'read', 'read_resource', '{"resource_type": "page", "resource_id": "p1"}',
                                       '{"resource_type": "page", "resource_id": "p1"}', 'ok', 0),
  (:r_own, 3, 'read', 'read_resource', '{"resource_type": "skill", "resource_id": "sk-summarize"}',
                                       '{"resource_type": "skill", "resource_id": "sk-summarize"}', 'ok', 0),
  (:r_own, 4, 'write', 'write_resource', '{"resource_type": "page", "resource_id": "p2", "body": "x"}', '{"updated": 1}', 'ok', 0),
  (:r_own, 5, 'denied', 'read_resource', '{"resource_type": "page", "resource_id": "secret"}', '{"reason": "user_denied"}', 'denied', 0),
  (:r_own, 6, 'tool', 'search_resources', '{"query": "tickets"}', '{"results": [{"resource_type": "collection", "resource_id": "c1"}]}', 'ok', 0),
  (:r_sched, 1, 'error', 'llm', NULL, '{"error": "HTTP 500 from the LLM endpoint"}', 'error', 0);
SELECT agent.add_usage(:r_own, 100, 20, 'gpt-test');
SELECT agent.finish_run(:r_own, 'succeeded', '{"text": "done"}');
SELECT agent.finish_run(:r_sched, 'failed', NULL, NULL);
SELECT agent.rerun(:r_sched, 'own') AS r_rerun \gset

-- visibility per level
SELECT is((SELECT count(*) FROM agent.activity(:aid, 'own')), 9::bigint, 'owner (full) sees every run');
SELECT is((SELECT count(*) FROM agent.activity(:aid, 'full1')), 9::bigint, 'full share sees every run');
SELECT is((SELECT count(*) FROM agent.activity(:aid, 'gfull')), 9::bigint, 'full through a group sees every run');
SELECT results_eq(format('SELECT run_id FROM agent.activity(%s, %L)', :aid, 'edit1'),
                  ARRAY[:r_edit::bigint], 'edit sees only its own manual run');
SELECT results_eq(format('SELECT run_id FROM agent.activity(%s, %L)', :aid, 'int1'),
                  ARRAY[:r_int::bigint], 'interact sees only its own manual run');
SELECT results_eq(format('SELECT run_id FROM agent.activity(%s, %L)', :aid, 'gm1'),
                  ARRAY[:r_gm::bigint], 'interact through a group sees only its own manual run');
SELECT is_empty(format('SELECT * FROM agent.activity(%s, %L)', :aid, 'none1'), 'no access: nothing');
SELECT is_empty('SELECT * FROM agent.activity(987654321, ''own'')', 'unknown agent: the same nothing (no error)');
SELECT is_empty(format('SELECT * FROM agent.activity(%s, %L) WHERE regime = %L', :aid, 'int1', 'autonomous'),
                'interact never sees an autonomous run');

-- labels and figures
SELECT is((SELECT trigger_label FROM agent.activity(:aid, 'own') WHERE run_id = :r_sched),
          'schedule: at 09:00 every day', 'schedule label');
SELECT is((SELECT trigger_label FROM agent.activity(:aid, 'own') WHERE run_id = :r_evt),
          'event: collection.row_added on public.tickets', 'event label');
SELECT is((SELECT trigger_label FROM agent.activity(:aid, 'own') WHERE run_id = :r_own), 'chat', 'chat label');
SELECT is((SELECT trigger_label FROM agent.activity(:aid, 'own') WHERE run_id = :r_api), 'api', 'api label');
SELECT is((SELECT trigger_label FROM agent.activity(:aid, 'own') WHERE run_id = :r_child),
          'delegation from run ' || :r_api, 'delegation label');
SELECT is((SELECT trigger_label FROM agent.activity(:aid, 'own') WHERE run_id = :r_rerun),
          're-run of run ' || :r_sched, 're-run label');
SELECT is((SELECT rerun_of FROM agent.activity(:aid, 'own') WHERE run_id = :r_rerun), :r_sched::bigint,
          're-run linked to the original run');
SELECT is((SELECT run_trigger_id FROM agent.activity(:aid, 'own') WHERE run_id = :r_evt), :evt::bigint, 'event run keeps its trigger');
SELECT ok((SELECT duration >= interval '30 seconds' FROM agent.activity(:aid, 'own') WHERE run_id = :r_own), 'duration of a finished run');
SELECT is((SELECT duration FROM agent.activity(:aid, 'own') WHERE run_id = :r_api), NULL::interval, 'no duration before it starts');
SELECT is((SELECT row(model, tokens_in, tokens_out, tokens_total)::text FROM agent.activity(:aid, 'own') WHERE run_id = :r_own),
          '(gpt-test,100,20,120)', 'model and tokens');
SELECT is((SELECT skills FROM agent.activity(:aid, 'own') WHERE run_id = :r_own), ARRAY['sk-summarize'], 'skills read');
SELECT is((SELECT resources_read FROM agent.activity(:aid, 'own') WHERE run_id = :r_own),
          ARRAY['page:p1', 'skill:sk-summarize'], 'resources read');
SELECT is((SELECT resources_written FROM agent.activity(:aid, 'own') WHERE run_id = :r_own), ARRAY['page:p2'], 'resources written');
SELECT is((SELECT tools FROM agent.activity(:aid, 'own') WHERE run_id = :r_own),
          ARRAY['read_resource', 'search_resources', 'write_resource'], 'tools used');
SELECT is((SELECT denied_steps FROM agent.activity(:aid, 'own') WHERE run_id = :r_own), 1, 'denied steps counted');
SELECT is((SELECT error FROM agent.activity(:aid, 'own') WHERE run_id = :r_sched), 'HTTP 500 from the LLM endpoint',
          'error in clear from the last error step');

-- filters
SELECT results_eq(format('SELECT run_id FROM agent.activity(%s, %L, %L)', :aid, 'own', 'failed'),
                  ARRAY[:r_sched::bigint], 'status filter');
SELECT results_eq(format('SELECT run_id FROM agent.activity(%s, %L, trigger_id => %s)', :aid, 'own', :evt),
                  ARRAY[:r_evt::bigint], 'trigger filter');
SELECT is((SELECT count(*) FROM agent.activity(:aid, 'own', since => now() + interval '1 minute')), 0::bigint, 'period filter');
SELECT is((SELECT count(*) FROM agent.activity(:aid, 'own', lim => 2)), 2::bigint, 'limit');
SELECT throws_ok(format('SELECT * FROM agent.activity(%s, %L, %L)', :aid, 'own', 'done'), '22023', NULL, 'bad status refused');

-- run detail
SELECT is((SELECT count(*) FROM agent.run_detail(:r_own, 'own')), 6::bigint, 'full: every step of a run');
SELECT is((SELECT summary FROM agent.run_detail(:r_own, 'own') WHERE seq = 5),
          'denied: read_resource on page:secret (user_denied)', 'denied step summarized');
SELECT is((SELECT summary FROM agent.run_detail(:r_own, 'own') WHERE seq = 6),
          'searched "tickets": 1 result(s)', 'search step summarized');
SELECT is((SELECT count(*) FROM agent.run_detail(:r_int, 'int1')), 0::bigint, 'interact: its own run (no steps yet)');
SELECT is_empty(format('SELECT * FROM agent.run_detail(%s, %L)', :r_own, 'int1'), 'interact: another user''s run gives nothing');
SELECT is_empty(format('SELECT * FROM agent.run_detail(%s, %L)', :r_own, 'none1'), 'no access: nothing');

-- re-run from activity goes through agent.rerun and its rules
SELECT throws_ok(format('SELECT agent.rerun(%s, %L)', :r_sched, 'int1'), '42501', NULL,
                 'interact cannot re-run an autonomous run');
SELECT * FROM finish();
ROLLBACK;
