-- Delegation: depth (0..5, clamping), cycles, who may receive work, budgets
-- (reservation, return, fail closed), roll-up, results back to the parent.
BEGIN;
SELECT plan(79);

-- A chain of agents 310000..310006, each listing the next; plus odd cases.
INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, default_token_budget)
SELECT 310000 + i, 'ws-runs-d', 'u-d', 'chain ' || i, jsonb_build_array(310001 + i), 100000
  FROM generate_series(0, 6) i;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, default_token_budget, status, deleted_at) VALUES
  (310100, 'ws-runs-d', 'u-d', 'hub', '[310100, 310101, 310102, 310103, 310104, 310105, 310106, "310107"]', 100000, 'active', NULL),
  (310101, 'ws-runs-d', 'u-d', 'suspended', '[]', 1000, 'suspended', NULL),
  (310102, 'ws-runs-d', 'u-d', 'deleted', '[]', 1000, 'active', now()),
  (310103, 'ws-runs-other', 'u-d', 'other workspace', '[]', 1000, 'active', NULL),
  (310104, 'ws-runs-d', 'u-d', 'helper', '[310105]', 300, 'active', NULL),
  (310105, 'ws-runs-d', 'u-d', 'helper 2', '[310106]', 250, 'active', NULL),
  (310106, 'ws-runs-d', 'u-d', 'helper 3', '[310100]', 200, 'active', NULL),
  (310107, 'ws-runs-d', 'u-d', 'listed as a string', '[]', 1000, 'active', NULL),
  (310108, 'ws-runs-d', 'u-d', 'not listed', '[]', 1000, 'active', NULL);

-- a running root run of an agent
CREATE FUNCTION pg_temp.root(p_agent bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
  v := agent.start_run(p_agent, 'u-d', '{}', 'manual', 'chat');
  UPDATE agent.runs SET status = 'running' WHERE id = v;
  RETURN v;
END $$;
-- a run set running (what a claim does)
CREATE FUNCTION pg_temp.go(p_run bigint) RETURNS bigint LANGUAGE sql AS $$
  UPDATE agent.runs SET status = 'running' WHERE id = p_run RETURNING id
$$;
-- how deep a chain gets under a depth setting, and why it stopped
CREATE FUNCTION pg_temp.reach(p_setting int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_run bigint;
  v_res jsonb;
  v_n   int := 0;
BEGIN
  PERFORM set_config('pg_agents.max_delegation_depth', p_setting::text, true);
  v_run := pg_temp.root(310000);
  LOOP
    v_res := agent.try_delegate(v_run, 310001 + v_n, 'go deeper', '[]', 10);
    EXIT WHEN NOT (v_res ->> 'ok')::boolean;
    v_n := v_n + 1;
    v_run := pg_temp.go((v_res ->> 'child_run_id')::bigint);
  END LOOP;
  RETURN v_n || ' ' || (v_res ->> 'reason');
END $$;

-- 1. depth, from the root run (depth 0); 0 disables delegation
SELECT is(agent.delegation_depth_limit(), 3, 'the default depth limit is 3');
SELECT is(pg_temp.reach(s), e, format('max_delegation_depth = %s: %s', s, e))
  FROM (VALUES (0, '0 depth_limit'), (1, '1 depth_limit'), (2, '2 depth_limit'), (3, '3 depth_limit'),
               (4, '4 depth_limit'), (5, '5 depth_limit'),
               (-1, '3 depth_limit'), (-100, '3 depth_limit'),
               (6, '5 depth_limit'), (1000, '5 depth_limit')) AS v(s, e);
SELECT set_config('pg_agents.max_delegation_depth', '-7', true);
SELECT is(agent.delegation_depth_limit(), 3, 'a negative setting falls back to 3');
SELECT set_config('pg_agents.max_delegation_depth', '12', true);
SELECT is(agent.delegation_depth_limit(), 5, 'a setting above 5 is clamped to 5');
SELECT set_config('pg_agents.max_delegation_depth', '5', true);
SELECT is(max(depth), 5, 'runs really reach depth 5 at the ceiling')
  FROM agent.runs WHERE agent_id BETWEEN 310000 AND 310006;

SELECT set_config('pg_agents.max_delegation_depth', '2', true);
SELECT pg_temp.root(310000) AS d0 \gset
SELECT pg_temp.go(agent.delegate(:d0, 310001, 'one')) AS d1 \gset
SELECT pg_temp.go(agent.delegate(:d1, 310002, 'two')) AS d2 \gset
SELECT throws_ok(format('SELECT agent.delegate(%s, 310003, ''three'')', :d2), '54000',
                 'delegation depth limit reached (max 2)', 'past the limit delegate raises 54000');
SELECT is(agent.try_delegate(:d2, 310003, 'three') ->> 'reason', 'depth_limit',
          'try_delegate returns the depth refusal');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log
                   WHERE action = 'run.delegate' AND status = 'denied' AND error_code = 'depth_limit'
                     AND target_id = :d2::text),
          'a depth refusal writes a denied audit row');
