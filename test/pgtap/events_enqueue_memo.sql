-- events, issue 33: the enqueue path near a plain INSERT keeps its
-- guarantees.  What fire_event no longer writes once per event (the
-- trigger's last_run_at, the launch of the same launcher, the cap's lock,
-- taken once a transaction) follows the transaction: a subtransaction that
-- rolls back undoes it and the next event writes it again; the hourly cap
-- still counts every run of the transaction; dedup still drops a repeat;
-- the run row is the one agent._enqueue_run (now in C) always made.  Two
-- workspaces, the application role (agents_app), a role with no grants.
BEGIN;
SELECT plan(17);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.run_id = '';
SET LOCAL pg_agents.workspace = '';
SET LOCAL pg_agents.dedup_window = 600;

CREATE ROLE ev_memo_app NOLOGIN IN ROLE agents_app;
CREATE ROLE ev_memo_nobody NOLOGIN;

INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (5330, 'w-memo-a', 'ua', 'A triager', 3),
  (5331, 'w-memo-b', 'ub', 'B triager', 3);
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, prompt) VALUES
  (5330, 'w-memo-a', 5330, 'event', 'memo.t.row', 'collection', 'A: triage'),
  (5331, 'w-memo-b', 5331, 'event', 'memo.t.row', 'collection', 'B: triage');

CREATE FUNCTION pg_temp.fire(eid text) RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM agent.fire_event('memo.t.row', 'collection', 'tickets', '{"row_id": "1"}', 'user:ua', eid) $$;

SET LOCAL ROLE ev_memo_app;
SET LOCAL pg_agents.workspace = 'w-memo-a';
-- a first event, rolled back: its last_run_at, launch and lock go with it
SAVEPOINT s;
SELECT is(pg_temp.fire('m-1'), 1::bigint, 'a first event queues a run');
ROLLBACK TO SAVEPOINT s;
RESET ROLE;
SELECT is((SELECT last_run_at FROM agent.triggers WHERE id = 5330), NULL, 'the rolled-back event left no last_run_at');
SELECT is((SELECT count(*) FROM agent.event_launches WHERE trigger_id = 5330), 0::bigint, 'nor a launch');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 5330), 0::bigint, 'nor a run');

SET LOCAL ROLE ev_memo_app;
SET LOCAL pg_agents.workspace = 'w-memo-a';
SELECT is(pg_temp.fire('m-2'), 1::bigint, 'the next event queues a run');
SELECT is(pg_temp.fire('m-3'), 1::bigint, 'and the one after (same launcher, same resource)');
RESET ROLE;
SELECT is((SELECT last_run_at FROM agent.triggers WHERE id = 5330), now(), 'last_run_at is written again after the rollback');
SELECT is((SELECT count(*) FROM agent.event_launches WHERE trigger_id = 5330), 1::bigint, 'the launch too');

SET LOCAL ROLE ev_memo_app;
SET LOCAL pg_agents.workspace = 'w-memo-a';
SELECT is(pg_temp.fire('m-3'), 0::bigint, 'a repeat of an event id is dropped (dedup)');
SELECT is(pg_temp.fire('m-4'), 1::bigint, 'a third run');
SELECT is(pg_temp.fire('m-5'), 1::bigint, 'a fourth event still makes a run row');
RESET ROLE;
SELECT results_eq($$ SELECT status, error, depth, root_run_id = id, regime, origin, requested_by, priority, input->>'event_id'
                       FROM agent.runs WHERE trigger_id = 5330 ORDER BY id $$,
                  $$ VALUES ('queued'::text, NULL::text, 0, true, 'autonomous'::text, 'event'::text, 'user:ua'::text, 0::smallint, 'm-2'::text),
                            ('queued', NULL, 0, true, 'autonomous', 'event', 'user:ua', 0::smallint, 'm-3'),
                            ('queued', NULL, 0, true, 'autonomous', 'event', 'user:ua', 0::smallint, 'm-4'),
                            ('budget_exceeded', 'hourly run cap of 3 reached', 0, true, 'autonomous', 'event', 'user:ua', 0::smallint, 'm-5') $$,
                  'the hourly cap (3) counts every run of the transaction: the fourth is budget_exceeded');
SELECT is((SELECT count(*) FROM agent.locks WHERE purpose = 'cap' AND key = '5330'), 1::bigint, 'the cap''s lock row of the agent');

-- the cap after a rolled-back run: the memo's count is undone with it
UPDATE agent.agents SET hourly_run_cap = 4 WHERE id = 5330;
SET LOCAL ROLE ev_memo_app;
SET LOCAL pg_agents.workspace = 'w-memo-a';
SAVEPOINT s2;
SELECT pg_temp.fire('m-6');
ROLLBACK TO SAVEPOINT s2;
SELECT is(pg_temp.fire('m-7'), 1::bigint, 'after a rolled-back run (cap 4, 3 queued)');
RESET ROLE;
SELECT is((SELECT status FROM agent.runs WHERE trigger_id = 5330 AND input->>'event_id' = 'm-7'), 'queued',
          'the rolled-back run does not count: the fourth queued run is within the cap');

-- B's trigger on the same event was never woken; a role with no grants cannot fire
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 5331), 0::bigint, 'B''s trigger on the same event made no run');

SET LOCAL ROLE ev_memo_nobody;
SET LOCAL pg_agents.workspace = 'w-memo-a';
SELECT throws_ok($$ SELECT pg_temp.fire('m-8') $$, '42501', NULL, 'a role with no grants cannot fire an event');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
