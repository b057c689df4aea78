-- Run retention: agent.purge_runs() removes whole delegation trees ended
-- more than pg_agents.run_retention_days ago, with their steps, in batches;
-- trees with an active run (or a run ended since) are kept whole; every
-- workspace's old trees go, nobody but a superuser may call it.
BEGIN;
SELECT plan(26);

-- ---------------------------------------------------------------- setup
CREATE ROLE ret_nobody NOLOGIN;                          -- PUBLIC only
CREATE ROLE ret_app NOLOGIN IN ROLE agents_app;          -- the documented grants
CREATE ROLE ret_exec NOLOGIN IN ROLE agents_executor;    -- an external executor

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (960001, 'ws-ret-a', 'alice', 'ret a1'),
  (960002, 'ws-ret-a', 'alice', 'ret a2'),
  (960011, 'ws-ret-b', 'bob', 'ret b1');

-- runs: (id, agent, parent, root, depth, status, finished days ago (NULL: not ended), tokens_total)
INSERT INTO agent.runs (id, agent_id, parent_run_id, root_run_id, depth, regime, origin, status,
                        tokens_total, created_at, finished_at)
SELECT v.id, v.agent_id, v.parent, v.root, v.depth, 'autonomous', CASE WHEN v.parent IS NULL THEN 'api' ELSE 'delegation' END,
       v.status, v.tokens, now() - interval '500 days',
       CASE WHEN v.ago IS NOT NULL THEN now() - v.ago * interval '1 day' END
  FROM (VALUES
    -- 1. an old tree, ended: purged whole (root, child, grandchild)
    (9610001::bigint, 960001::bigint, NULL::bigint, 9610001::bigint, 0, 'succeeded', 400, 300::bigint),
    (9610002, 960002, 9610001, 9610001, 1, 'succeeded', 400, 200),
    (9610003, 960001, 9610002, 9610001, 2, 'failed', 400, 100),
    -- 2. an old root whose child still runs: kept whole
    (9610011, 960001, NULL, 9610011, 0, 'failed', 400, 50),
    (9610012, 960002, 9610011, 9610011, 1, 'running', NULL, 10),
    -- 3. an old root waiting for its children (active), the child ended long ago: kept
    (9610021, 960001, NULL, 9610021, 0, 'waiting_children', NULL, 70),
    (9610022, 960002, 9610021, 9610021, 1, 'succeeded', 400, 30),
    -- 4. an old root whose child ended recently: kept whole (its roll-up stays that of its rows)
    (9610031, 960001, NULL, 9610031, 0, 'succeeded', 400, 90),
    (9610032, 960002, 9610031, 9610031, 1, 'cancelled', 10, 40),
    -- 5. a recent run: kept
    (9610041, 960001, NULL, 9610041, 0, 'succeeded', 10, 5),
    -- 6. an old queued run that never started: kept
    (9610051, 960001, NULL, 9610051, 0, 'queued', NULL, 0),
    -- 7. another workspace's old tree: purged too (retention is the database's)
    (9610101, 960011, NULL, 9610101, 0, 'succeeded', 400, 8),
    (9610102, 960011, 9610101, 9610101, 1, 'succeeded', 400, 4),
    -- 8. a third old ended tree (ws-ret-a) for the batches
    (9610201, 960001, NULL, 9610201, 0, 'budget_exceeded', 400, 0)
  ) AS v(id, agent_id, parent, root, depth, status, ago, tokens);
INSERT INTO agent.run_steps (run_id, seq, kind, name, status)
SELECT r.id, s, 'llm', 'model-a', 'ok' FROM agent.runs r, generate_series(1, 3) s
 WHERE r.id BETWEEN 9610001 AND 9610299;
INSERT INTO agent.approvals (run_id, tool, input, approval_key, status, expires_at)
VALUES (9610003, 'send_email', '{}', 'ret-key-1', 'expired', now() - interval '399 days'),
       (9610012, 'send_email', '{}', 'ret-key-2', 'pending', now() + interval '1 day');

CREATE TEMP TABLE ret_kept AS
  SELECT id FROM agent.runs WHERE id IN (9610011, 9610012, 9610021, 9610022, 9610031, 9610032, 9610041, 9610051);
CREATE TEMP TABLE ret_gone AS
  SELECT id FROM agent.runs WHERE id IN (9610001, 9610002, 9610003, 9610101, 9610102, 9610201);
GRANT SELECT ON ret_kept, ret_gone TO PUBLIC;

