-- Conversations (sql/src/810_conversations.sql, docs/activity.md): the
-- visibility matrix of agent.conversation_messages and agent.conversations_of,
-- agent.send_message's checks, the answer appended in the transaction that
-- ends the run, the autonomous conversation (per agent, per trigger), the
-- history window, two workspaces, the application role with its grants, a
-- role with none, PUBLIC, and an agent session.
BEGIN;
SELECT plan(46);

CREATE ROLE cv_app NOLOGIN IN ROLE agents_app;     -- the application
CREATE ROLE cv_nobody NOLOGIN;                     -- no grants at all
CREATE ROLE cv_reader NOLOGIN IN ROLE agents_reader;

SELECT agent.create_agent('cv-a', 'own', 'Chat agent') AS aid \gset
SELECT agent.create_agent('cv-b', 'own-b', 'Other tenant agent') AS bid \gset
SELECT agent.share(:aid, 'user:full1', 'full', 'own');
SELECT agent.share(:aid, 'user:edit1', 'edit', 'own');
SELECT agent.share(:aid, 'user:int1', 'interact', 'own');
SELECT agent.share(:aid, 'user:int2', 'interact', 'own');
INSERT INTO agent.group_members (group_id, user_id) VALUES ('cv-g-edit', 'gedit');
SELECT agent.share(:aid, 'group:cv-g-edit', 'edit', 'own');

-- the application, in workspace cv-a
SET LOCAL ROLE cv_app;
SET LOCAL pg_agents.workspace = 'cv-a';
SELECT conversation_id AS c1, run_id AS r1 FROM agent.send_message(:aid, 'int1', 'first question') \gset
SELECT ok(:c1 IS NOT NULL AND :r1 IS NOT NULL, 'send_message returns the new conversation and the run');
SELECT is((SELECT regime || '/' || origin || '/' || requested_by || '/' || status FROM agent.runs WHERE id = :r1),
          'manual/chat/int1/queued', 'the message queued a manual chat run of its user');
SELECT is((SELECT input ->> 'conversation_id' FROM agent.runs WHERE id = :r1), :c1::text,
          'the run input names the conversation');
SELECT results_eq(format('SELECT role, content, run_id, tokens FROM agent.conversation_messages(%s, %L)', :c1, 'int1'),
                  format($$VALUES ('user'::text, 'first question'::text, %s::bigint, 4)$$, :r1),
                  'the user sees their message (tokens: characters / 4, rounded up)');
SELECT throws_ok(format('SELECT * FROM agent.send_message(%s, %L, %L, %s)', :aid, 'int2', 'hijack', :c1), '42704',
                 format('conversation %s does not exist', :c1), 'another user cannot continue the chat');
SELECT throws_ok(format('SELECT * FROM agent.send_message(%s, %L, %L)', :aid, 'nobody', 'hi'), '42501',
                 NULL, 'a user without access cannot chat');
SELECT throws_ok(format('SELECT * FROM agent.send_message(%s, %L, %L)', :aid, 'int1', '  '), '22023',
                 'message text must not be empty', 'an empty message is refused');
SELECT throws_ok(format('SELECT * FROM agent.send_message(%s, %L, %L)', :aid, '', 'x'), '22023',
                 'user_id must not be empty', 'an empty user id is refused');
SELECT throws_ok(format('SELECT * FROM agent.send_message(%s, %L, %L)', :bid, 'own-b', 'x'), '42704',
                 format('agent %s does not exist', :bid), 'an agent of another workspace does not exist');
RESET ROLE;

-- the run ends: the answer is appended in the same transaction
-- (no worker claims runs in this database: the test ends them itself)
SELECT agent.finish_run(:r1, 'succeeded', '{"text": "first answer"}');
SELECT results_eq(format('SELECT role, content FROM agent.conversation_messages(%s, %L)', :c1, 'int1'),
                  $$VALUES ('user'::text, 'first question'::text), ('assistant', 'first answer')$$,
                  'finish_run appends the final answer');
SELECT is((SELECT run_id FROM agent.messages WHERE conversation_id = :c1 AND role = 'assistant'), :r1::bigint,
          'the answer names its run');

