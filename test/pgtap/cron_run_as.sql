-- run_as of recurring jobs (issue 31): a `creator` job's run acts for its
-- creator (requested_by), and only while the creator may edit the agent (the
-- owner, an edit or full share, directly or through a group); a job whose
-- creator lost that level makes no run and says why; a `shared` job acts
-- for the workspace (requested_by NULL), whoever created it, and outlives
-- its creator's share.  Two workspaces: the same user's share in the other
-- one counts for nothing here.
BEGIN;
SELECT plan(16);

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (988001, 'ws-runas-a', 'ra-owner', 'run_as a'),
  (988002, 'ws-runas-b', 'rb-owner', 'run_as b');
SELECT agent.share(988001, 'user:ra-editor', 'edit', 'ra-owner');
SELECT agent.share(988001, 'user:ra-viewer', 'interact', 'ra-owner');
SELECT agent.share(988001, 'group:ra-team', 'edit', 'ra-owner');
INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws-runas-a', 'ra-team', 'ra-member');
-- ra-viewer holds edit on the other workspace's agent: no help here
SELECT agent.share(988002, 'user:ra-viewer', 'edit', 'rb-owner');

-- only our schedules are due
CREATE TEMP TABLE parked AS
  SELECT id FROM agent.triggers WHERE kind = 'schedule' AND enabled;
UPDATE agent.triggers SET next_run_at = 'infinity' WHERE id IN (SELECT id FROM parked);

INSERT INTO agent.triggers (id, agent_id, kind, schedule, prompt, run_as, created_by) VALUES
  (988001, 988001, 'schedule', '0 9 * * *', 'owner job', 'creator', 'ra-owner'),
  (988002, 988001, 'schedule', '0 9 * * *', 'editor job', 'creator', 'ra-editor'),
  (988003, 988001, 'schedule', '0 9 * * *', 'shared job', 'shared', 'ra-editor'),
  (988004, 988001, 'schedule', '0 9 * * *', 'viewer job', 'creator', 'ra-viewer'),
  (988005, 988001, 'schedule', '0 9 * * *', 'member job', 'creator', 'ra-member'),
  (988006, 988001, 'schedule', '0 9 * * *', 'application job', 'creator', NULL),
  (988007, 988002, 'schedule', '0 9 * * *', 'other workspace', 'creator', 'rb-owner');
UPDATE agent.triggers SET next_run_at = '2031-01-01 09:00Z' WHERE id BETWEEN 988001 AND 988007;

SELECT is(agent.tick('2031-01-01 09:00Z'), 6, 'six of the seven jobs make a run');
SELECT results_eq(
  $$SELECT trigger_id, regime, requested_by FROM agent.runs WHERE trigger_id BETWEEN 988001 AND 988007 ORDER BY trigger_id$$,
  $$VALUES (988001::bigint, 'autonomous', 'ra-owner'), (988002, 'autonomous', 'ra-editor'),
           (988003, 'autonomous', NULL), (988005, 'autonomous', 'ra-member'),
           (988006, 'autonomous', NULL), (988007, 'autonomous', 'rb-owner')$$,
  'a creator job acts for its creator, a shared one for the workspace (no person)');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 988004), 0::bigint,
          'the job of a creator at interact makes no run (its share elsewhere counts for nothing)');
SELECT is((SELECT last_status FROM agent.triggers WHERE id = 988004), 'error', 'and the job says why');
SELECT is((SELECT last_error FROM agent.triggers WHERE id = 988004),
          'run_as creator: ra-viewer may no longer edit agent 988001, so the job makes no run (it runs again once they may, or as a shared job)',
          'in its last_error');
SELECT is((SELECT next_run_at FROM agent.triggers WHERE id = 988004), agent.cron_next('0 9 * * *', '2031-01-01 09:00Z', 'UTC'),
          'its schedule still advances');

-- the editor's share is revoked: their personal job stops, the shared one goes on
DELETE FROM agent.shares WHERE agent_id = 988001 AND user_id = 'ra-editor';
UPDATE agent.triggers SET next_run_at = '2031-01-02 09:00Z' WHERE id BETWEEN 988001 AND 988007;
SELECT is(agent.tick('2031-01-02 09:00Z'), 5, 'after the revocation five jobs make a run');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 988002), 1::bigint,
          'the revoked editor''s personal job makes no new run');
SELECT matches((SELECT last_error FROM agent.triggers WHERE id = 988002), 'run_as creator: ra-editor may no longer edit agent 988001',
            'and says why');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 988003), 2::bigint,
          'the shared job the editor created still runs');

-- the group member leaves the group: alike
DELETE FROM agent.group_members WHERE group_id = 'ra-team' AND user_id = 'ra-member';
-- the editor's share comes back: their job runs again
SELECT agent.share(988001, 'user:ra-editor', 'full', 'ra-owner');
UPDATE agent.triggers SET next_run_at = '2031-01-03 09:00Z' WHERE id BETWEEN 988001 AND 988007;
SELECT is(agent.tick('2031-01-03 09:00Z'), 5, 'five runs again');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 988005), 2::bigint,
          'a creator who left the group that gave the edit level makes no new run');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 988002), 2::bigint,
          'a creator whose level came back (full) runs again');

-- the job changes hands: made shared, it runs without its creator's level
UPDATE agent.triggers SET run_as = 'shared' WHERE id = 988004;
UPDATE agent.triggers SET next_run_at = '2031-01-04 09:00Z' WHERE id BETWEEN 988001 AND 988007;
SELECT is(agent.tick('2031-01-04 09:00Z'), 6, 'with the viewer''s job shared, six runs');
SELECT is((SELECT requested_by FROM agent.runs WHERE trigger_id = 988004), NULL,
          'the shared job acts for no person');

-- a role with no grants cannot tick
CREATE ROLE ra_nobody NOLOGIN;
SET LOCAL ROLE ra_nobody;
SELECT throws_ok('SELECT agent.tick(''2031-01-05 09:00Z'')', '42501', NULL, 'a role with no grants may not tick');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
