-- events, issue 15: every event belongs to a workspace, and nothing the
-- agent may not read is stored for it.
--
-- Workspace A and workspace B each have an agent whose trigger says "any row
-- added to any collection".  An event of A (fire_event in A's session, a row
-- written in A's session, a row whose workspace column says A) wakes only
-- A's agents; a mention of B's agent in A's row resolves nobody; an event of
-- no workspace wakes nobody and is counted (agent.unknown_workspace_events).
-- A payload row of a registered resource the run's identity may not read is
-- stored as a reference with the reason, in runs.input and in what
-- claim_runs hands out.  Roles: superuser (no workspace), the application
-- (agents_app), a role with no grants, an agent session (agents_tool).
BEGIN;
SELECT plan(37);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.run_id = '';
SET LOCAL pg_agents.workspace = '';
SET LOCAL pg_agents.dedup_window = 600;
SET LOCAL client_min_messages = error;  -- the WARNINGs of events of no workspace are expected

CREATE ROLE ev_ten_app NOLOGIN IN ROLE agents_app;
CREATE ROLE ev_ten_nobody NOLOGIN;

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (4800, 'w-ten-a', 'ua', 'A any row'),
  (4801, 'w-ten-b', 'ub', 'B any row'),
  (4802, 'w-ten-a', 'ua', 'A mentioned'),
  (4803, 'w-ten-b', 'ub', 'B mentioned');
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, resource_id, prompt) VALUES
  (4800, 'w-ten-a', 4800, 'event', 'collection.row_added', NULL, NULL, 'A: any row added to any collection'),
  (4801, 'w-ten-b', 4801, 'event', 'collection.row_added', NULL, NULL, 'B: any row added to any collection'),
  (4802, 'w-ten-a', 4802, 'mention', NULL, NULL, NULL, 'A: answer the mention'),
  (4803, 'w-ten-b', 4803, 'mention', NULL, NULL, NULL, 'B: answer the mention'),
  (4804, 'w-ten-a', 4802, 'event', 'page.comment_added', 'page', NULL, 'A: a comment'),
  (4805, 'w-ten-b', 4803, 'event', 'page.comment_added', 'page', NULL, 'B: a comment');

CREATE FUNCTION pg_temp.runs_of(bigint) RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM agent.runs WHERE agent_id = $1 $$;
CREATE FUNCTION pg_temp.unknown() RETURNS bigint LANGUAGE sql AS
  $$ SELECT events FROM agent.unknown_workspace_events() $$;

-- ---------------------------------------------------------------- fire_event
SET LOCAL ROLE ev_ten_app;
SET LOCAL pg_agents.workspace = 'w-ten-a';
SELECT is((SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.orders',
                                                 '{"row_id": "1", "row": {"title": "A-ORDER-SECRET"}}', 'user:ua', 'f-a-1')),
          1::bigint, 'fire_event in A''s session makes one run');
RESET ROLE;
SELECT is(pg_temp.runs_of(4800), 1::bigint, '... for A''s "any row" trigger');
SELECT is(pg_temp.runs_of(4801), 0::bigint, 'B''s "any row" trigger is not woken by an event of A');
SELECT is((SELECT count(*) FROM agent.runs WHERE workspace_id = 'w-ten-b' AND input::text LIKE '%A-ORDER-SECRET%'), 0::bigint,
          'no run of B stores A''s row');
SET LOCAL ROLE ev_ten_app;
SET LOCAL pg_agents.workspace = 'w-ten-b';
SELECT is((SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.orders',
                                                 '{"row_id": "2"}', 'user:ub', 'f-b-1')),
          1::bigint, 'fire_event in B''s session makes one run');
RESET ROLE;
SELECT results_eq($$ SELECT agent_id FROM agent.runs WHERE input->>'event_id' = 'f-b-1' $$, $$ VALUES (4801::bigint) $$,
                  '... for B''s trigger only');

-- no workspace
SET LOCAL pg_agents.workspace = '';
SELECT pg_temp.unknown() AS unknown0 \gset
SELECT is((SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.orders',
                                                 '{"row_id": "3"}', 'user:dba', 'f-none-1')),
          0::bigint, 'a superuser session without a workspace fires an event that wakes nobody');
SELECT is((SELECT count(*) FROM agent.runs WHERE input->>'event_id' = 'f-none-1'), 0::bigint, 'no run at all');
SELECT is(pg_temp.unknown(), (:unknown0 + 1)::bigint, 'the event of no workspace is counted');
SAVEPOINT rolled_back;
SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.orders', '{}', 'user:dba', 'f-none-2');
ROLLBACK TO SAVEPOINT rolled_back;
SELECT is(pg_temp.unknown(), (:unknown0 + 2)::bigint, 'the count survives the rollback of the event''s transaction');
SET LOCAL ROLE ev_ten_app;
SELECT throws_ok($$ SELECT agent.fire_event('collection.row_added', 'collection', 'public.orders', '{}') $$,
                 '42501', 'pg_agents.workspace is not set',
                 'the application''s session without a workspace is refused');