-- the second turn: its history is the first turn
SET LOCAL ROLE cv_app;
SET LOCAL pg_agents.workspace = 'cv-a';
SELECT run_id AS r2 FROM agent.send_message(:aid, 'int1', 'second question', :c1) \gset
RESET ROLE;
SELECT results_eq(format('SELECT role, content FROM agent._conversation_history(%s, 8000)', :r2),
                  $$VALUES ('user'::text, 'first question'::text), ('assistant', 'first answer')$$,
                  'the second run''s history is the first turn');
SELECT is_empty(format('SELECT * FROM agent._conversation_history(%s, 8000)', :r1), 'the first run has no history');
SELECT is_empty(format('SELECT * FROM agent._conversation_history(%s, 3)', :r2),
                'a window smaller than the last turn drops it (no assistant message without its question)');
SELECT is_empty(format('SELECT * FROM agent._conversation_history(%s, 0)', :r2), 'a window of 0 sends no history');
-- a run that names a conversation in its input without send_message gets nothing
SELECT agent.start_run(:aid, 'int2', format('{"message": "x", "conversation_id": %s}', :c1)::jsonb) AS r_forged \gset
SELECT is_empty(format('SELECT * FROM agent._conversation_history(%s, 8000)', :r_forged),
                'a run naming another user''s conversation in its input gets no history');
SELECT agent.finish_run(:r_forged, 'cancelled', NULL, 'test');
SELECT is((SELECT count(*) FROM agent.messages WHERE conversation_id = :c1), 3::bigint,
          'and its end is not appended to that conversation');
-- a failed turn: a notice, kept out of the history
SELECT agent.finish_run(:r2, 'failed', NULL, 'model unreachable');
SELECT is((SELECT content FROM agent.messages WHERE run_id = :r2 AND role = 'notice'),
          format('run %s ended failed: model unreachable', :r2), 'a run that ends without an answer appends a notice');

-- visibility of a chat
SET LOCAL ROLE cv_app;
SET LOCAL pg_agents.workspace = 'cv-a';
SELECT is((SELECT count(*) FROM agent.conversation_messages(:c1, 'int1')), 4::bigint, 'own chat: visible');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:c1, 'own')), 4::bigint, 'owner (full): visible');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:c1, 'full1')), 4::bigint, 'full: visible');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:c1, 'edit1')), 0::bigint, 'edit: another user''s chat is not');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:c1, 'int2')), 0::bigint, 'interact: another user''s chat is not');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:c1, 'nobody')), 0::bigint, 'no access: nothing');
SELECT is((SELECT count(*) FROM agent.conversation_messages(999999999, 'int1')), 0::bigint, 'unknown conversation: nothing');
RESET ROLE;

-- the autonomous conversation: one per agent, full and edit see it
SELECT agent.start_run(:aid, 'app', '{"prompt": "nightly"}', 'autonomous', 'api') AS ra1 \gset
SELECT agent.start_run(:aid, 'app', '{"prompt": "again"}', 'autonomous', 'api') AS ra2 \gset
SELECT agent.finish_run(:ra1, 'succeeded', '{"text": "all good"}');
SELECT agent.finish_run(:ra2, 'succeeded', '{"text": "still good"}');
SELECT id AS ca FROM agent.conversations WHERE agent_id = :aid AND kind = 'autonomous' \gset
SELECT is((SELECT count(*) FROM agent.conversations WHERE agent_id = :aid AND kind = 'autonomous'), 1::bigint,
          'autonomous runs share the agent''s one conversation');
SELECT results_eq(format('SELECT role, content FROM agent.messages WHERE conversation_id = %s ORDER BY id', :ca),
                  $$VALUES ('trigger'::text, E'api\nnightly'::text), ('assistant', 'all good'),
                           ('trigger', E'api\nagain'), ('assistant', 'still good')$$,
                  'each run logs what started it and its answer');