SELECT is((SELECT output ->> 'reason' FROM agent.run_steps
            WHERE run_id = :d2 AND kind = 'denied' ORDER BY seq DESC LIMIT 1), 'depth_limit',
          'and a denied step on the parent run');
SELECT is((SELECT count(*)::int FROM agent.runs WHERE parent_run_id = :d2), 0, 'a refusal makes no run');
SELECT set_config('pg_agents.max_delegation_depth', '5', true);

-- 2. the child run
SELECT pg_temp.root(310100) AS h \gset
SELECT (agent.try_delegate(:h, 310104, 'summarise', '[{"page": "p1"}]', 100) ->> 'child_run_id')::bigint AS c \gset
SELECT results_eq(
  format('SELECT regime, origin, depth, root_run_id, parent_run_id, requested_by, token_budget, status FROM agent.runs WHERE id = %s', :c),
  format($$VALUES ('autonomous'::text, 'delegation'::text, 1, %s::bigint, %s::bigint, 'agent:310100'::text, 100::bigint, 'queued'::text)$$, :h, :h),
  'the child is autonomous, origin delegation, depth + 1, root of the parent, requested by the parent agent');
SELECT is((SELECT input FROM agent.runs WHERE id = :c),
          jsonb_build_object('task', 'summarise',
                             'attachments', '[{"resource_type": "page", "resource_id": "p1", "withheld": "not_granted"}]'::jsonb,
                             'parent_run_id', :h),
          'the child receives the task, the attachments (a page it may not read withheld) and the parent run id, nothing else');
SELECT is((SELECT priority FROM agent.runs WHERE id = :c), (SELECT priority FROM agent.runs WHERE id = :h),
          'work delegated by an interactive run keeps its priority');
SELECT ok(EXISTS (SELECT 1 FROM agent.run_steps WHERE run_id = :h AND kind = 'delegate'
                   AND input ->> 'child_run_id' = :c::text AND finished_at IS NULL),
          'try_delegate opens a delegate step for the child on the parent');
SELECT agent.delegate(:h, 310104, 'no step') AS c0 \gset
SELECT ok(NOT EXISTS (SELECT 1 FROM agent.run_steps WHERE run_id = :h AND input ->> 'child_run_id' = :c0::text),
          'agent.delegate writes no step (its caller records its own)');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'run.delegate' AND status = 'success'
                   AND target_id = :c::text), 'an accepted delegation is audited');
SELECT is(agent.try_delegate(:h, 310107, 'string id in the list') ->> 'ok', 'true',
            'a delegation list may hold ids as strings');

