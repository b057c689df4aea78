-- events, issue 14: the application role attacks the dispatcher.
--
--   attack 1: a trigger filter's view, written by the application role and
--             calling its own function, ran as the extension's owner (the
--             bootstrap superuser): ALTER ROLE <self> SUPERUSER succeeded; a
--             view that raises made every write to a watched table fail; a
--             slow one slowed every write.  Now the view is read with the
--             rights of the role that saved the trigger, in a subtransaction,
--             within pg_agents.filter_view_timeout: the trigger does not
--             match, its last_error says why, the write goes on.
--   attack 8: SET LOCAL pg_agents_cap.a<id> = '-1000000' lifted an agent's
--             hourly cap (the memo was a setting).  Now it is backend memory.
--
-- Written as the attacks, with the API an application has (agents_app), so
-- that it fails on the 0.2.0 code.  Two workspaces, a role with no grants,
-- the application role.
BEGIN;
SELECT plan(25);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.run_id = '';
SET LOCAL pg_agents.dedup_window = 600;
SET LOCAL client_min_messages = error;  -- the WARNINGs of failing views are expected
-- pg_agents.filter_view_timeout is left at its default (100 ms)

CREATE ROLE ev_atk_app NOLOGIN IN ROLE agents_app;   -- the application: only what agents_app has
CREATE ROLE ev_atk_nobody NOLOGIN;                   -- no grants at all
CREATE SCHEMA ev_atk AUTHORIZATION ev_atk_app;       -- where the application keeps its views
-- create_from_draft is the application's API (docs/activity.md); granted here
-- when the build's privilege statement does not grant it yet
DO $$
BEGIN
  IF NOT has_function_privilege('agents_app', 'agent.create_from_draft(jsonb, text)', 'EXECUTE') THEN
    GRANT EXECUTE ON FUNCTION agent.create_from_draft(jsonb, text) TO agents_app;
  END IF;
END $$;

INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (4700, 'w-atk-a', 'ua', 'A watcher', NULL),
  (4701, 'w-atk-b', 'ub', 'B watcher', NULL),
  (4702, 'w-atk-a', 'ua', 'A capped', 2),
  (4703, 'w-atk-a', 'ua', 'A plain', NULL);
-- B's trigger and A's plain one, saved by the DBA
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, prompt) VALUES
  (4701, 'w-atk-b', 4701, 'event', 'collection.row_added', 'collection', 'B: any row added'),
  (4703, 'w-atk-a', 4703, 'event', 'collection.row_added', 'collection', 'A: any row added'),
  (4711, 'w-atk-b', 4701, 'event', 'atk.ev', 'thing', 'B: atk.ev');

CREATE TABLE public.ev_atk_items (id int PRIMARY KEY, title text);
SELECT agent.watch_table('public.ev_atk_items', 'collection');
GRANT SELECT, INSERT ON public.ev_atk_items TO ev_atk_app;

-- ---------------------------------------------------------------- the attacker's objects
SET LOCAL ROLE ev_atk_app;
SET LOCAL pg_agents.workspace = 'w-atk-a';
CREATE FUNCTION ev_atk.pwn() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'ALTER ROLE ev_atk_app SUPERUSER';
  RETURN true;
END $$;
CREATE FUNCTION ev_atk.boom() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ev_atk boom';
END $$;
CREATE FUNCTION ev_atk.slow() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_sleep(3);
  RETURN true;
END $$;
CREATE VIEW ev_atk.v_pwn AS SELECT g::text AS id FROM generate_series(1, 10) g WHERE ev_atk.pwn();
CREATE VIEW ev_atk.v_boom AS SELECT g::text AS id FROM generate_series(1, 10) g WHERE ev_atk.boom();
CREATE VIEW ev_atk.v_slow AS SELECT g::text AS id FROM generate_series(1, 10) g WHERE ev_atk.slow();
CREATE VIEW ev_atk.v_ok AS SELECT g::text AS id FROM generate_series(1, 10) g;
-- the triggers are saved the way the application does (docs/events.md)
SELECT lives_ok($$
  INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, filter, prompt) VALUES
    (4720, 'w-atk-a', 4700, 'event', 'atk.pwn', 'thing', '{"view": "ev_atk.v_pwn"}', 'pwn'),
    (4721, 'w-atk-a', 4700, 'event', 'atk.ev', 'thing', '{"view": "ev_atk.v_boom"}', 'boom'),
    (4722, 'w-atk-a', 4700, 'event', 'atk.ev', 'thing', '{"view": "ev_atk.v_slow"}', 'slow'),
    (4723, 'w-atk-a', 4700, 'event', 'atk.ev', 'thing', '{"view": "ev_atk.v_ok"}', 'ok'),
    (4724, 'w-atk-a', 4700, 'event', 'collection.row_added', 'collection', '{"view": "ev_atk.v_boom"}', 'boom on rows') $$,
  'the application role saves event triggers whose filters name its own views');

