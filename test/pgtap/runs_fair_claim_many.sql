-- Fair claiming across many workspaces (agent.claim_runs, docs/runs.md "Fair
-- claiming"): with more workspaces queued than the claim takes, the claim
-- reads the heads of the queue in its global order (the head walk), not
-- every workspace; its order must stay the fair order: interactive first,
-- then the workspace with the fewest runs in flight, then the oldest.  Each
-- claim is compared with that order computed here over every workspace:
-- workspaces queued in scattered orders, some with runs running, some with
-- interactive runs, the head of the queue a deleted agent's run, a backlog
-- of one workspace ahead of all the others' heads (the walk falls back to
-- the skip scan), the cap; then the tenant boundary and who may claim.
BEGIN;
SELECT plan(16);

UPDATE agent.runs SET status = 'cancelled', finished_at = now(), lease_until = NULL
 WHERE status IN ('queued', 'running');

-- 300 workspaces, one agent each (agent 390000 + i in workspace fm-i), and
-- a deleted agent in workspace fm-gone
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap)
SELECT 390000 + i, 'fm-' || i, 'o' || i, 'many ' || i, 100000 FROM generate_series(1, 300) i;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap)
VALUES (389999, 'fm-gone', 'og', 'gone', 100000);

-- the fair order over every workspace (the definition, at one candidate per
-- workspace: there are more workspaces than a claim takes)
CREATE FUNCTION pg_temp.fair(n int, cap int DEFAULT 0) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(x.id::text, ' ' ORDER BY x.pri DESC, x.turn, x.id), '')
    FROM (SELECT h.id, h.pri, coalesce(r.cnt, 0) + 1 AS turn
            FROM (SELECT DISTINCT ON (q.workspace_id) q.workspace_id AS w, q.id, q.priority AS pri
                    FROM agent.runs q
                    JOIN agent.agents a ON a.id = q.agent_id AND a.workspace_id = q.workspace_id AND a.deleted_at IS NULL
                   WHERE q.status = 'queued'
                   ORDER BY q.workspace_id, q.priority DESC, q.id) h
            LEFT JOIN (SELECT workspace_id, count(*) AS cnt FROM agent.runs WHERE status = 'running'
                        GROUP BY workspace_id) r ON r.workspace_id = h.w
           WHERE cap = 0 OR coalesce(r.cnt, 0) < cap
           ORDER BY h.pri DESC, coalesce(r.cnt, 0) + 1, h.id
           LIMIT n) x $$;
CREATE FUNCTION pg_temp.claim(n int) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(c.id::text, ' '), '') FROM agent.claim_runs(n) c $$;
CREATE TEMP TABLE expect (k int PRIMARY KEY, ids text);
GRANT SELECT ON expect TO PUBLIC;

-- 1. three runs in each workspace, queued in a scattered order of the
--    workspaces (round after round), the deleted agent's first of all
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
VALUES ('fm-gone', 389999, 'autonomous', 'api', 'queued', 0);
UPDATE agent.agents SET deleted_at = now() WHERE id = 389999;
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'fm-' || i, 390000 + i, 'autonomous', 'api', 'queued', 0
  FROM generate_series(1, 3) j, generate_series(1, 300) i ORDER BY j, (i * 7919) % 300, i;
INSERT INTO expect VALUES (1, pg_temp.fair(16));
SELECT is(pg_temp.claim(16), (SELECT ids FROM expect WHERE k = 1),
          'a claim of 16 among 300 workspaces takes the fair order: the oldest head of each idle workspace');
SELECT is((SELECT count(DISTINCT workspace_id)::int FROM agent.runs WHERE status = 'running'), 16,
          'sixteen workspaces, one run each');
SELECT ok(NOT EXISTS (SELECT 1 FROM agent.runs WHERE workspace_id = 'fm-gone' AND status <> 'queued'),
          'the deleted agent''s run at the head of the queue is not claimed');

-- 2. the next claims: the workspaces with a run in flight wait for those
--    with none (their turn is later), across several claims
INSERT INTO expect VALUES (2, pg_temp.fair(16));
SELECT is(pg_temp.claim(16), (SELECT ids FROM expect WHERE k = 2), 'the next claim: the next idle workspaces');
INSERT INTO expect VALUES (3, pg_temp.fair(5));
SELECT is(pg_temp.claim(5), (SELECT ids FROM expect WHERE k = 3), 'a claim of 5: the next 5 idle workspaces');

