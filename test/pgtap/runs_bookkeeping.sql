-- Run bookkeeping: start, claim, lease and reclaim, finish, re-run, cancel.
BEGIN;
SELECT plan(68);

INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, status, deleted_at) VALUES
  (320001, 'ws-runs-b', 'o1', 'worker bee', '[320004]', 'active', NULL),
  (320002, 'ws-runs-b', 'o1', 'sleeping', '[]', 'suspended', NULL),
  (320003, 'ws-runs-b', 'o1', 'gone', '[]', 'active', now()),
  (320004, 'ws-runs-b', 'o1', 'helper', '[320005]', 'active', NULL),
  (320005, 'ws-runs-b', 'o1', 'helper 2', '[]', 'active', NULL);
INSERT INTO agent.shares (agent_id, user_id, level) VALUES
  (320001, 'i1', 'interact'), (320001, 'i2', 'interact'), (320001, 'e1', 'edit'), (320002, 'i1', 'interact');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES (320100, 320001, 'event', 'collection.row_added', 'collection');

-- 1. start_run
SELECT agent.start_run(320001, 'i1', '{"message": "hello"}') AS m1 \gset
SELECT results_eq(format('SELECT status, regime, origin, requested_by, depth, root_run_id, priority FROM agent.runs WHERE id = %s', :m1),
                  format($$VALUES ('queued'::text, 'manual'::text, 'chat'::text, 'i1'::text, 0, %s::bigint, 10::smallint)$$, :m1),
                  'a chat run is queued, manual, its own root, interactive priority');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'run.start' AND target_id = :m1::text),
          'starting a run is audited');
SELECT throws_ok($$SELECT agent.start_run(320001, 'x1')$$, '42501', 'user "x1" may not chat with agent 320001',
                 'a user without access cannot start a manual run');
SELECT throws_ok($$SELECT agent.start_run(320001, NULL)$$, '22023', 'a manual run needs the requesting user',
                 'a manual run needs a user');
SELECT throws_ok($$SELECT agent.start_run(999999999, 'o1')$$, '42704', 'agent 999999999 does not exist', 'unknown agent');
SELECT throws_ok($$SELECT agent.start_run(320003, 'o1')$$, '42704', 'agent 320003 does not exist', 'deleted agent');
SELECT throws_ok($$SELECT agent.start_run(320001, 'o1', '{}', 'sometimes')$$, '22023', 'invalid regime "sometimes"', 'bad regime');
SELECT throws_ok($$SELECT agent.start_run(320001, 'o1', '{}', 'manual', 'fax')$$, '22023',
                 'invalid origin "fax" for the manual regime', 'bad origin');
SELECT throws_ok($$SELECT agent.start_run(320001, 'o1', '{}', 'manual', 'schedule')$$, '22023',
                 'invalid origin "schedule" for the manual regime', 'a schedule run is not manual');
SELECT throws_ok($$SELECT agent.start_run(320001, 'o1', '{}', 'autonomous', 'delegation')$$, '22023',
                 'origin "delegation" cannot be given to agent.start_run', 'delegation goes through agent.delegate');
SELECT throws_ok($$SELECT agent.start_run(320001, 'o1', '[1]')$$, '22023', 'run input must be a json object',
                 'input is an object');
SELECT throws_ok($$SELECT agent.start_run(320002, NULL, '{}', 'autonomous', 'api')$$, '55000',
                 'agent 320002 is suspended', 'a suspended agent starts no autonomous run');
SELECT lives_ok($$SELECT agent.start_run(320002, 'i1')$$, 'but chat with a suspended agent still works');
SELECT agent.start_run(320001, NULL, '{"ticket": 7}', 'autonomous', 'api') AS a1 \gset
SELECT results_eq(format('SELECT regime, origin, priority FROM agent.runs WHERE id = %s', :a1),
                  $$VALUES ('autonomous'::text, 'api'::text, 0::smallint)$$, 'an API-started autonomous run');

-- 2. claim: interactive first, then oldest; never twice
-- (priorities raised so that runs of other tests in the database stay behind)
UPDATE agent.runs SET priority = 30000 + CASE WHEN regime = 'manual' THEN 10 ELSE 0 END
 WHERE agent_id = 320001;
SELECT agent.start_run(320001, 'e1', '{"n": 2}') AS m2 \gset
UPDATE agent.runs SET priority = 30010 WHERE id = :m2;
SET LOCAL pg_agents.run_lease = 60;
SELECT results_eq('SELECT id FROM agent.claim_runs(2)', format('VALUES (%s::bigint), (%s::bigint)', :m1, :m2),
                  'claim_runs takes interactive runs first, oldest first');