-- ---------------------------------------------------------------- attack 1 through fire_event
SELECT lives_ok($$ SELECT agent.fire_event('atk.pwn', 'thing', 't-1', '{"row_id": "3"}', 'user:ua', 'atk-0') $$,
                'fire_event with the hijacking filter');
RESET ROLE;
SELECT is((SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = 'ev_atk_app'), false,
          'the view''s ALTER ROLE ... SUPERUSER did not run with the extension''s rights');
SET LOCAL ROLE ev_atk_app;
SELECT lives_ok($$ SELECT agent.fire_event('atk.ev', 'thing', 't-1', '{"row_id": "3"}', 'user:ua', 'atk-1') $$,
                'fire_event with the raising, slow and healthy filters does not fail');
RESET ROLE;
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4723), 1::bigint,
          'a healthy view filter of the same event still matches');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id IN (4720, 4721, 4722)), 0::bigint,
          'the failing, refused and slow views match nothing');
SELECT matches((SELECT last_error FROM agent.triggers WHERE id = 4720), 'must be superuser|permission denied',
               'the hijacking view''s trigger says why (last_error)');
SELECT matches((SELECT last_error FROM agent.triggers WHERE id = 4721), 'ev_atk boom',
               'the raising view''s trigger says why (last_error)');
SELECT matches((SELECT last_error FROM agent.triggers WHERE id = 4722), 'filter_view_timeout',
               'the slow view''s trigger says it took too long (last_error)');
SELECT is((SELECT last_status FROM agent.triggers WHERE id = 4721), 'error', 'and its last_status is error');

-- ---------------------------------------------------------------- attack 1 through a watched table
SET LOCAL ROLE ev_atk_app;
SELECT lives_ok($$ INSERT INTO public.ev_atk_items VALUES (1, 'written in A') $$,
                'a write of A to the watched table succeeds although a filter view of A raises');
RESET ROLE;
SELECT is((SELECT count(*) FROM public.ev_atk_items WHERE id = 1), 1::bigint, 'the row is there');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4703), 1::bigint,
          'A''s other trigger on the same event matched');
SELECT matches((SELECT last_error FROM agent.triggers WHERE id = 4724), 'ev_atk boom',
               'the raising trigger of the watched table records its error');
SET LOCAL pg_agents.workspace = 'w-atk-b';
SELECT lives_ok($$ INSERT INTO public.ev_atk_items VALUES (2, 'written in B') $$,
                'another workspace''s write to the same table succeeds');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4701), 1::bigint,
          'and another workspace''s trigger matched it');
SELECT lives_ok($$ SELECT agent.fire_event('atk.ev', 'thing', 't-1', '{"row_id": "3"}', 'user:ub', 'atk-b-1') $$,
                'B fires the attacked event name in its own workspace');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4711), 1::bigint,
          'B''s trigger on that event matched');
SET LOCAL pg_agents.workspace = 'w-atk-a';