-- ------------------------------------------------ who may call it
SET LOCAL ROLE ret_nobody;
SELECT throws_ok('SELECT agent.purge_runs()', '42501', NULL, 'a role with no grant cannot purge runs');
RESET ROLE;
SET LOCAL ROLE ret_app;
SELECT set_config('pg_agents.workspace', 'ws-ret-a', true);
SELECT throws_ok('SELECT agent.purge_runs()', '42501', NULL, 'nor the application (maintenance is the DBA''s)');
SELECT throws_ok('DELETE FROM agent.runs WHERE id = 9610001', '42501', NULL, 'nor does it delete runs itself');
RESET ROLE;
SET LOCAL ROLE ret_exec;
SELECT throws_ok('SELECT agent.purge_runs()', '42501', NULL, 'nor an executor');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT set_config('pg_agents.actor', 'agent:960001', true);
SELECT throws_ok('SELECT agent.purge_runs()', '42501', NULL, 'nor an agent session');
RESET ROLE;
SELECT set_config('pg_agents.actor', '', true);
SELECT set_config('pg_agents.workspace', '', true);
SELECT is((SELECT count(*)::int FROM agent.runs WHERE id BETWEEN 9610001 AND 9610299), 14, 'nothing was deleted by them');

-- ------------------------------------------------ settings
SELECT is(current_setting('pg_agents.run_retention_days'), '365', 'runs are kept 365 days by default');
SET LOCAL pg_agents.run_retention_days = 0;
SELECT is(agent.purge_runs(), 0::bigint, 'pg_agents.run_retention_days = 0 keeps every run');
SELECT is((SELECT count(*)::int FROM agent.runs WHERE id BETWEEN 9610001 AND 9610299), 14, 'and deletes nothing');
SET LOCAL pg_agents.run_retention_days = 365;
SELECT throws_ok('SELECT agent.purge_runs(0)', '22023', 'batch_size must be positive', 'a batch has at least one tree');

-- ------------------------------------------------ batches
SELECT cmp_ok(agent.purge_runs(1), '>=', 1::bigint, 'a batch of one tree deletes its runs');
SELECT is((SELECT count(*)::int FROM ret_gone g WHERE EXISTS (SELECT 1 FROM agent.runs r WHERE r.id = g.id)), 6 - (
             SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM agent.runs WHERE id = 9610001) THEN 3
                         WHEN NOT EXISTS (SELECT 1 FROM agent.runs WHERE id = 9610101) THEN 2 ELSE 1 END),
          'exactly one whole tree went in the first batch');
SELECT cmp_ok(agent.purge_runs(), '>=', 1::bigint, 'the next call takes the rest');
SELECT is(agent.purge_runs(), 0::bigint, 'then nothing is left to purge');

-- ------------------------------------------------ what went, what stayed
SELECT is((SELECT count(*)::int FROM agent.runs r JOIN ret_gone g ON g.id = r.id), 0,
          'every old ended tree is gone, root, children and grandchildren, in both workspaces');
SELECT is((SELECT count(*)::int FROM agent.run_steps s JOIN ret_gone g ON g.id = s.run_id), 0, 'with their steps');
SELECT ok(NOT EXISTS (SELECT 1 FROM agent.approvals WHERE approval_key = 'ret-key-1'), 'and their approvals');
SELECT is((SELECT count(*)::int FROM agent.runs r JOIN ret_kept k ON k.id = r.id), 8, 'every kept run is still there');
SELECT is((SELECT count(*)::int FROM agent.run_steps s JOIN ret_kept k ON k.id = s.run_id), 24, 'with its steps');
SELECT ok(EXISTS (SELECT 1 FROM agent.runs WHERE id = 9610012 AND status = 'running')
          AND EXISTS (SELECT 1 FROM agent.runs WHERE id = 9610011),
          'an old root whose child still runs is kept, with the child');
SELECT ok(EXISTS (SELECT 1 FROM agent.runs WHERE id = 9610022), 'the ended child of an active root is kept');
SELECT ok(EXISTS (SELECT 1 FROM agent.approvals WHERE approval_key = 'ret-key-2' AND status = 'pending'),
          'the pending approval of a kept run is untouched');
SELECT is((SELECT tokens_total FROM agent.runs WHERE id = 9610031) -
          (SELECT sum(tokens_total) FROM agent.runs WHERE parent_run_id = 9610031), 50::numeric,
          'a kept tree keeps its roll-up and the rows it counts');
SELECT is((SELECT count(*)::int FROM agent.runs WHERE id IN (9610041, 9610051)), 2, 'recent and never-started runs stay');

-- ------------------------------------------------ recorded
SELECT ok((SELECT sum((inputs ->> 'runs')::int) FROM agent.audit_log WHERE action = 'run.purge') >= 6
          AND (SELECT bool_and((inputs ->> 'retention_days')::int = 365) FROM agent.audit_log WHERE action = 'run.purge'),
          'each purge is recorded as run.purge with its count and retention');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE action = 'run.purge'), 2,
          'one audit row per call that deleted something');

SELECT * FROM finish();
ROLLBACK;