SELECT results_eq(format('SELECT status, attempts, started_at IS NOT NULL, lease_until - now() FROM agent.runs WHERE id = %s', :m1),
                  $$VALUES ('running'::text, 1, true, interval '60 seconds')$$,
                  'a claimed run is running, attempt 1, started, leased for pg_agents.run_lease');
SELECT is((SELECT id FROM agent.claim_runs(1)), :a1::bigint, 'then the autonomous run');
SELECT ok(NOT EXISTS (SELECT 1 FROM agent.claim_runs(5) c WHERE c.agent_id = 320001),
          'a claimed run is never claimed again');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'run.claim' AND target_id = :m1::text), 'claims are audited');
SELECT throws_ok('SELECT * FROM agent.claim_runs(0)', '22023', 'number of runs to claim must be positive', 'n >= 1');

-- 3. leases
SET LOCAL pg_agents.run_lease = 120;
SELECT is(agent.renew_lease(:m1), now() + interval '120 seconds', 'renew_lease extends the lease');
SELECT throws_ok('SELECT agent.renew_lease(999999999)', '42704', 'run 999999999 does not exist', 'renewing an unknown run');
SELECT is(agent._tick_runs(now() + interval '90 seconds') IS NOT NULL, true, 'tick before the lease ends');
SELECT set_eq(format('SELECT id, status FROM agent.runs WHERE id IN (%s, %s, %s)', :m1, :m2, :a1),
                  format($$VALUES (%s::bigint, 'running'::text), (%s::bigint, 'queued'::text), (%s::bigint, 'queued'::text)$$, :m1, :m2, :a1),
                  'expired leases are reclaimed (back to queued), a renewed one is kept');
SELECT throws_ok(format('SELECT agent.renew_lease(%s)', :m2), '55000', format('run %s is not running', :m2),
                 'a reclaimed run has no lease to renew');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'run.reclaim' AND target_id = :a1::text), 'reclaims are audited');
SELECT is((SELECT attempts FROM agent.runs WHERE id = :a1), 1, 'a reclaim keeps the attempt count');
SET LOCAL pg_agents.max_attempts = 2;
SELECT ok((SELECT count(*) FROM agent.claim_runs(2) c WHERE c.id IN (:m2, :a1)) = 2, 'reclaimed runs are claimed again');
SELECT agent._tick_runs(now() + interval '1 hour');
SELECT results_eq(format('SELECT status, error, finished_at IS NOT NULL, lease_until IS NULL FROM agent.runs WHERE id = %s', :a1),
                  $$VALUES ('failed'::text, 'run abandoned after 2 attempts'::text, true, true)$$,
                  'at pg_agents.max_attempts an abandoned run fails with a clear error');
SELECT is((SELECT status FROM agent.runs WHERE id = :m1), 'queued', 'the renewed run, on its first attempt, is reclaimed once its lease ends');

-- 4. finish_run
SELECT agent._enqueue_run(320001, 'autonomous', 'event', '{"row": 1}', 320100) AS t1 \gset
UPDATE agent.runs SET priority = 30020 WHERE id = :t1;
SELECT is((SELECT id FROM agent.claim_runs(1)), :t1::bigint, 'claim the triggered run');
SELECT throws_ok(format('SELECT agent.finish_run(%s, ''done'')', :t1), '22023', 'invalid final status "done"',
                 'a final status is terminal');
SELECT throws_ok(format('SELECT agent.finish_run(%s, ''running'')', :t1), '22023', 'invalid final status "running"',
                 'running is not terminal');
SELECT throws_ok('SELECT agent.finish_run(999999999, ''succeeded'')', '42704', 'run 999999999 does not exist', 'unknown run');
SELECT lives_ok(format('SELECT agent.finish_run(%s, ''failed'', NULL, ''model endpoint unreachable'')', :t1),
                'finish a run failed');
SELECT results_eq('SELECT last_status, last_error, last_run_at IS NOT NULL FROM agent.triggers WHERE id = 320100',
                  $$VALUES ('failed'::text, 'model endpoint unreachable'::text, true)$$,
                  'the trigger records the last status, error and run time');
SELECT throws_ok(format('SELECT agent.finish_run(%s, ''succeeded'')', :t1), '55000', format('run %s has already ended', :t1),
                 'a run ends once');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'run.finish' AND target_id = :t1::text
                   AND status = 'error' AND error_code = 'failed'), 'the end is audited');
