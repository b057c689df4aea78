-- events, issue 31: the loop stop reports itself.  An event of an agent's own
-- write does not wake it (anti-loop); each such event dropped is counted on
-- the trigger (self_skipped), at most once an hour an audit row
-- event.self_skipped says so, and agent.activity and agent.insights show it.
-- Two workspaces (B's identical trigger is untouched), the application role
-- (agents_app), a role with no grants, an agent session (agents_tool).
BEGIN;
SELECT plan(20);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.run_id = '';
SET LOCAL pg_agents.workspace = '';
SET LOCAL pg_agents.dedup_window = 600;

CREATE ROLE ev_skip_app NOLOGIN IN ROLE agents_app;
CREATE ROLE ev_skip_nobody NOLOGIN;

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (5000, 'w-skip-a', 'ua', 'A triager'),
  (5001, 'w-skip-b', 'ub', 'B triager'),
  (5002, 'w-skip-a', 'ua', 'A helper');
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, prompt) VALUES
  (5000, 'w-skip-a', 5000, 'event', 'skip.t.row', 'collection', 'A: triage'),
  (5001, 'w-skip-b', 5001, 'event', 'skip.t.row', 'collection', 'B: triage'),
  (5002, 'w-skip-a', 5002, 'event', 'skip.t.row', 'collection', 'A: help');

CREATE FUNCTION pg_temp.fire(eid text, actor text) RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM agent.fire_event('skip.t.row', 'collection', 'tickets', '{"row_id": "1"}', actor, eid) $$;
CREATE FUNCTION pg_temp.reports(bigint) RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM agent.audit_log WHERE action = 'event.self_skipped' AND target_id = $1::text $$;

SET LOCAL ROLE ev_skip_app;
SET LOCAL pg_agents.workspace = 'w-skip-a';
SELECT is(pg_temp.fire('s-1', 'agent:5000'), 1::bigint, 'agent 5000''s own write: only the other agent of A runs');
SELECT is(pg_temp.fire('s-2', 'agent:5000'), 1::bigint, 'a second own write');
SELECT is(pg_temp.fire('s-3', 'agent:5000'), 1::bigint, 'a third own write');
RESET ROLE;
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 5000), 0::bigint, 'no run of the acting agent');
SELECT is((SELECT self_skipped FROM agent.triggers WHERE id = 5000), 3::bigint, 'each dropped event is counted on the trigger');
SELECT is((SELECT self_skipped FROM agent.triggers WHERE id = 5002), 0::bigint, 'the other agent''s trigger dropped nothing');
SELECT is((SELECT self_skipped FROM agent.triggers WHERE id = 5001), 0::bigint, 'B''s identical trigger is untouched');
SELECT is(pg_temp.reports(5000), 1::bigint, 'one audit row within the hour, not one per event');
SELECT results_eq($$ SELECT status, error_code, target_type, workspace_id, (inputs->>'self_skipped')::int, (inputs->>'agent_id')::bigint
                       FROM agent.audit_log WHERE action = 'event.self_skipped' AND target_id = '5000' $$,
                  $$ VALUES ('denied'::text, 'self_event'::text, 'trigger'::text, 'w-skip-a'::text, 1, 5000::bigint) $$,
                  'the audit row: denied, self_event, the trigger of A, the count so far');

-- a rolled-back write leaves no count
SAVEPOINT s;
SELECT pg_temp.fire('s-rb', 'agent:5000');
ROLLBACK TO SAVEPOINT s;
SELECT is((SELECT self_skipped FROM agent.triggers WHERE id = 5000), 3::bigint, 'a rolled-back event is not counted');

-- an hour later: one more report, with the total
UPDATE agent.triggers SET self_skip_reported_at = now() - interval '61 minutes' WHERE id = 5000;
SET LOCAL ROLE ev_skip_app;
SET LOCAL pg_agents.workspace = 'w-skip-a';
SELECT is(pg_temp.fire('s-4', 'agent:5000'), 1::bigint, 'a fourth own write, an hour after the report');
RESET ROLE;
SELECT is(pg_temp.reports(5000), 2::bigint, 'a second audit row after the hour');
SELECT is((SELECT max((inputs->>'self_skipped')::int) FROM agent.audit_log WHERE action = 'event.self_skipped' AND target_id = '5000'),
          4, '... with the total of dropped events');

-- activity and insights show it (to the full level, in A's session only)
SET LOCAL ROLE ev_skip_app;
SET LOCAL pg_agents.workspace = 'w-skip-a';
SELECT results_eq($$ SELECT run_id, run_status, run_trigger_id, trigger_label FROM agent.activity(5000, 'ua') $$,
                  $$ VALUES (NULL::bigint, 'self_skipped'::text, 5000::bigint,
                             'anti-loop: trigger 5000 dropped 4 event(s) of the agent''s own writes'::text) $$,
                  'agent.activity shows the anti-loop row');
SELECT is((SELECT count(*) FROM agent.activity(5000, 'stranger')), 0::bigint, 'not to a user without access');
SELECT is((SELECT (detail->>'self_skipped')::int FROM agent.insights(5000, 'ua') WHERE section = 'anti_loop' AND key = 'trigger:5000'),
          4, 'agent.insights shows the count per trigger');
SET LOCAL pg_agents.workspace = 'w-skip-b';
SELECT is((SELECT count(*) FROM agent.activity(5000, 'ua')), 0::bigint, 'nothing of A in B''s session');
SELECT is((SELECT count(*) FROM agent.insights(5001, 'ub') WHERE section = 'anti_loop'), 0::bigint, 'B''s insights: no anti-loop row');
RESET ROLE;

-- privileges
SET LOCAL ROLE ev_skip_nobody;
SELECT throws_ok($$ SELECT self_skipped FROM agent.triggers $$, '42501', NULL, 'a role with no grants reads no trigger counts');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT throws_ok($$ SELECT * FROM agent.insights(5000, 'ua') $$, '42501', NULL, 'an agent session may not call agent.insights');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