-- 3. interactive runs first, whatever their workspace's runs in flight,
--    queued last
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'fm-' || i, 390000 + i, 'manual', 'chat', 'queued', 10 FROM unnest(ARRAY[290, 3, 150]) i;
INSERT INTO expect VALUES (4, pg_temp.fair(16));
SELECT is(pg_temp.claim(16), (SELECT ids FROM expect WHERE k = 4), 'interactive runs first, then the idle workspaces');
SELECT is((SELECT string_agg(priority::text, ',' ORDER BY ord) FROM agent.runs r
             JOIN unnest(string_to_array((SELECT ids FROM expect WHERE k = 4), ' ')::bigint[]) WITH ORDINALITY c(id, ord) ON c.id = r.id
            WHERE ord <= 3), '10,10,10', 'the three interactive runs are the first three');

-- 4. a backlog of one workspace ahead of every other head (its 1,500 runs
--    queued first, 16 running): the walk meets only it and falls back;
--    the order is the same
UPDATE agent.runs SET status = 'cancelled', finished_at = now(), lease_until = NULL
 WHERE status IN ('queued', 'running');
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority, attempts, started_at, lease_until)
SELECT 'fm-1', 390001, 'autonomous', 'api', 'running', 0, 1, now(), now() + interval '5 minutes' FROM generate_series(1, 16);
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'fm-1', 390001, 'autonomous', 'api', 'queued', 0 FROM generate_series(1, 1500);
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'fm-' || i, 390000 + i, 'autonomous', 'api', 'queued', 0 FROM generate_series(300, 2, -1) i;
INSERT INTO expect VALUES (5, pg_temp.fair(16));
SELECT is(pg_temp.claim(16), (SELECT ids FROM expect WHERE k = 5),
          'a backlog ahead of every other workspace''s head: the fair order still');
SELECT is((SELECT count(*)::int FROM agent.runs WHERE workspace_id = 'fm-1' AND status = 'running'), 16,
          'none of the backlog''s runs is claimed while idle workspaces wait');

-- 5. the cap: workspaces at it are skipped, the others in the fair order
--    (the backlog gone: the walk meets the heads of the others)
UPDATE agent.runs SET status = 'cancelled', finished_at = now() WHERE workspace_id = 'fm-1' AND status = 'queued';
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'fm-' || i, 390000 + i, 'manual', 'chat', 'queued', 10 FROM unnest(ARRAY[1, 40, 41]) i;
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority, attempts, started_at, lease_until)
SELECT 'fm-' || i, 390000 + i, 'autonomous', 'api', 'running', 0, 1, now(), now() + interval '5 minutes'
  FROM unnest(ARRAY[40, 40, 41, 41, 42]) i;
SET LOCAL pg_agents.max_runs_per_workspace = 2;
INSERT INTO expect VALUES (6, pg_temp.fair(40, 2));
SELECT is(pg_temp.claim(40), (SELECT ids FROM expect WHERE k = 6),
          'with a cap of 2: the workspaces at it (fm-1, fm-40, fm-41, each with an interactive run queued) skipped, the others in the fair order');
SELECT is((SELECT count(*)::int FROM agent.runs WHERE workspace_id IN ('fm-1', 'fm-40', 'fm-41') AND status = 'running'
             AND id = ANY (string_to_array((SELECT ids FROM expect WHERE k = 6), ' ')::bigint[])), 0,
          'none of theirs');
SET LOCAL pg_agents.max_runs_per_workspace = 0;

-- 6. each run claimed once
SELECT is((SELECT count(*)::int FROM agent.runs WHERE workspace_id LIKE 'fm-%' AND attempts > 1), 0, 'no run was claimed twice');

-- 7. who may claim, and the tenant boundary
CREATE ROLE fm_nobody NOLOGIN;
CREATE ROLE fm_exec NOLOGIN IN ROLE agents_executor;
SET LOCAL ROLE fm_nobody;
SET LOCAL pg_agents.workspace = 'fm-7';
SELECT throws_ok('SELECT agent.claim_runs(16)', '42501', NULL, 'a role with no grants may not claim runs');
RESET ROLE;
SET LOCAL ROLE fm_exec;
SET LOCAL pg_agents.workspace = 'fm-7';
SELECT is((SELECT string_agg(DISTINCT c.workspace_id, ',') FROM agent.claim_runs(16) c), 'fm-7',
          'an executor bound to a workspace claims its runs only, however many workspaces are queued');
SET LOCAL pg_agents.workspace = '';
SELECT throws_ok('SELECT agent.claim_runs(16)', '42501', 'pg_agents.workspace is not set',
                 'an executor session bound to no workspace claims nothing');
RESET ROLE;
SET LOCAL pg_agents.workspace = '';
SELECT is((SELECT count(*)::int FROM agent.runs WHERE workspace_id = 'fm-8' AND status = 'queued'), 1,
          'the other tenants'' runs stay queued');

SELECT * FROM finish();
ROLLBACK;