RESET ROLE;
SET LOCAL ROLE ev_ten_nobody;
SET LOCAL pg_agents.workspace = 'w-ten-a';
SELECT throws_ok($$ SELECT agent.fire_event('collection.row_added', 'collection', 'public.orders', '{}') $$,
                 '42501', NULL, 'a role with no grants may not fire events');
RESET ROLE;

-- ---------------------------------------------------------------- watched table, no workspace column
CREATE TABLE public.ev_ten_plain (id int PRIMARY KEY, title text);
SELECT agent.watch_table('public.ev_ten_plain', 'collection');
GRANT INSERT ON public.ev_ten_plain TO ev_ten_app;
SET LOCAL ROLE ev_ten_app;
SET LOCAL pg_agents.workspace = 'w-ten-a';
INSERT INTO public.ev_ten_plain VALUES (1, 'PLAIN-A-SECRET');
RESET ROLE;
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 4800 AND input#>>'{payload,table}' = 'public.ev_ten_plain'), 1::bigint,
          'a row written in A''s session wakes A''s agent');
SELECT is((SELECT count(*) FROM agent.runs WHERE input::text LIKE '%PLAIN-A-SECRET%' AND workspace_id <> 'w-ten-a'), 0::bigint,
          'and no agent of another workspace');
SET LOCAL pg_agents.workspace = '';
SELECT pg_temp.unknown() AS unknown1 \gset
SELECT lives_ok($$ INSERT INTO public.ev_ten_plain VALUES (2, 'no workspace') $$,
                'a row written in a session without a workspace is written');
SELECT is((SELECT count(*) FROM agent.runs WHERE input#>>'{payload,row_id}' = '2' AND input#>>'{payload,table}' = 'public.ev_ten_plain'),
          0::bigint, 'and wakes nobody');
SELECT is(pg_temp.unknown(), (:unknown1 + 1)::bigint, 'it is counted');
SELECT is((SELECT last_event || ' ' || last_resource_id FROM agent.unknown_workspace_events()),
          'collection.row_added public.ev_ten_plain', 'the counter names the last such event');

-- an agent session writes in its run's workspace (the worker sets it)
GRANT INSERT ON public.ev_ten_plain TO agents_tool;
SET LOCAL ROLE agents_tool;
SET LOCAL pg_agents.actor = 'agent:4802';
SET LOCAL pg_agents.workspace = 'w-ten-b';
INSERT INTO public.ev_ten_plain VALUES (3, 'written by an agent in B');
RESET ROLE;
SET LOCAL pg_agents.actor = '';
SELECT results_eq($$ SELECT agent_id FROM agent.runs WHERE input#>>'{payload,row_id}' = '3' $$, $$ VALUES (4801::bigint) $$,
                  'an agent session''s write is an event of the session''s workspace');

-- ---------------------------------------------------------------- watched table with a workspace column
CREATE TABLE public.ev_ten_items (id int PRIMARY KEY, ws text, title text, body text);
SELECT agent.watch_table('public.ev_ten_items', 'collection', 'id', ARRAY['body'], 'ws');
SELECT results_eq($$ SELECT workspace_column, mention_columns FROM agent.watched_tables WHERE tbl = 'public.ev_ten_items'::regclass $$,
                  $$ VALUES ('ws', ARRAY['body']) $$, 'agent.watched_tables shows the workspace column');
SELECT throws_ok($$ SELECT agent.watch_table('public.ev_ten_items', 'collection', 'id', NULL, 'nope') $$,
                 '42703', NULL, 'an unknown workspace column is refused');
SET LOCAL pg_agents.workspace = 'w-ten-a';
INSERT INTO public.ev_ten_items VALUES (1, 'w-ten-b', 'row of B', NULL), (2, 'w-ten-a', 'row of A', NULL);
SELECT results_eq($$ SELECT input#>>'{payload,row_id}', agent_id FROM agent.runs
                      WHERE input#>>'{payload,table}' = 'public.ev_ten_items' ORDER BY 1 $$,
                  $$ VALUES ('1', 4801::bigint), ('2', 4800::bigint) $$,
                  'with a workspace column, each row wakes the agents of its own workspace (whatever the session''s)');
SELECT pg_temp.unknown() AS unknown2 \gset
SELECT lives_ok($$ INSERT INTO public.ev_ten_items VALUES (3, NULL, 'no workspace', NULL) $$,
                'a row whose workspace column is NULL is written');
SELECT is((SELECT count(*) FROM agent.runs WHERE input#>>'{payload,table}' = 'public.ev_ten_items' AND input#>>'{payload,row_id}' = '3'),
          0::bigint, 'wakes nobody (the session''s workspace does not stand in)');
SELECT is(pg_temp.unknown(), (:unknown2 + 1)::bigint, 'and is counted');

-- ---------------------------------------------------------------- mentions across workspaces
INSERT INTO public.ev_ten_items VALUES (4, 'w-ten-a', 'mentions', 'cc [[agent:4802]] and [[agent:4803]]');
SELECT is(pg_temp.runs_of(4802), 1::bigint, 'a mention of an agent of the row''s workspace wakes it');
SELECT is(pg_temp.runs_of(4803), 0::bigint, 'a mention of an agent of another workspace resolves nobody');
SELECT is((SELECT count(*) FROM agent.fire_event('agent.mentioned', 'collection', 'x', '{"agent_id": 4803}', 'user:ua', 'mn-x')),
          0::bigint, 'nor does an agent.mentioned event of A naming B''s agent');

-- ---------------------------------------------------------------- withholding
CREATE TABLE public.ev_ten_pages (id text PRIMARY KEY, ws text NOT NULL, title text NOT NULL, body text NOT NULL);
SELECT agent.register_resource_table('page', 'public.ev_ten_pages', 'id', 'title', 'body');
SELECT agent.watch_table('public.ev_ten_pages', 'page', 'id', ARRAY['body'], 'ws');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('w-ten-a', 'page', 'p-secret', 'user:ua', 'edit'), ('w-ten-a', 'page', 'p-granted', 'user:ua', 'read');
SELECT agent.grant(4802, 'page', 'p-granted', 'read', 'ua');
UPDATE agent.runs SET status = 'cancelled', finished_at = now() WHERE agent_id = 4802 AND status = 'queued';
INSERT INTO public.ev_ten_pages VALUES
  ('p-secret', 'w-ten-a', 'TEN-SECRET-TITLE', 'TEN-SECRET-BODY, ask [[agent:4802]]'),
  ('p-granted', 'w-ten-a', 'TEN-GRANTED-TITLE', 'ask [[agent:4802]]');
SELECT is((SELECT input#>'{payload,row}' FROM agent.runs WHERE agent_id = 4802 AND input#>>'{payload,row_id}' = 'p-secret'),
          '{"resource_type": "page", "resource_id": "p-secret", "withheld": "not_granted"}'::jsonb,
          'a mention in a page the agent may not read stores a reference and the reason, not the row');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 4802 AND input::text ~ 'TEN-SECRET'), 0::bigint,
          'no stored run carries the page''s title or body');
SELECT is((SELECT input#>>'{payload,row,title}' FROM agent.runs WHERE agent_id = 4802 AND input#>>'{payload,row_id}' = 'p-granted'),
          'TEN-GRANTED-TITLE', 'a page the agent may read is stored as is (the test can fail)');
UPDATE public.ev_ten_pages SET title = 'TEN-SECRET-NEW', body = body || ' [[agent:4802]]' WHERE id = 'p-secret';
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 4802 AND input::text ~ 'TEN-SECRET'), 0::bigint,
          'an update (row and old) is withheld too');
