-- manage_jobs (agent._teams_manage_jobs): scopes, visibility, who may change
-- a shared job, validation.
BEGIN;
SELECT plan(14);

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (390100, 'ws-teams-j', 'u-own', 'scheduler');
SELECT agent.share(390100, 'user:u-int', 'interact', 'u-own');
SELECT agent.share(390100, 'user:u-full', 'full', 'u-own');
CREATE FUNCTION pg_temp.run_by(p_user text) RETURNS bigint LANGUAGE sql AS $$
  SELECT agent.start_run(390100, p_user, '{}', 'manual', 'chat')
$$;
SELECT pg_temp.run_by('u-int') AS r_int, pg_temp.run_by('u-full') AS r_full, pg_temp.run_by('u-own') AS r_own \gset

SELECT (agent._teams_manage_jobs(:r_int, 'create', '{"schedule": "0 9 * * *", "prompt": "mine"}')->>'job_id')::bigint AS j_personal \gset
SELECT (agent._teams_manage_jobs(:r_own, 'create', '{"schedule": "0 10 * * *", "prompt": "team", "scope": "shared"}')->>'job_id')::bigint AS j_shared \gset
SELECT (agent._teams_manage_jobs(:r_own, 'create', '{"schedule": "0 11 * * *", "prompt": "owner only"}')->>'job_id')::bigint AS j_own \gset

SELECT is((SELECT run_as || ' ' || created_by FROM agent.triggers WHERE id = :j_personal), 'creator u-int',
          'a personal job runs as its creator');
SELECT is((SELECT run_as || ' ' || created_by FROM agent.triggers WHERE id = :j_shared), 'shared u-own',
          'a shared job maps to run_as shared');
SELECT is((SELECT jsonb_array_length(agent._teams_manage_jobs(:r_int, 'list', '{}')->'jobs')), 2,
          'a user sees their personal jobs and the shared ones');
SELECT is((SELECT string_agg(j->>'prompt', ',' ORDER BY (j->>'job_id')::bigint)
             FROM jsonb_array_elements(agent._teams_manage_jobs(:r_full, 'list', '{}')->'jobs') j), 'team',
          'another user sees only the shared job');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'update',
                        jsonb_build_object('job_id', :j_own, 'prompt', 'x')), '42704', NULL,
                 'someone else''s personal job does not exist for you');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'update',
                        jsonb_build_object('job_id', :j_shared, 'prompt', 'x')), '42501',
                 format('user "u-int" may not change shared job %s', :j_shared),
                 'an interact user may not change a shared job of someone else');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'delete',
                        jsonb_build_object('job_id', :j_shared)), '42501', NULL,
                 'nor delete it');
SELECT is(agent._teams_manage_jobs(:r_full, 'update', jsonb_build_object('job_id', :j_shared, 'enabled', false))->>'enabled',
          'false', 'a full user may change a shared job (pause it)');
SELECT is(agent._teams_manage_jobs(:r_int, 'update', jsonb_build_object('job_id', :j_personal, 'schedule', '*/15 * * * *'))->>'schedule',
          '*/15 * * * *', 'the creator changes a personal job');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'update',
                        jsonb_build_object('job_id', :j_personal, 'schedule', '61 * * * *')), '22023',
                 'invalid schedule "61 * * * *"', 'an invalid schedule is refused on update');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'create',
                        '{"schedule": "0 9 * * *", "scope": "everyone"}'), '22023',
                 'invalid job scope "everyone"', 'an unknown scope is refused');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'purge', '{}'), '22023',
                 'unknown manage_jobs action "purge"', 'an unknown action is refused');
SELECT is(agent._teams_manage_jobs(:r_int, 'delete', jsonb_build_object('job_id', :j_personal))->>'deleted', 'true',
          'the creator deletes a personal job');
SELECT is((SELECT count(*)::int FROM agent.triggers WHERE agent_id = 390100), 2, 'two jobs remain');

SELECT * FROM finish();
ROLLBACK;