-- ---------------------------------------------------------------- attack 1 through create_from_draft
-- a view the application may not read (the DBA's) is refused when saved
CREATE VIEW public.ev_atk_dba_view AS SELECT '1'::text AS id;
REVOKE ALL ON public.ev_atk_dba_view FROM PUBLIC;
SET LOCAL ROLE ev_atk_app;
SELECT throws_ok($$ SELECT agent.create_from_draft(
                      '{"name": "drafted", "workspace_id": "w-atk-a",
                        "triggers": [{"kind": "event", "event_name": "atk.draft", "resource_type": "thing",
                                      "filter": {"view": "public.ev_atk_dba_view"}}]}', 'ua') $$,
                 NULL, NULL,
                 'create_from_draft refuses a filter view the application role may not read');
-- its own hijacking view is accepted (the trigger is created disabled) ...
SELECT agent.create_from_draft(
         '{"name": "drafted", "workspace_id": "w-atk-a",
           "triggers": [{"kind": "event", "event_name": "atk.draft", "resource_type": "thing",
                         "filter": {"view": "ev_atk.v_pwn"}}]}', 'ua') AS draft_agent \gset
RESET ROLE;
-- ... and once enabled, reading it runs with the application's rights, not the extension's
UPDATE agent.triggers SET enabled = true WHERE agent_id = :draft_agent;
SELECT lives_ok($$ SELECT agent.fire_event('atk.draft', 'thing', 't-1', '{"row_id": "3"}', 'user:ua', 'atk-d-1') $$,
                'the drafted trigger''s event fires without failing');
SELECT is((SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = 'ev_atk_app'), false,
          'the drafted view did not make the application superuser either');

-- ---------------------------------------------------------------- attack 8: the cap memo is not a setting
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type) VALUES
  (4730, 'w-atk-a', 4702, 'event', 'atk.cap', 'thing');
SET LOCAL ROLE ev_atk_app;
SET LOCAL pg_agents_cap.a4702 = '-1000000';
SELECT count(*) FROM generate_series(1, 5) i,
       LATERAL agent.fire_event('atk.cap', 'thing', 't-' || i, '{}', 'user:ua', 'cap-' || i);
RESET ROLE;
SELECT results_eq($$ SELECT status, count(*) FROM agent.runs WHERE agent_id = 4702 GROUP BY status ORDER BY status $$,
                  $$ VALUES ('budget_exceeded', 3::bigint), ('queued', 2::bigint) $$,
                  'a setting in the pg_agents_cap namespace does not lift the hourly cap of 2');

-- ---------------------------------------------------------------- a temporary view of another role
-- pg_temp names the writing session's schema: B saved a filter on its own
-- temporary view, A puts a view of the same name in its session and makes B
-- read it (its function would run with B's rights and leak what B reads)
CREATE ROLE ev_atk_b NOLOGIN IN ROLE agents_app;
CREATE TABLE public.ev_atk_b_secret (s text);
INSERT INTO public.ev_atk_b_secret VALUES ('B-SECRET-42');
GRANT SELECT ON public.ev_atk_b_secret TO ev_atk_b;
SET LOCAL ROLE ev_atk_b;
SET LOCAL pg_agents.workspace = 'w-atk-b';
CREATE TEMP VIEW ev_atk_tv AS SELECT '1'::text AS id;
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, filter)
VALUES (4740, 'w-atk-b', 4701, 'event', 'atk.tmp', 'thing', '{"view": "pg_temp.ev_atk_tv"}');
DROP VIEW pg_temp.ev_atk_tv;
RESET ROLE;
SET LOCAL ROLE ev_atk_app;
CREATE FUNCTION ev_atk.leak() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'leaked: %', (SELECT string_agg(s, ',') FROM public.ev_atk_b_secret);
END $$;
CREATE TEMP VIEW ev_atk_tv AS SELECT g::text AS id FROM generate_series(1, 10) g WHERE ev_atk.leak();
GRANT SELECT ON pg_temp.ev_atk_tv TO PUBLIC;
SET LOCAL pg_agents.workspace = 'w-atk-b';
SELECT count(*) FROM agent.fire_event('atk.tmp', 'thing', 't-1', '{"row_id": "1"}', 'user:ua', 'atk-tmp-1');
RESET ROLE;
SET LOCAL pg_agents.workspace = 'w-atk-a';
SELECT doesnt_match((SELECT coalesce(last_error, '') FROM agent.triggers WHERE id = 4740), 'B-SECRET',
                    'another role''s temporary view is not read with the saving role''s rights (nothing leaks)');
SELECT matches((SELECT last_error FROM agent.triggers WHERE id = 4740), 'temporary view',
               'the trigger says why it did not match');

-- the role with no grants fires nothing
SET LOCAL ROLE ev_atk_nobody;
SELECT throws_ok($$ SELECT agent.fire_event('atk.cap', 'thing', 't-9', '{}', 'user:ua', 'cap-nobody') $$,
                 '42501', NULL, 'a role with no grants cannot fire events');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
