-- Fair claiming (agent.claim_runs, docs/runs.md "Fair claiming"): one busy
-- workspace does not make the others wait; interactive runs first;
-- pg_agents.max_runs_per_workspace; the tenant boundary and who may claim.
BEGIN;
SELECT plan(30);

-- runs left queued or running by other tests of this database would take
-- their turn too: out of the way for this transaction
UPDATE agent.runs SET status = 'cancelled', finished_at = now(), lease_until = NULL
 WHERE status IN ('queued', 'running');

INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap, deleted_at) VALUES
  (380001, 'fair-a', 'oa', 'busy', 100000, NULL),
  (380002, 'fair-b', 'ob', 'small b', 100, NULL),
  (380003, 'fair-c', 'oc', 'small c', 100, NULL),
  (380004, 'fair-d', 'od', 'gone', 100, NULL);
CREATE TEMP TABLE q (tag text PRIMARY KEY, id bigint);
GRANT SELECT ON q TO PUBLIC;   -- the helpers below run as the roles of section 6 too
CREATE FUNCTION pg_temp.id(text) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM q WHERE tag = $1 $$;
CREATE FUNCTION pg_temp.tags(text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(coalesce(q.tag, 'run ' || c.id), ' ' ORDER BY c.ord), '')
    FROM unnest($1::bigint[]) WITH ORDINALITY c(id, ord) LEFT JOIN q ON q.id = c.id $$;
CREATE FUNCTION pg_temp.claim(n int) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.tags(coalesce(array_agg(c.id), '{}')::text) FROM agent.claim_runs(n) c $$;

-- 1. a busy workspace with 500 queued autonomous runs, then one run in each
--    of two other workspaces, queued after all of them
INSERT INTO q SELECT 'a' || i, agent._enqueue_run(380001, 'autonomous', 'api', jsonb_build_object('i', i))
  FROM generate_series(1, 500) i;
INSERT INTO q VALUES ('b1', agent._enqueue_run(380002, 'autonomous', 'api'));
INSERT INTO q VALUES ('c1', agent._enqueue_run(380003, 'autonomous', 'api'));
SELECT is(pg_temp.claim(4), 'a1 b1 c1 a2',
          'one claim of 4 serves the two small workspaces however many runs the busy one has queued (every workspace''s first run, then the busy one''s second)');
SELECT is((SELECT string_agg(status, ',' ORDER BY id) FROM agent.runs WHERE id IN (pg_temp.id('b1'), pg_temp.id('c1'))),
          'running,running', 'both are running');
SELECT is((SELECT count(*)::int FROM agent.runs WHERE agent_id = 380001 AND status = 'queued'), 498,
          'the busy workspace keeps the rest of its queue');

-- 2. claims of one run at a time: the workspace with fewer runs in flight
--    goes first, so a small workspace is not starved by older runs
INSERT INTO q VALUES ('b2', agent._enqueue_run(380002, 'autonomous', 'api'));
SELECT is(pg_temp.claim(1), 'b2', 'a claim of one run serves the workspace with fewer runs running (b: 1, a: 2)');
SELECT is(pg_temp.claim(1), 'a3', 'then the busy workspace again, oldest first');
SELECT is(pg_temp.claim(2), 'a4 a5', 'with no other workspace queued, the busy one gets every slot');

-- 3. interactive before autonomous: across workspaces, and within one
INSERT INTO q VALUES ('c2', agent._enqueue_run(380003, 'autonomous', 'api'));
INSERT INTO q VALUES ('a_chat', agent._enqueue_run(380001, 'manual', 'chat', '{}', NULL, 'ua'));
SELECT is(pg_temp.claim(2), 'a_chat c2',
          'an interactive run of the busiest workspace comes before the autonomous runs of all workspaces');
INSERT INTO q VALUES ('b3', agent._enqueue_run(380002, 'autonomous', 'api'));
INSERT INTO q VALUES ('b_chat', agent._enqueue_run(380002, 'manual', 'chat', '{}', NULL, 'ub'));
SELECT is(pg_temp.claim(1), 'b_chat', 'within a workspace, interactive first though queued last');
SELECT is(pg_temp.claim(1), 'b3', 'then its autonomous run (b: 3 running, a: 6)');

-- 4. runs of a deleted agent are never handed out, fairness or not
INSERT INTO q VALUES ('d1', agent._enqueue_run(380004, 'autonomous', 'api'));
UPDATE agent.agents SET deleted_at = now() WHERE id = 380004;
SELECT ok(NOT EXISTS (SELECT 1 FROM agent.claim_runs(3) c WHERE c.workspace_id = 'fair-d'),
          'a deleted agent''s queued run is not claimed');

-- 5. pg_agents.max_runs_per_workspace: a workspace at its cap is skipped
SELECT is((SELECT count(*)::int FROM agent.runs WHERE workspace_id = 'fair-a' AND status = 'running'), 9,
          'the busy workspace has 9 runs running');
