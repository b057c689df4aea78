-- manage_jobs (agent._teams_manage_jobs): scopes, visibility, who may change
-- a shared job, validation; changing jobs needs set_trigger's edit level and
-- a job made or changed in a chat stays disabled (issue 36).
BEGIN;
SELECT plan(22);

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (390100, 'ws-teams-j', 'u-own', 'scheduler');
SELECT agent.share(390100, 'user:u-int', 'interact', 'u-own');
SELECT agent.share(390100, 'user:u-edit', 'edit', 'u-own');
SELECT agent.share(390100, 'user:u-full', 'full', 'u-own');
CREATE FUNCTION pg_temp.run_by(p_user text) RETURNS bigint LANGUAGE sql AS $$
  SELECT agent.start_run(390100, p_user, '{}', 'manual', 'chat')
$$;
SELECT pg_temp.run_by('u-int') AS r_int, pg_temp.run_by('u-full') AS r_full, pg_temp.run_by('u-own') AS r_own,
       pg_temp.run_by('u-edit') AS r_edit, agent._enqueue_run(390100, 'autonomous', 'api', '{}'::jsonb, NULL, NULL) AS r_auto \gset

SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'create',
                        '{"schedule": "* * * * *", "prompt": "plant", "scope": "shared"}'), '42501',
                 'user "u-int" may not change the jobs of agent 390100',
                 'an interact user may not create a job (set_trigger''s edit level)');
SELECT (agent._teams_manage_jobs(:r_edit, 'create', '{"schedule": "0 9 * * *", "prompt": "mine"}')->>'job_id')::bigint AS j_personal \gset
SELECT (agent._teams_manage_jobs(:r_own, 'create', '{"schedule": "0 10 * * *", "prompt": "team", "scope": "shared"}')->>'job_id')::bigint AS j_shared \gset
SELECT (agent._teams_manage_jobs(:r_own, 'create', '{"schedule": "0 11 * * *", "prompt": "owner only"}')->>'job_id')::bigint AS j_own \gset

SELECT is((SELECT run_as || ' ' || created_by || ' ' || enabled FROM agent.triggers WHERE id = :j_personal), 'creator u-edit false',
          'a personal job runs as its creator; made in a chat it is disabled');
SELECT is((SELECT enabled FROM agent.triggers WHERE id = :j_shared), false, 'even the owner''s job made in a chat is disabled');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_own, 'update',
                        jsonb_build_object('job_id', :j_shared, 'enabled', true)), '42501',
                 'a job cannot be enabled from a chat', 'a chat cannot enable a job, the owner''s neither');
SELECT lives_ok(format('SELECT agent.set_trigger(390100, %L, %L)', jsonb_build_object('id', :j_shared, 'enabled', true), 'u-edit'),
                'an edit user enables it through agent.set_trigger');
SELECT is(agent._teams_manage_jobs(:r_auto, 'create', '{"schedule": "0 12 * * *", "prompt": "auto"}')->>'enabled', 'true',
          'an autonomous run (the owner''s rights) creates an enabled job');
SELECT is(agent._teams_manage_jobs(:r_full, 'update', jsonb_build_object('job_id', :j_shared, 'prompt', 'changed'))->>'enabled', 'false',
          'a job changed in a chat is disabled again');
SELECT is((SELECT run_as || ' ' || created_by FROM agent.triggers WHERE id = :j_shared), 'shared u-own',
          'a shared job maps to run_as shared');
SELECT is((SELECT jsonb_array_length(agent._teams_manage_jobs(:r_edit, 'list', '{}')->'jobs')), 2,
          'a user sees their personal jobs and the shared ones');
SELECT is((SELECT string_agg(j->>'prompt', ',' ORDER BY (j->>'job_id')::bigint)
             FROM jsonb_array_elements(agent._teams_manage_jobs(:r_full, 'list', '{}')->'jobs') j), 'changed',
          'another user sees only the shared job');
SELECT is((SELECT jsonb_array_length(agent._teams_manage_jobs(:r_int, 'list', '{}')->'jobs')), 1,
          'an interact user may still list the shared jobs');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_edit, 'update',
                        jsonb_build_object('job_id', :j_own, 'prompt', 'x')), '42704', NULL,
                 'someone else''s personal job does not exist for you');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'update',
                        jsonb_build_object('job_id', :j_shared, 'prompt', 'x')), '42501',
                 'user "u-int" may not change the jobs of agent 390100',
                 'an interact user may not change a job');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'delete',
                        jsonb_build_object('job_id', :j_shared)), '42501', NULL,
                 'nor delete it');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_edit, 'delete',
                        jsonb_build_object('job_id', :j_own)), '42704', NULL,
                 'an edit user may not delete the owner''s personal job (it does not exist for them)');
SELECT is(agent._teams_manage_jobs(:r_full, 'update', jsonb_build_object('job_id', :j_shared, 'enabled', false))->>'enabled',
          'false', 'a full user may change a shared job (pause it)');
SELECT is(agent._teams_manage_jobs(:r_edit, 'update', jsonb_build_object('job_id', :j_personal, 'schedule', '*/15 * * * *'))->>'schedule',
          '*/15 * * * *', 'the creator changes a personal job');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_edit, 'update',
                        jsonb_build_object('job_id', :j_personal, 'schedule', '61 * * * *')), '22023',
                 'invalid schedule "61 * * * *"', 'an invalid schedule is refused on update');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_edit, 'create',
                        '{"schedule": "0 9 * * *", "scope": "everyone"}'), '22023',
                 'invalid job scope "everyone"', 'an unknown scope is refused');
SELECT throws_ok(format('SELECT agent._teams_manage_jobs(%s, %L, %L)', :r_int, 'purge', '{}'), '22023',
                 'unknown manage_jobs action "purge"', 'an unknown action is refused');
SELECT is(agent._teams_manage_jobs(:r_edit, 'delete', jsonb_build_object('job_id', :j_personal))->>'deleted', 'true',
          'the creator deletes a personal job');
SELECT is((SELECT count(*)::int FROM agent.triggers WHERE agent_id = 390100), 3, 'three jobs remain');

SELECT * FROM finish();
ROLLBACK;