-- 3. who may receive work
SELECT throws_ok(format('SELECT agent.delegate(%s, 310108, ''x'')', :h), '42501',
                 'agent 310100 may not delegate to agent 310108', 'an unlisted agent is refused (42501)');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310101, ''x'')', :h), '55000',
                 'agent 310101 is suspended', 'a suspended agent is refused (55000)');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310102, ''x'')', :h), '42704',
                 'agent 310102 does not exist', 'a deleted agent is refused (42704)');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310103, ''x'')', :h), '42704',
                 'agent 310103 does not exist', 'an agent of another workspace is refused (42704)');
SELECT is(agent.try_delegate(:h, r.a, 'x') ->> 'reason', r.reason, 'try_delegate reason: ' || r.reason)
  FROM (VALUES (310108::bigint, 'not_listed'), (310101, 'agent_suspended'), (310102, 'agent_deleted'),
               (310103, 'agent_not_found'), (999999999, 'not_listed')) AS r(a, reason);
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE action = 'run.delegate' AND status = 'denied'
             AND target_id = :h::text), 5, 'each refusal is audited');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310104, ''x'')', :c), '55000',
                 format('run %s is not running', :c), 'a queued run cannot delegate');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310104, '''')', :h), '22023',
                 'delegated task must not be empty', 'an empty task is refused');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310104, ''x'', ''{}'')', :h), '22023',
                 'attachments must be a json array', 'attachments are an array');
SELECT throws_ok('SELECT agent.delegate(-5, 310104, ''x'')', '42704', 'run -5 does not exist',
                 'an unknown parent run is 42704');

-- 4. cycles
SELECT throws_ok(format('SELECT agent.delegate(%s, 310100, ''myself'')', :h), '42P19',
                 'delegation cycle: agent 310100 is already in the chain', 'delegating to oneself is a cycle');
SELECT pg_temp.go(agent.delegate(:h, 310104, 'a')) AS y1 \gset
SELECT pg_temp.go(agent.delegate(:y1, 310105, 'b')) AS y2 \gset
SELECT pg_temp.go(agent.delegate(:y2, 310106, 'c')) AS y3 \gset
SELECT throws_ok(format('SELECT agent.delegate(%s, 310100, ''back to the root'')', :y3), '42P19',
                 'delegation cycle: agent 310100 is already in the chain', 'A -> B -> C -> D -> A is a cycle');
SELECT is(agent.try_delegate(:y3, 310100, 'back') ->> 'reason', 'cycle', 'try_delegate reason: cycle');
SELECT ok(EXISTS (SELECT 1 FROM agent.audit_log WHERE action = 'run.delegate' AND status = 'denied'
                   AND error_code = 'cycle' AND target_id = :y3::text), 'a cycle is audited');
-- A -> B -> A with B listing A
UPDATE agent.agents SET delegation = '[310000, 310002]' WHERE id = 310001;
SELECT pg_temp.root(310000) AS z0 \gset
SELECT pg_temp.go(agent.delegate(:z0, 310001, 'b')) AS z1 \gset
SELECT is(agent.try_delegate(:z1, 310000, 'back to A') ->> 'error',
          'delegation cycle: agent 310000 is already in the chain', 'A -> B -> A is refused as a cycle');

-- 5. budgets: reserved from the parent's envelope, fail closed, returned at the end
UPDATE agent.agents SET default_token_budget = 1000 WHERE id = 310100;
SELECT pg_temp.root(310100) AS b \gset
SELECT is((SELECT coalesce(token_budget, -1) FROM agent.runs WHERE id = :b), -1::bigint,
          'a root run started without a budget keeps NULL (its agent''s default applies)');
SELECT agent.delegate(:b, 310104, 'x', '[]', 400) AS b1 \gset
SELECT is((SELECT tokens_reserved FROM agent.runs WHERE id = :b), 400::bigint, 'the child''s budget is reserved');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310105, ''x'', ''[]'', 601)', :b), '54000',
                 'delegated token budget exceeds the parent''s remaining envelope', 'beyond the envelope is refused');
SELECT agent.delegate(:b, 310105, 'x', '[]', 600) AS b2 \gset
SELECT is((SELECT tokens_reserved FROM agent.runs WHERE id = :b), 1000::bigint, 'exactly the envelope is allowed');
SELECT throws_ok(format('SELECT agent.delegate(%s, 310106, ''x'')', :b), '54000',
                 format('run %s has no token budget left to delegate', :b), 'a NULL budget with an empty envelope is refused');
SELECT agent.delegate(:b, 310106, 'nothing', '[]', 0) AS b3 \gset
SELECT is((SELECT token_budget FROM agent.runs WHERE id = :b3), 0::bigint, 'a budget of 0 is allowed and means zero');
SELECT pg_temp.go(:b3);
SELECT cmp_ok(agent.add_usage(:b3, 1, 0), '<', 0::bigint,
              'a zero-budget child is over budget at its first token');
SELECT lives_ok(format('SELECT agent.finish_run(%s, ''budget_exceeded'', NULL, ''token budget exhausted'')', :b3),
                'the executor ends it budget_exceeded');
SELECT pg_temp.go(:b1);
SELECT is(agent.add_usage(:b1, 100, 40), 260::bigint, 'add_usage returns the run''s remaining budget');
SELECT results_eq(format('SELECT tokens_total, tokens_reserved FROM agent.runs WHERE id = %s', :b),
                  $$VALUES (141::bigint, 860::bigint)$$,
                  'the child''s usage is in the parent''s total and out of its reservation');
SELECT agent.finish_run(:b1, 'succeeded', '{"ok": true}');
SELECT results_eq(format('SELECT tokens_total, tokens_reserved FROM agent.runs WHERE id = %s', :b),
                  $$VALUES (141::bigint, 600::bigint)$$, 'the unused 260 tokens return at the end');
SELECT agent.finish_run(:b2, 'cancelled');
SELECT results_eq(format('SELECT tokens_total, tokens_reserved FROM agent.runs WHERE id = %s', :b),
                  $$VALUES (141::bigint, 0::bigint)$$, 'a child that used nothing returns its whole budget');
SELECT is((agent.try_delegate(:b, 310105, 'default budget') ->> 'token_budget')::bigint, 250::bigint,
          'a NULL child budget is the child''s default when smaller than the envelope');
SELECT is((agent.try_delegate(:b, 310104, 'envelope') ->> 'token_budget')::bigint, 300::bigint,
          '... its default again (300 < 609 left)');
SELECT agent.add_usage(:b, 300, 0);
SELECT is((agent.try_delegate(:b, 310107, 'envelope') ->> 'token_budget')::bigint, 9::bigint,
          'and the envelope when that is smaller');

-- 6. roll-up through three levels, reservations along the chain
SELECT pg_temp.root(310000) AS r0 \gset
SELECT pg_temp.go(agent.delegate(:r0, 310001, 'l1', '[]', 5000)) AS r1 \gset
SELECT pg_temp.go(agent.delegate(:r1, 310002, 'l2', '[]', 1000)) AS r2 \gset
SELECT pg_temp.go((agent.try_delegate(:r2, 310003, 'l3', '[]', 100) ->> 'child_run_id')::bigint) AS r3 \gset
SELECT is(agent.add_usage(:r3, 10, 5, 'model-x'), 85::bigint, 'usage at level 3');
SELECT agent.add_usage(:r1, 7, 0);
SELECT results_eq(format('SELECT tokens_total, tokens_reserved FROM agent.runs WHERE id IN (%s, %s, %s, %s) ORDER BY depth',
                         :r0, :r1, :r2, :r3),
                  $$VALUES (22::bigint, 4978::bigint), (22::bigint, 985::bigint), (15::bigint, 85::bigint), (15::bigint, 0::bigint)$$,
                  'tokens roll up to every ancestor; each reservation shrinks by what its child used');
SELECT results_eq(format('SELECT tokens_in, tokens_out, model FROM agent.runs WHERE id = %s', :r3),
                  $$VALUES (10::bigint, 5::bigint, 'model-x'::text)$$, 'the run keeps its own in/out counts and model');
SELECT throws_ok(format('SELECT agent.add_usage(%s, -1, 0)', :r3), '22023', 'token counts must be non-negative',
                 'negative usage is refused');

-- 7. a child's end comes back to the parent as a result, never as an error
SELECT is(agent.wait_for_children(:r2), true, 'a parent with an active child can wait for it');
SELECT is((SELECT status FROM agent.runs WHERE id = :r2), 'waiting_children', 'the parent waits');
SELECT agent.finish_run(:r3, 'failed', NULL, 'the page was not granted');
SELECT results_eq(format($$SELECT status, output ->> 'status', output ->> 'error' FROM agent.run_steps
                           WHERE run_id = %s AND kind = 'delegate'$$, :r2),
                  $$VALUES ('error'::text, 'failed'::text, 'the page was not granted'::text)$$,
                  'the child''s failure is the motivated result of the parent''s delegate step');
SELECT is((SELECT status FROM agent.runs WHERE id = :r2), 'queued',
          'the waiting parent is queued again, to decide what to do');
SELECT is((SELECT tokens_reserved FROM agent.runs WHERE id = :r2), 0::bigint, 'its reservation is back');
SELECT pg_temp.go(:r1);
SELECT agent.delegate(:r1, 310002, 'again', '[]', 10) AS s1 \gset
SELECT pg_temp.go(:s1);
SELECT is(agent.wait_for_children(:r1), true, 'waiting while two children are active');
SELECT agent.finish_run(:r2, 'succeeded', '{"text": "done"}');
SELECT is((SELECT status FROM agent.runs WHERE id = :r1), 'waiting_children',
          'one child ending while another works keeps the parent waiting');
SELECT agent.finish_run(:s1, 'succeeded');
SELECT is((SELECT status FROM agent.runs WHERE id = :r1), 'queued', 'the last child ending re-queues it');
SELECT pg_temp.go(:r1);
SELECT is(agent.wait_for_children(:r1), false, 'nothing to wait for: the run keeps running');

-- 8. the child works under its own grants (T-11 cross-leak): attaching a
-- page the parent may read grants nothing to the child
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
VALUES ('ws-runs-d', 'page', 'runs-secret', 'user:u-d', 'read');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (310104, 'page', 'runs-secret', 'read');
SELECT pg_temp.root(310104) AS g \gset
SELECT agent.delegate(:g, 310105, 'summarise the attached page', '[{"page": "runs-secret"}]', 10) AS gc \gset
SELECT ok(agent.can_access(310104, 'page', 'runs-secret', 'read', 'autonomous'), 'the parent agent may read the page');
SELECT is((SELECT regime FROM agent.runs WHERE id = :gc), 'autonomous', 'the child runs autonomous, as its own agent');
SELECT ok(NOT agent.can_access((SELECT agent_id FROM agent.runs WHERE id = :gc), 'page', 'runs-secret', 'read', 'autonomous'),
          'the child agent cannot read the parent''s page, attached or not');

-- 9. what an executor tells the model about delegation
SELECT set_config('pg_agents.max_delegation_depth', '3', true);
SELECT is(agent.delegation_context(:g) - 'chain',
          jsonb_build_object('depth', 0, 'max_depth', 3, 'can_delegate', true, 'remaining_budget', 290,
                             'delegates', '[{"agent_id": 310105, "name": "helper 2"}]'::jsonb),
          'delegation_context: depth, limit, the agents it may delegate to, the remaining budget');
SELECT pg_temp.go(:gc);
SELECT is(agent.delegation_context(:gc) -> 'chain', '[310104, 310105]'::jsonb, 'the chain of agents from the root');
SELECT set_config('pg_agents.max_delegation_depth', '1', true);
SELECT is(agent.delegation_context(:gc) ->> 'can_delegate', 'false', 'at the depth limit a run cannot delegate');

SELECT * FROM finish();
ROLLBACK;