SET LOCAL ROLE cv_app;
SET LOCAL pg_agents.workspace = 'cv-a';
SELECT is((SELECT count(*) FROM agent.conversation_messages(:ca, 'full1')), 4::bigint, 'autonomous: full sees it');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:ca, 'edit1')), 4::bigint, 'autonomous: edit sees it');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:ca, 'gedit')), 4::bigint, 'autonomous: edit through a group sees it');
SELECT is((SELECT count(*) FROM agent.conversation_messages(:ca, 'int1')), 0::bigint, 'autonomous: interact does not');
SELECT results_eq(format('SELECT kind FROM agent.conversations_of(%s, %L) ORDER BY kind', :aid, 'int1'),
                  $$VALUES ('chat'::text)$$, 'interact lists only its own chat');
SELECT results_eq(format('SELECT kind FROM agent.conversations_of(%s, %L) ORDER BY kind', :aid, 'edit1'),
                  $$VALUES ('autonomous'::text)$$, 'edit lists the autonomous conversation');
SELECT results_eq(format('SELECT kind FROM agent.conversations_of(%s, %L) ORDER BY kind', :aid, 'full1'),
                  $$VALUES ('autonomous'::text), ('chat')$$, 'full lists both');
-- tenants: from workspace cv-b, nothing of cv-a exists
SET LOCAL pg_agents.workspace = 'cv-b';
SELECT is((SELECT count(*) FROM agent.conversation_messages(:c1, 'int1')), 0::bigint,
          'from another workspace the chat does not exist');
SELECT is((SELECT count(*) FROM agent.conversations_of(:aid, 'own')), 0::bigint,
          'from another workspace the agent has no conversations');
SELECT is((SELECT count(*) FROM agent.messages), 0::bigint, 'direct reads: no message of another workspace');
SET LOCAL pg_agents.workspace = 'cv-a';
SELECT is((SELECT count(*) FROM agent.messages WHERE conversation_id IN (:c1, :ca)), 8::bigint,
          'direct reads: the application reads its workspace''s messages');
RESET ROLE;

-- per-trigger conversation
INSERT INTO agent.triggers (agent_id, kind, prompt, conversation) VALUES (:aid, 'api', 'weekly', 'trigger') RETURNING id AS tid \gset
SELECT agent._enqueue_run(:aid, 'autonomous', 'api', '{}'::jsonb, :tid, 'own') AS rt \gset
SELECT agent.finish_run(:rt, 'succeeded', '{"text": "weekly done"}');
SELECT results_eq(format('SELECT m.role, m.content FROM agent.messages m JOIN agent.conversations c ON c.id = m.conversation_id WHERE c.trigger_id = %s ORDER BY m.id', :tid),
                  $$VALUES ('trigger'::text, E'api\nweekly'::text), ('assistant', 'weekly done')$$,
                  'a trigger whose conversation is trigger logs into its own conversation');
SELECT throws_ok(format($$UPDATE agent.triggers SET conversation = 'run' WHERE id = %s$$, :tid), '23514', NULL,
                 'a trigger''s conversation is agent or trigger');

-- roles without the grant, PUBLIC, an agent session
SET LOCAL ROLE cv_nobody;
SET LOCAL pg_agents.workspace = 'cv-a';
SELECT throws_ok(format('SELECT * FROM agent.send_message(%s, %L, %L)', :aid, 'int1', 'x'), '42501', NULL,
                 'a role with no grant cannot send messages');
SELECT throws_ok(format('SELECT * FROM agent.conversation_messages(%s, %L)', :c1, 'int1'), '42501', NULL,
                 'a role with no grant cannot read conversations');
SELECT throws_ok('SELECT count(*) FROM agent.messages', '42501', NULL, 'a role with no grant cannot read the table');
RESET ROLE;
SET LOCAL ROLE cv_reader;
SELECT throws_ok(format('SELECT * FROM agent.conversation_messages(%s, %L)', :c1, 'int1'), '42501', NULL,
                 'an analytics role does not vouch for users');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT agent.set_identity(format('agent:%s', :aid), 'cv-a');
SELECT throws_ok('SELECT count(*) FROM agent.conversations', '42501', NULL,
                 'an agent session (the tool role) reads no conversation');
RESET ROLE;
SELECT ok(NOT has_function_privilege('public', 'agent.send_message(bigint, text, text, bigint)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'agent.conversation_messages(bigint, text)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'agent._conversation_history(bigint, integer)', 'EXECUTE'),
          'PUBLIC may call none of them');

SELECT * FROM finish();
ROLLBACK;