SELECT is((SELECT count(*) FROM agent.claim_runs(100) c WHERE c.agent_id = 4802 AND c.input::text ~ 'TEN-SECRET'), 0::bigint,
          'claim_runs hands an external executor no unreadable row');
SELECT is((SELECT count(*) FROM agent.activity(4802, 'ua') a WHERE a::text ~ 'TEN-SECRET'), 0::bigint,
          'nor does the activity');
-- the event's own resource, when it is of a registered type
SELECT count(*) FROM agent.fire_event('page.comment_added', 'page', 'p-secret',
                                      '{"row": {"body": "TEN-SECRET-COMMENT"}}', 'user:ua', 'c-1');
SELECT is((SELECT input->'payload' FROM agent.runs WHERE input->>'event_id' = 'c-1'),
          '{"resource_type": "page", "resource_id": "p-secret", "withheld": "not_granted"}'::jsonb,
          'an event about a page the agent may not read stores a reference instead of the payload');
SELECT count(*) FROM agent.fire_event('page.comment_added', 'page', 'p-granted',
                                      '{"row": {"body": "a readable comment"}}', 'user:ua', 'c-2');
SELECT is((SELECT input#>>'{payload,row,body}' FROM agent.runs WHERE input->>'event_id' = 'c-2'),
          'a readable comment', 'an event about a readable page keeps its payload');
SELECT is((SELECT agent._withhold_payload(4802, '{"table": "public.ev_ten_pages", "row_id": "p-secret", "row": {"title": "x"}}')),
          '{"table": "public.ev_ten_pages", "row_id": "p-secret", "row": {"resource_type": "page", "resource_id": "p-secret", "withheld": "not_granted"}}'::jsonb,
          'agent._withhold_payload is the reusable entry point');
SELECT * FROM finish();
ROLLBACK;