SELECT agent._enqueue_run(320001, 'autonomous', 'event', '{"row": 2}', 320100) AS t2 \gset
UPDATE agent.triggers SET last_run_at = '2020-01-01' WHERE id = 320100;
SELECT agent.finish_run(:t2, 'succeeded', '{"summary": "ok"}');
SELECT results_eq('SELECT last_status, last_error, last_run_at FROM agent.triggers WHERE id = 320100',
                  $$VALUES ('succeeded'::text, NULL::text, '2020-01-01'::timestamptz)$$,
                  'last_run_at is kept when set (the queue sets it), status and error replaced');
SELECT is((SELECT output FROM agent.runs WHERE id = :t2), '{"summary": "ok"}'::jsonb, 'the output is stored');

-- 5. re-run
SELECT agent.start_run(320001, 'i1', '{"message": "again"}') AS m3 \gset
SELECT agent.rerun(:m3, 'i1') AS rr \gset
SELECT results_eq(format('SELECT regime, origin, requested_by, input FROM agent.runs WHERE id = %s', :rr),
                  format($$VALUES ('manual'::text, 'rerun'::text, 'i1'::text, '{"message": "again", "rerun_of": %s}'::jsonb)$$, :m3),
                  'a re-run is a linked run with the same input plus rerun_of, same regime');
SELECT throws_ok(format('SELECT agent.rerun(%s, ''i2'')', :m3), '42501', format('user "i2" may not re-run run %s', :m3),
                 'an interact user cannot re-run another user''s run');
SELECT throws_ok(format('SELECT agent.rerun(%s, ''e1'')', :m3), '42501', format('user "e1" may not re-run run %s', :m3),
                 'nor can an edit user, who sees only their own manual runs');
SELECT agent.rerun(:m3, 'o1') AS re \gset
SELECT is((SELECT requested_by FROM agent.runs WHERE id = :re), 'o1', 'the owner (full) can, and the re-run is theirs');
SELECT throws_ok(format('SELECT agent.rerun(%s, ''i1'')', :a1), '42501', format('user "i1" may not re-run run %s', :a1),
                 're-running an autonomous run needs the edit level');
SELECT agent.rerun(:a1, 'e1') AS ra \gset
SELECT results_eq(format('SELECT regime, origin, input ->> ''rerun_of'' FROM agent.runs WHERE id = %s', :ra),
                  format($$VALUES ('autonomous'::text, 'rerun'::text, '%s'::text)$$, :a1),
                  'the re-run of an autonomous run is autonomous');
SELECT throws_ok('SELECT agent.rerun(999999999, ''o1'')', '42704', 'run 999999999 does not exist', 're-run of an unknown run');

-- 6. cancel, descendants included
SELECT is(agent.cancel_run(:m3, 'i1'), 1, 'a user cancels their own manual run');
SELECT results_eq(format('SELECT status, error FROM agent.runs WHERE id = %s', :m3),
                  $$VALUES ('cancelled'::text, 'cancelled by i1'::text)$$, 'cancelled, saying by whom');
SELECT throws_ok(format('SELECT agent.cancel_run(%s, ''i1'')', :re), '42501',
                 format('user "i1" may not cancel run %s', :re), 'an interact user cannot cancel another user''s run');
SELECT agent.start_run(320001, NULL, '{}', 'autonomous', 'api') AS p \gset
UPDATE agent.runs SET status = 'running' WHERE id = :p;
SELECT agent.delegate(:p, 320004, 'part one', '[]', 100) AS k1 \gset
UPDATE agent.runs SET status = 'running' WHERE id = :k1;
SELECT agent.delegate(:k1, 320005, 'part two', '[]', 10) AS k2 \gset
SELECT agent.delegate(:p, 320004, 'part three', '[]', 100) AS k3 \gset
SELECT agent.finish_run(:k3, 'succeeded');
SELECT throws_ok(format('SELECT agent.cancel_run(%s, ''i1'')', :p), '42501', NULL, 'cancelling an autonomous run needs the edit level');
SELECT is(agent.cancel_run(:p, 'e1'), 3, 'cancelling a run cancels its active descendants (3 runs)');
SELECT results_eq(format('SELECT id, status FROM agent.runs WHERE id IN (%s, %s, %s, %s) ORDER BY id', :p, :k1, :k2, :k3),
                  format($$VALUES (%s::bigint, 'cancelled'::text), (%s::bigint, 'cancelled'::text), (%s::bigint, 'cancelled'::text), (%s::bigint, 'succeeded'::text)$$,
                         :p, :k1, :k2, :k3),
                  'the tree is cancelled; a finished child keeps its status');