SET LOCAL pg_agents.max_runs_per_workspace = 11;
SELECT is(pg_temp.claim(10), 'a9 a10', 'with a cap of 11, a claim of 10 takes only the 2 runs left under the cap');
SELECT is(pg_temp.claim(10), '', 'a workspace at its cap is skipped: nothing to claim (not a wait)');
INSERT INTO q VALUES ('b4', agent._enqueue_run(380002, 'autonomous', 'api'));
INSERT INTO q VALUES ('c3', agent._enqueue_run(380003, 'autonomous', 'api'));
SELECT is(pg_temp.claim(10), 'c3 b4', 'the other workspaces are still served (c first: 2 running, b: 4)');
UPDATE agent.runs SET status = 'waiting_approval', lease_until = NULL WHERE id = pg_temp.id('a9');
UPDATE agent.runs SET status = 'waiting_children', lease_until = NULL WHERE id = pg_temp.id('a10');
SELECT is(pg_temp.claim(10), 'a11 a12', 'runs waiting for an approval or a child run do not count against the cap');
SELECT agent.finish_run(pg_temp.id('a1'), 'succeeded') \gset
SELECT is(pg_temp.claim(10), 'a13', 'a run that ends frees its place');
SET LOCAL pg_agents.max_runs_per_workspace = 0;
SELECT is(pg_temp.claim(3), 'a14 a15 a16', '0 sets no cap');

-- 6. who may claim, and the tenant boundary
CREATE ROLE fair_nobody NOLOGIN;
CREATE ROLE fair_app NOLOGIN IN ROLE agents_app;
CREATE ROLE fair_exec NOLOGIN IN ROLE agents_executor;
SET LOCAL ROLE fair_nobody;
SET LOCAL pg_agents.workspace = 'fair-b';
SELECT throws_ok('SELECT agent.claim_runs(1)', '42501', NULL, 'a role with no grants may not claim runs');
RESET ROLE;

SET LOCAL ROLE fair_app;
SELECT throws_ok($$SET pg_agents.max_runs_per_workspace = 0$$, '42501', NULL,
                 'the application cannot lift the cap for its session');
RESET ROLE;

INSERT INTO q VALUES ('b5', agent._enqueue_run(380002, 'autonomous', 'api'));
INSERT INTO q VALUES ('b6', agent._enqueue_run(380002, 'autonomous', 'api'));
INSERT INTO q VALUES ('c4', agent._enqueue_run(380003, 'autonomous', 'api'));
SET LOCAL pg_agents.max_runs_per_workspace = 6;   -- b has 5 running
SET LOCAL ROLE fair_exec;
SELECT throws_ok($$SET pg_agents.max_runs_per_workspace = 0$$, '42501', NULL,
                 'an executor cannot lift the cap for its session');
SELECT throws_ok($$SELECT set_config('pg_agents.max_runs_per_workspace', '0', true)$$, '42501', NULL,
                 'nor through set_config');
SET LOCAL pg_agents.workspace = '';
SELECT throws_ok('SELECT agent.claim_runs(1)', '42501', 'pg_agents.workspace is not set',
                 'an executor session bound to no workspace claims nothing');
SET LOCAL pg_agents.workspace = 'fair-b';
SELECT is(pg_temp.claim(10), 'b5', 'an executor of workspace b claims b''s runs only, under the cap');
SET LOCAL pg_agents.workspace = 'fair-zz';
SELECT is(pg_temp.claim(10), '', 'a workspace without queued runs gets nothing');
RESET ROLE;
SELECT is((SELECT string_agg(status, ',') FROM agent.runs WHERE id IN (pg_temp.id('c4'), pg_temp.id('a17'), pg_temp.id('b6'))),
          'queued,queued,queued', 'the other tenants'' runs stay queued (and b''s next, over the cap)');

-- an agent session (tool SQL) may not claim
SET LOCAL ROLE agents_tool;
SET LOCAL pg_agents.actor = 'agent:380002';
SET LOCAL pg_agents.workspace = 'fair-b';
SELECT throws_ok('SELECT agent.claim_runs(1)', '42501', NULL, 'an agent session may not claim runs');
RESET ROLE;
RESET pg_agents.actor;
SET LOCAL pg_agents.workspace = '';

-- 7. what was claimed: each run once, audited once, attempts 1
SELECT is((SELECT count(*)::int FROM agent.runs r JOIN q ON q.id = r.id WHERE r.attempts > 1), 0,
          'no run was claimed twice');
SELECT is((SELECT count(*)::int FROM agent.audit_log l JOIN q ON q.id::text = l.target_id
            WHERE l.action = 'run.claim' AND l.target_type = 'run'),
          (SELECT count(*)::int FROM agent.runs r JOIN q ON q.id = r.id WHERE r.attempts = 1),
          'one run.claim audit row per claimed run');
SELECT is((SELECT count(*)::int FROM agent.runs r JOIN q ON q.id = r.id
            WHERE r.status IN ('running', 'succeeded', 'waiting_approval', 'waiting_children')
              AND (r.started_at IS NULL OR r.attempts <> 1)), 0,
          'every claimed run was started, attempt 1');

-- 8. many workspaces: at most n - W + 1 runs of one workspace per claim,
--    every workspace with nothing running first
SET LOCAL pg_agents.max_runs_per_workspace = 0;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap)
SELECT 380100 + i, 'fair-m' || i, 'om', 'many', 100 FROM generate_series(1, 6) i;
SELECT count(agent._enqueue_run(380100 + i, 'autonomous', 'api')) AS m_runs FROM generate_series(1, 6) i \gset
SELECT is((SELECT count(DISTINCT c.workspace_id)::int FROM agent.claim_runs(6) c WHERE c.workspace_id LIKE 'fair-m%'), 6,
          'a claim of 6 takes the run of each of 6 idle workspaces before any run of the busy one');

SELECT * FROM finish();
ROLLBACK;
