-- The exact messages of run bookkeeping, delegation and approvals.
-- Everything happens in one transaction rolled back at the end (psql's
-- ON_ERROR_ROLLBACK keeps it alive across the expected errors).
\set ON_ERROR_ROLLBACK on
\set SHOW_CONTEXT never
BEGIN;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, status, deleted_at, default_token_budget) VALUES
  (390001, 'ws-runs-m', 'om', 'lead', '[390001, 390002, 390003, 390004, 390005]', 'active', NULL, 1000),
  (390002, 'ws-runs-m', 'om', 'helper', '[390001]', 'active', NULL, 1000),
  (390003, 'ws-runs-m', 'om', 'asleep', '[]', 'suspended', NULL, 1000),
  (390004, 'ws-runs-m', 'om', 'gone', '[]', 'active', now(), 1000),
  (390005, 'ws-runs-elsewhere', 'om', 'foreign', '[]', 'active', NULL, 1000),
  (390006, 'ws-runs-m', 'om', 'unlisted', '[]', 'active', NULL, 1000);
INSERT INTO agent.runs (id, agent_id, regime, origin, status, depth, root_run_id, parent_run_id, token_budget) VALUES
  (3900001, 390001, 'autonomous', 'api', 'running', 0, 3900001, NULL, 1000),
  (3900002, 390002, 'autonomous', 'delegation', 'running', 1, 3900001, 3900001, 100),
  (3900003, 390001, 'autonomous', 'api', 'queued', 0, 3900003, NULL, NULL);

-- start_run
SELECT agent.start_run(390001, 'stranger');
SELECT agent.start_run(390001, 'om', '{}', 'autonomous', 'chat');
SELECT agent.start_run(390001, 'om', '{}', 'whenever');
SELECT agent.start_run(390001, 'om', '{}', 'manual', 'rerun');
SELECT agent.start_run(390003, NULL, '{}', 'autonomous', 'api');
SELECT agent.start_run(390004, 'om');

-- delegation refusals
SELECT agent.delegate(3900003, 390002, 'queued parents do not delegate');
SELECT agent.delegate(3900001, 390006, 'not in the list');
SELECT agent.delegate(3900001, 390003, 'suspended');
SELECT agent.delegate(3900001, 390004, 'deleted');
SELECT agent.delegate(3900001, 390005, 'another workspace');
SELECT agent.delegate(3900001, 390001, 'myself');
SELECT agent.delegate(3900002, 390001, 'back to the lead');
SELECT agent.delegate(3900001, 390002, 'too much', '[]', 1001);
SET LOCAL pg_agents.max_delegation_depth = 1;
UPDATE agent.agents SET delegation = '[390006]' WHERE id = 390002;
SELECT agent.delegate(3900002, 390006, 'one level too deep');
SET LOCAL pg_agents.max_delegation_depth = 0;
SELECT agent.delegate(3900001, 390002, 'delegation disabled');
SELECT agent.try_delegate(3900001, 390002, 'delegation disabled') - 'detail';
SET LOCAL pg_agents.max_delegation_depth = 3;
UPDATE agent.runs SET tokens_total = 1000 WHERE id = 3900001;
SELECT agent.delegate(3900001, 390002, 'nothing left');
SELECT agent.delegate(3900001, 390002, '   ');
SELECT agent.delegate(3900001, 390002, 'x', '{"not": "an array"}');
SELECT agent.delegate(3900001, 390002, 'x', '[]', -1);
SELECT agent.delegate(42, 390002, 'no such run');

-- finishing
SELECT agent.finish_run(3900003, 'done');
SELECT agent.finish_run(3900003, 'succeeded');
SELECT agent.finish_run(3900003, 'failed');
SELECT agent.renew_lease(3900003);

-- approvals
SELECT agent.approval_key('send', '{"b": 2, "a": 1}') = agent.approval_key('send', '{"a": 1, "b": 2}') AS same_key;
SELECT agent.canonical_json('{"b": [2, 1], "a": {"y": 1.10, "x": "q"}}');
SELECT agent.approve('feedface', 'om');
SELECT agent.request_approval(3900001, 'send', '{"to": "a"}');
UPDATE agent.runs SET status = 'running' WHERE id = 3900002;
SELECT agent.request_approval(3900002, 'send', '{"to": "a"}');
SELECT agent.approve(agent.approval_key('send', '{"to": "a"}'), 'stranger');
SELECT agent.approve(agent.approval_key('send', '{"to": "a"}'), 'om');
SELECT agent.deny(agent.approval_key('send', '{"to": "a"}'), 'om', 3900002);
SELECT status, error FROM agent.runs WHERE id = 3900002;
SELECT agent.approve(agent.approval_key('send', '{"to": "a"}'), 'om', 3900002);
ROLLBACK;
