-- Approvals: deterministic keys, request / approve / deny (the run goes on,
-- or ends with deny_ends_run) / expire; one decision decides one call once.
BEGIN;
SELECT plan(63);

-- 1. keys
SELECT matches(agent.approval_key('runs_t_send', '{"a": 1}'), '^[0-9a-f]{64}$', 'a key is 64 hex digits');
SELECT is(agent.approval_key('runs_t_send', '{"to": "a@b.c", "body": "hi"}'),
          agent.approval_key('runs_t_send', '{"body": "hi", "to": "a@b.c"}'), 'the same key whatever the key order');
SELECT is(agent.approval_key('t', '{"x": {"b": [1, {"d": 1, "c": 2}], "a": null}, "w": true}'),
          agent.approval_key('t', '{"w": true, "x": {"a": null, "b": [1, {"c": 2, "d": 1}]}}'),
          'key order does not matter at any depth');
SELECT isnt(agent.approval_key('t', '{"l": [1, 2]}'), agent.approval_key('t', '{"l": [2, 1]}'), 'arrays keep their order');
SELECT isnt(agent.approval_key('t', '{"to": "a@b.c"}'), agent.approval_key('t', '{"to": "a@b.d"}'), 'different inputs, different keys');
SELECT isnt(agent.approval_key('t1', '{"to": "a"}'), agent.approval_key('t2', '{"to": "a"}'), 'different tools, different keys');
SELECT isnt(agent.approval_key('t', '{"n": 1}'), agent.approval_key('t', '{"n": "1"}'), 'a number is not a string');
SELECT is(agent.approval_key('t', '{"n": 1.50, "m": 1e2, "z": 0.0}'), agent.approval_key('t', '{"n": 1.5, "m": 100, "z": 0}'),
          'numbers are normalised');
SELECT isnt(agent.approval_key('t', '{"a": {}}'), agent.approval_key('t', '{"a": []}'), 'an empty object is not an empty array');
SELECT isnt(agent.approval_key('ab', '"c"'), agent.approval_key('a', '"bc"'), 'the tool name and the input cannot run into each other');
SELECT is(agent.approval_key('send_email', '{"to": "x", "a": 1}'),
          encode(sha256(convert_to('["send_email",{"a":1,"to":"x"}]', 'UTF8')), 'hex'),
          'the key is the SHA-256 of the canonical JSON of [tool, input]');
SELECT is(agent.canonical_json('{"b": 1, "aa": {"d": [3, 1], "c": "x\"y"}, "é": 0, "z": null}'),
          '{"aa":{"c":"x\"y","d":[3,1]},"b":1,"z":null,"é":0}', 'canonical JSON: keys by bytes, escaped strings, no spaces');
SELECT is(agent.canonical_json('[1.000, "x", true, null]'), '[1,"x",true,null]', 'canonical JSON of an array');
SELECT is(agent.canonical_json('"scalar"'), '"scalar"', 'canonical JSON of a scalar');
SELECT throws_ok($$SELECT agent.approval_key('', '{}')$$, '22023', 'tool name must not be empty', 'a tool is named');

-- 2. request, approve, consume once
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (330001, 'ws-runs-a', 'o3', 'mailer'), (330002, 'ws-runs-a', 'o4', 'other mailer');
INSERT INTO agent.shares (agent_id, user_id, level) VALUES (330001, 'i3', 'interact'), (330001, 'e3', 'edit');
CREATE FUNCTION pg_temp.running(p_agent bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
  v := agent.start_run(p_agent, NULL, '{}', 'autonomous', 'api');
  UPDATE agent.runs SET status = 'running', attempts = 1 WHERE id = v;
  RETURN v;
END $$;
SET LOCAL pg_agents.approval_ttl = '30min';
SELECT pg_temp.running(330001) AS r1 \gset
SELECT agent.request_approval(:r1, 'runs_t_send', '{"to": "x@y.z", "body": "hi", "cc": "boss@y.z"}') AS k1 \gset
SELECT is(:'k1', agent.approval_key('runs_t_send', '{"body": "hi", "cc": "boss@y.z", "to": "x@y.z"}'),
          'request_approval returns the call''s key');
SELECT results_eq(format('SELECT status, lease_until IS NULL FROM agent.runs WHERE id = %s', :r1),
                  $$VALUES ('waiting_approval'::text, true)$$, 'the run waits for approval, its lease released');
SELECT results_eq(format('SELECT status, input, expires_at - now() FROM agent.approvals WHERE run_id = %s', :r1),
                  $$VALUES ('pending'::text, '{"to": "x@y.z", "body": "hi", "cc": "boss@y.z"}'::jsonb, interval '30 minutes')$$,
                  'a pending approval with the input exactly as it will run, expiring after pg_agents.approval_ttl');
SELECT throws_ok(format($$SELECT agent.request_approval(%s, 'runs_t_send', '{"to": "x@y.z", "api_key": "sk-abcdefghijklmnopqrstuvwxyz"}')$$, :r1),
                 '22023', 'tool input holds a credential-shaped value', 'a call carrying a credential cannot be approved (it would be stored)');
SELECT is(agent.request_approval(:r1, 'runs_t_send', '{"cc": "boss@y.z", "to": "x@y.z", "body": "hi"}'), :'k1',
          'asking again for the same call gives the same key');
SELECT is((SELECT count(*)::int FROM agent.approvals WHERE run_id = :r1), 1, 'and no second approval');
SELECT is(agent.consume_approval(:r1, 'runs_t_send', '{"to": "x@y.z", "body": "hi", "cc": "boss@y.z"}'), false,
          'a pending call cannot be executed');
SELECT throws_ok(format('SELECT agent.approve(%L, ''i3'')', :'k1'), '42501', format('user "i3" may not decide approval "%s"', :'k1'),
                 'an interact user cannot approve');
SELECT throws_ok(format('SELECT agent.approve(%L, ''nobody'')', :'k1'), '42501', NULL, 'a stranger cannot approve');
SELECT throws_ok($$SELECT agent.approve('0000', 'e3')$$, '42704', 'no pending approval with key "0000"', 'an unknown key');
SELECT is(agent.approve(:'k1', 'e3'), :r1::bigint, 'an edit user approves; approve returns the run');
SELECT results_eq(format('SELECT a.status, a.decided_by, r.status FROM agent.approvals a JOIN agent.runs r ON r.id = a.run_id WHERE a.run_id = %s', :r1),
                  $$VALUES ('approved'::text, 'e3'::text, 'queued'::text)$$, 'approved, and the run is queued again');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'approval.approve' AND inputs ->> 'by_user' = 'e3'
                   AND (inputs ->> 'run_id')::bigint = :r1), 'the decision is audited');
