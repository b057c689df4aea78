-- events, issue 31: the API trigger.  agent.fire_trigger(trigger_id,
-- by_user, payload) queues a manual run (origin api) of a trigger of kind
-- api, for a user allowed to run the agent, through the one queue, the
-- hourly cap and the deduplication of events.  Two workspaces (a trigger of
-- B is nonexistent in A's session), the application role (agents_app), a
-- role with no grants, and an agent session.
BEGIN;
SELECT plan(26);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.run_id = '';
SET LOCAL pg_agents.workspace = '';
SET LOCAL pg_agents.dedup_window = 600;

CREATE ROLE ev_api_app NOLOGIN IN ROLE agents_app;
CREATE ROLE ev_api_nobody NOLOGIN;

INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (4900, 'w-api-a', 'ua', 'A api', NULL),
  (4901, 'w-api-b', 'ub', 'B api', NULL),
  (4902, 'w-api-a', 'ua', 'A capped', 2),
  (4903, 'w-api-a', 'ua', 'A suspended', NULL);
UPDATE agent.agents SET status = 'suspended' WHERE id = 4903;
INSERT INTO agent.shares (workspace_id, agent_id, user_id, level) VALUES ('w-api-a', 4900, 'u-interact', 'interact');
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, prompt, enabled) VALUES
  (4900, 'w-api-a', 4900, 'api', NULL, 'A: the API v2 trigger', true),
  (4901, 'w-api-b', 4901, 'api', NULL, 'B: the API v2 trigger', true),
  (4902, 'w-api-a', 4900, 'event', 'page.updated', 'A: an event trigger', true),
  (4903, 'w-api-a', 4900, 'api', NULL, 'A: disabled', false),
  (4904, 'w-api-a', 4902, 'api', NULL, 'A: capped', true),
  (4905, 'w-api-a', 4903, 'api', NULL, 'A: suspended agent', true);

-- ------------------------------------------------------------------ success
SET LOCAL ROLE ev_api_app;
SET LOCAL pg_agents.workspace = 'w-api-a';
SELECT isnt(agent.fire_trigger(4900, 'ua', '{"ticket": 17}'), NULL, 'the owner fires A''s API trigger: a run id');
RESET ROLE;
SELECT results_eq($$ SELECT agent_id, trigger_id, regime, origin, requested_by, status, input->'payload', input->>'prompt'
                       FROM agent.runs WHERE trigger_id = 4900 $$,
                  $$ VALUES (4900::bigint, 4900::bigint, 'manual'::text, 'api'::text, 'ua'::text, 'queued'::text,
                             '{"ticket": 17}'::jsonb, 'A: the API v2 trigger'::text) $$,
                  'one queued manual run, origin api, linked to the trigger, acting as the user, with the payload');
SELECT isnt((SELECT last_run_at FROM agent.triggers WHERE id = 4900), NULL, 'the trigger remembers when it last queued a run');

SET LOCAL ROLE ev_api_app;
SET LOCAL pg_agents.workspace = 'w-api-a';
SELECT is(agent.fire_trigger(4900, 'ua', '{"ticket": 17}'),
          (SELECT max(id) FROM agent.runs WHERE trigger_id = 4900),
          'the same payload again within the dedup window: the first run''s id');
SELECT isnt(agent.fire_trigger(4900, 'u-interact', '{"ticket": 18}'), NULL,
            'a user with the interact level fires it (another payload: another run)');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4900), 2::bigint, '... two runs in all');
SELECT isnt(agent.fire_trigger(4900, 'ua'), NULL, 'the payload defaults to {}');

-- ------------------------------------------------------------------ refusals
SELECT throws_ok($$ SELECT agent.fire_trigger(4900, 'stranger', '{}') $$, '42501', NULL,
                 'a user who may not run the agent is refused (42501)');
SELECT throws_ok($$ SELECT agent.fire_trigger(4900, NULL, '{}') $$, '22023', NULL, 'no user: refused');
SELECT throws_ok($$ SELECT agent.fire_trigger(4900, 'ua', '[1]') $$, '22023', NULL, 'a payload that is no object: refused');
SELECT throws_ok($$ SELECT agent.fire_trigger(4901, 'ub', '{}') $$, '42704', 'trigger 4901 does not exist',
                 'B''s trigger in A''s session does not exist (42704)');
SELECT throws_ok($$ SELECT agent.fire_trigger(4999, 'ua', '{}') $$, '42704', NULL, 'an unknown trigger: 42704');
SELECT throws_ok($$ SELECT agent.fire_trigger(4902, 'ua', '{}') $$, '42809', 'trigger 4902 is of kind event, not api',
                 'a trigger of kind event is not fired this way (42809)');
SELECT throws_ok($$ SELECT agent.fire_trigger(4903, 'ua', '{}') $$, '55000', 'trigger 4903 is disabled',
                 'a disabled trigger: 55000');
SELECT throws_ok($$ SELECT agent.fire_trigger(4905, 'ua', '{}') $$, '55000', 'agent 4903 is suspended',
                 'a suspended agent: 55000');

-- ------------------------------------------------------------------ the hourly cap
SELECT isnt(agent.fire_trigger(4904, 'ua', '{"n": 1}'), NULL, 'capped agent: first run');
SELECT isnt(agent.fire_trigger(4904, 'ua', '{"n": 2}'), NULL, 'capped agent: second run');
SELECT throws_ok($$ SELECT agent.fire_trigger(4904, 'ua', '{"n": 3}') $$, '54000', 'hourly run cap of 2 reached for agent 4902',
                 'the third within the hour: the agent''s hourly run cap (54000)');
RESET ROLE;
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 4902), 2::bigint, '... and no third run');

-- ------------------------------------------------------------------ workspace B
SET LOCAL ROLE ev_api_app;
SET LOCAL pg_agents.workspace = 'w-api-b';
SELECT throws_ok($$ SELECT agent.fire_trigger(4900, 'ua', '{}') $$, '42704', NULL, 'A''s trigger in B''s session: 42704');
SELECT isnt(agent.fire_trigger(4901, 'ub', '{}'), NULL, 'B fires its own trigger');
RESET ROLE;
SELECT is((SELECT workspace_id FROM agent.runs WHERE trigger_id = 4901), 'w-api-b', '... a run of B');

-- ------------------------------------------------------------------ privileges
SET LOCAL ROLE ev_api_nobody;
SET LOCAL pg_agents.workspace = 'w-api-a';
SELECT throws_ok($$ SELECT agent.fire_trigger(4900, 'ua', '{"x": 1}') $$, '42501', NULL,
                 'a role with no grants may not call agent.fire_trigger');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT throws_ok($$ SELECT agent.fire_trigger(4900, 'ua', '{"x": 2}') $$, '42501', NULL,
                 'an agent session (agents_tool) may not call agent.fire_trigger');
RESET ROLE;
SELECT ok(has_function_privilege('agents_app', 'agent.fire_trigger(bigint, text, jsonb)', 'EXECUTE'),
          'agents_app may execute agent.fire_trigger');
SELECT ok(NOT has_function_privilege('public', 'agent.fire_trigger(bigint, text, jsonb)', 'EXECUTE'),
          'PUBLIC may not');

SELECT * FROM finish();
ROLLBACK;