SELECT is((SELECT error FROM agent.runs WHERE id = :k2), format('cancelled: parent run %s ended cancelled', :k1),
          'a descendant says why it was cancelled');
SELECT is((SELECT tokens_reserved FROM agent.runs WHERE id = :p), 0::bigint, 'no reservation is left behind');
SELECT is(agent.cancel_run(:p, 'e1'), 0, 'cancelling an ended run does nothing');
-- cancelling only a child: the parent sees it as its delegate result
SELECT agent.start_run(320001, NULL, '{}', 'autonomous', 'api') AS q \gset
UPDATE agent.runs SET status = 'running' WHERE id = :q;
SELECT (agent.try_delegate(:q, 320004, 'part', '[]', 100) ->> 'child_run_id')::bigint AS q1 \gset
SELECT is(agent.cancel_run(:q1, 'o1'), 1, 'the owner cancels a child run');
SELECT results_eq(format($$SELECT r.status, s.status, s.output ->> 'status' FROM agent.runs r
                            JOIN agent.run_steps s ON s.run_id = r.id AND s.kind = 'delegate' WHERE r.id = %s$$, :q),
                  $$VALUES ('running'::text, 'error'::text, 'cancelled'::text)$$,
                  'the parent keeps running and reads the cancellation as the child''s result');
-- a parent that ends leaves no child behind
SELECT agent.delegate(:q, 320004, 'part', '[]', 100) AS q2 \gset
SELECT agent.finish_run(:q, 'succeeded');
SELECT is((SELECT status FROM agent.runs WHERE id = :q2), 'cancelled', 'a run that ends cancels its active children');

-- 7. a deleted agent's runs never start
SELECT agent.start_run(320005, NULL, '{}', 'autonomous', 'api') AS dq \gset
UPDATE agent.runs SET priority = 32000 WHERE id = :dq;
UPDATE agent.agents SET deleted_at = now() WHERE id = 320005;
SELECT ok(NOT EXISTS (SELECT 1 FROM agent.claim_runs(3) c WHERE c.id = :dq), 'claim_runs skips the runs of a deleted agent');
SELECT agent._tick_runs(now());
SELECT results_eq(format('SELECT status, error FROM agent.runs WHERE id = %s', :dq),
                  $$VALUES ('cancelled'::text, 'agent 320005 was deleted'::text)$$, 'and tick cancels them');

-- 8. privileges: not for PUBLIC
CREATE ROLE runs_plain_role;
SELECT ok(NOT has_function_privilege('runs_plain_role', f, 'EXECUTE'), 'PUBLIC cannot execute ' || f)
  FROM unnest(ARRAY['agent.finish_run(bigint,text,jsonb,text)', 'agent.approve(text,text,bigint)', 'agent.approve(text,text)']) AS f;

-- hourly cap within one transaction: counted once, then carried (and undone
-- with a rolled-back subtransaction, like the runs)
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES (320009, 'ws-runs-b', 'o1', 'capped', 3);
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status) VALUES ('ws-runs-b', 320009, 'autonomous', 'event', 'succeeded');
SELECT agent._enqueue_run(320009, 'autonomous', 'api', '{}') AS cap1 \gset
SAVEPOINT cap_sp;
SELECT agent._enqueue_run(320009, 'autonomous', 'api', '{}') AS cap2 \gset
SELECT agent._enqueue_run(320009, 'autonomous', 'api', '{}') AS cap3 \gset
SELECT is((SELECT string_agg(status, ',' ORDER BY id) FROM agent.runs WHERE id IN (:cap2, :cap3)), 'queued,budget_exceeded',
          'cap 3 with one run of the hour: the 2nd queued in the transaction is the last one');
ROLLBACK TO SAVEPOINT cap_sp;
SELECT agent._enqueue_run(320009, 'autonomous', 'api', '{}') AS cap4 \gset
SELECT is((SELECT status FROM agent.runs WHERE id = :cap4), 'queued',
          'after a rolled-back savepoint the runs it queued no longer count');
SELECT agent._enqueue_run(320009, 'autonomous', 'api', '{}') AS cap5 \gset
SELECT is((SELECT status FROM agent.runs WHERE id = :cap5), 'budget_exceeded', 'and the cap holds again');
SELECT agent._enqueue_run(320009, 'manual', 'chat', '{}', NULL, 'o1') AS cap6 \gset
SELECT is((SELECT status FROM agent.runs WHERE id = :cap6), 'queued', 'manual runs are not capped');

SELECT * FROM finish();
ROLLBACK;