SELECT throws_ok(format('SELECT agent.approve(%L, ''e3'')', :'k1'), '55000', format('approval "%s" is no longer pending', :'k1'),
                 'a decided approval cannot be decided again');
SELECT is(agent.consume_approval(:r1, 'runs_t_send', '{"to": "x@y.z", "body": "hello", "cc": "boss@y.z"}'), false,
          'the approval does not cover a different input');
SELECT is(agent.consume_approval(:r1, 'runs_t_send', '{"body": "hi", "to": "x@y.z", "cc": "boss@y.z"}'), true,
          'the approved call is executed once');
SELECT is(agent.consume_approval(:r1, 'runs_t_send', '{"to": "x@y.z", "body": "hi", "cc": "boss@y.z"}'), false,
          'and only once');

-- 3. approving one call never approves another
SELECT pg_temp.running(330001) AS r2 \gset
SELECT agent.request_approval(:r2, 'runs_t_send', '{"to": "a"}') AS ka \gset
SELECT agent.request_approval(:r2, 'runs_t_send', '{"to": "b"}') AS kb \gset
SELECT agent.approve(:'ka', 'o3');
SELECT is((SELECT status FROM agent.runs WHERE id = :r2), 'waiting_approval', 'a run with another pending call keeps waiting');
SELECT is(agent.consume_approval(:r2, 'runs_t_send', '{"to": "b"}'), false, 'the other call is not approved');
SELECT is(agent.consume_approval(:r1, 'runs_t_send', '{"to": "a"}'), false, 'nor is the same call in another run');
SELECT agent.approve(:'kb', 'o3');
SELECT is((SELECT status FROM agent.runs WHERE id = :r2), 'queued', 'once every call is decided the run is queued');

-- 4. deny: the call never runs, the model is told (once), the run goes on
SELECT pg_temp.running(330001) AS r3 \gset
SELECT agent.request_approval(:r3, 'runs_t_delete', '{"page": "p9"}') AS kd \gset
SELECT throws_ok(format('SELECT agent.deny(%L, ''e3'', NULL, %L)', :'kd', repeat('x', 1001)), '22023',
                 'reason of a denial is too long', 'a reason has at most 1000 characters');
SELECT is(agent.deny(:'kd', 'e3', NULL, '  not this page  '), :r3::bigint, 'an edit user denies, with a reason');
SELECT results_eq(format('SELECT r.status, r.error, a.status, a.decided_by, a.reason FROM agent.runs r JOIN agent.approvals a ON a.run_id = r.id WHERE r.id = %s', :r3),
                  $$VALUES ('queued'::text, NULL::text, 'denied'::text, 'e3'::text, 'not this page'::text)$$,
                  'the run is queued again (it goes on), the reason kept');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'approval.deny' AND status = 'denied'
                   AND (inputs ->> 'run_id')::bigint = :r3 AND inputs ->> 'reason' = 'not this page'), 'a denial is audited with its reason');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'run.resume' AND target_id = :'r3'), 'and the resume');
SELECT is(agent.consume_approval(:r3, 'runs_t_delete', '{"page": "p9"}'), false, 'a denied call is never executed');
SELECT is(agent.consume_refusal(:r3, 'runs_t_delete', '{"page": "p8"}'), NULL, 'no refusal for another call');
SELECT is(agent.consume_refusal(:r3, 'runs_t_delete', '{"page": "p9"}'),
          '{"status": "denied", "decided_by": "e3", "reason": "not this page"}'::jsonb, 'the executor gets the refusal to tell the model');
SELECT is(agent.consume_refusal(:r3, 'runs_t_delete', '{"page": "p9"}'), NULL, 'once');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'approval.refuse' AND (inputs ->> 'run_id')::bigint = :r3),
          'the refusal given to the model is audited');
UPDATE agent.runs SET status = 'running' WHERE id = :r3;
SELECT is(agent.request_approval(:r3, 'runs_t_delete', '{"page": "p9"}'), :'kd', 'the same call asked again later');
SELECT is((SELECT count(*)::int FROM agent.approvals WHERE run_id = :r3 AND status = 'pending'), 1,
          'is a new pending approval: a denial decided one call');
-- denying one of two pending calls decides nothing about the other
SELECT agent.request_approval(:r3, 'runs_t_delete', '{"page": "p10"}') AS kd2 \gset
SELECT agent.deny(:'kd2', 'e3');
SELECT is((SELECT status FROM agent.runs WHERE id = :r3), 'waiting_approval', 'with another call pending the run keeps waiting');
SELECT is((SELECT status FROM agent.approvals WHERE run_id = :r3 AND approval_key = :'kd' AND status <> 'denied'), 'pending',
          'and that call is still pending');
SELECT is((SELECT reason FROM agent.approvals WHERE approval_key = :'kd2'), NULL, 'a denial without a reason');
-- deny_ends_run: the 0.3.0 behaviour
INSERT INTO agent.agents (id, workspace_id, owner_id, name, scope) VALUES (330003, 'ws-runs-a', 'o3', 'strict', '{"deny_ends_run": true}');
SELECT pg_temp.running(330003) AS r8 \gset
SELECT agent.request_approval(:r8, 'runs_t_delete', '{"page": "p9"}') AS k8 \gset
SELECT is(agent.deny(:'k8', 'o3', :r8, 'no'), :r8::bigint, 'deny_ends_run: the owner denies');
SELECT results_eq(format('SELECT r.status, r.error, a.status FROM agent.runs r JOIN agent.approvals a ON a.run_id = r.id WHERE r.id = %s', :r8),
                  $$VALUES ('failed'::text, 'denied by o3'::text, 'denied'::text)$$, 'deny_ends_run: the run fails, denied by the user');

-- 5. the same call pending in several runs
SELECT pg_temp.running(330001) AS r4 \gset
SELECT pg_temp.running(330001) AS r5 \gset
SELECT agent.request_approval(:r4, 'runs_t_post', '{"msg": "same"}') AS ks \gset
SELECT agent.request_approval(:r5, 'runs_t_post', '{"msg": "same"}');
SELECT throws_ok(format('SELECT agent.approve(%L, ''e3'')', :'ks'), '22023', format('approval key "%s" is pending on 2 runs', :'ks'),
                 'an ambiguous key is refused');
SELECT is(agent.approve(:'ks', 'e3', :r4), :r4::bigint, 'the run id picks one');
SELECT is((SELECT status FROM agent.approvals WHERE run_id = :r5), 'pending', 'the other run still waits');
SELECT pg_temp.running(330002) AS r6 \gset
SELECT agent.request_approval(:r6, 'runs_t_post', '{"msg": "same"}');
SELECT is(agent.approve(:'ks', 'e3'), :r5::bigint, 'runs the user cannot decide do not make a key ambiguous');
SELECT is((SELECT status FROM agent.approvals WHERE run_id = :r6), 'pending', 'and are left alone');
SELECT agent.cancel_run(:r6, 'o4');
SELECT is((SELECT status FROM agent.approvals WHERE run_id = :r6), 'expired', 'a run that ends closes its pending approvals');

-- 6. expiry
SELECT pg_temp.running(330001) AS r7 \gset
SELECT agent.request_approval(:r7, 'runs_t_pay', '{"amount": 10}') AS ke \gset
SELECT agent._tick_runs(now() + interval '29 minutes');
SELECT is((SELECT status FROM agent.approvals WHERE run_id = :r7), 'pending', 'before its time-to-live an approval waits');
SELECT agent._tick_runs(now() + interval '31 minutes');
SELECT results_eq(format('SELECT r.status, a.status, r.error LIKE ''approval of tool "runs_t_pay" expired at %%'' FROM agent.runs r JOIN agent.approvals a ON a.run_id = r.id WHERE r.id = %s', :r7),
                  $$VALUES ('expired'::text, 'expired'::text, true)$$, 'after it the approval expires and the run ends expired');
SELECT throws_ok(format('SELECT agent.approve(%L, ''e3'')', :'ke'), '55000', NULL, 'an expired approval cannot be approved');
SELECT throws_ok(format('SELECT agent.request_approval(%s, ''runs_t_pay'', ''{}'')', :r7), '55000',
                 format('run %s is not running', :r7), 'an ended run asks for nothing');

SELECT * FROM finish();
ROLLBACK;
