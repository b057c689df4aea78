-- Teams: send_to_run rules, refusal on ended runs, ask_parent bookkeeping,
-- run_tree over a three-level tree, current_step/preview, expiry in tick.
BEGIN;
SELECT plan(41);

INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, default_token_budget) VALUES
  (390000, 'ws-teams', 'u-owner', 'lead', '[390001]', 100000),
  (390001, 'ws-teams', 'u-owner', 'researcher', '[390002]', 100000),
  (390002, 'ws-teams', 'u-owner', 'fact checker', '[]', 100000);
SELECT agent.share(390000, 'user:u-chat', 'interact', 'u-owner');

CREATE FUNCTION pg_temp.go(p_run bigint) RETURNS bigint LANGUAGE sql AS $$
  UPDATE agent.runs SET status = 'running' WHERE id = p_run RETURNING id
$$;

SELECT pg_temp.go(agent.start_run(390000, 'u-owner', '{"prompt": "plan"}', 'manual', 'chat')) AS root \gset
SELECT pg_temp.go(agent.delegate(:root, 390001, 'research')) AS mid \gset
SELECT pg_temp.go(agent.delegate(:mid, 390002, 'check facts')) AS leaf \gset

-- 1. send_to_run: who, to what
SELECT ok(agent.send_to_run(:root, 'also cover pricing', 'u-owner') > 0, 'the owner sends a follow-up to a running run');
SELECT ok(agent.send_to_run(:root, 'and the competitors', 'u-chat') > 0, 'a user with the interact (chat) level sends too');
SELECT throws_ok(format('SELECT agent.send_to_run(%s, %L, %L)', :root, 'hi', 'u-stranger'), '42501',
                 'user "u-stranger" may not send messages to run ' || :root,
                 'a user without chat level is refused (42501)');
SELECT throws_ok('SELECT agent.send_to_run(-5, ''hi'', ''u-owner'')', '42704', 'run -5 does not exist',
                 'an unknown run is 42704');
SELECT throws_ok(format('SELECT agent.send_to_run(%s, %L, %L)', :root, '  ', 'u-owner'), '22023',
                 'message must not be empty', 'an empty message is 22023');
SELECT throws_ok(format('SELECT agent.send_to_run(%s, %L, NULL)', :root, 'x'), '22023',
                 'by_user must not be empty', 'a missing user is 22023');
SELECT results_eq(format('SELECT seq, sender, kind, body, delivered_at IS NULL FROM agent.run_messages WHERE run_id = %s ORDER BY seq', :root),
                  $$VALUES (1, 'user:u-owner', 'followup', 'also cover pricing', true),
                           (2, 'user:u-chat', 'followup', 'and the competitors', true)$$,
                  'messages are queued in order, undelivered, as follow-ups');
SELECT is((SELECT count(*)::int FROM agent.audit_log WHERE action = 'run.message' AND target_id = :root::text), 2,
          'each message is audited');

-- a queued run takes messages too
SELECT agent.start_run(390000, 'u-owner', '{}', 'manual', 'chat') AS queued \gset
SELECT ok(agent.send_to_run(:queued, 'before you start', 'u-owner') > 0, 'a queued run takes a message');
SELECT is((SELECT status FROM agent.runs WHERE id = :queued), 'queued', 'it stays queued');

-- 2. ended runs refuse
SELECT agent.finish_run(:queued, 'succeeded', '{"text": "done"}');
SELECT throws_ok(format('SELECT agent.send_to_run(%s, %L, %L)', :queued, 'too late', 'u-owner'), '55000',
                 'run ' || :queued || ' has already ended', 'sending to a finished run is 55000');
SELECT agent.start_run(390000, 'u-owner', '{}', 'manual', 'chat') AS cancelled \gset
SELECT agent.cancel_run(:cancelled, 'u-owner');
SELECT throws_ok(format('SELECT agent.send_to_run(%s, %L, %L)', :cancelled, 'too late', 'u-owner'), '55000',
                 NULL, 'sending to a cancelled run is 55000');
SELECT is((SELECT count(*)::int FROM agent.run_messages WHERE run_id IN (:queued, :cancelled)), 1,
          'a refused message is not stored');

-- 3. the worker takes messages once, in order
SELECT results_eq(format('SELECT seq FROM agent._teams_take_messages(%s) ORDER BY seq', :root),
                  $$VALUES (1), (2)$$, 'taking returns the undelivered messages in order');
SELECT is_empty(format('SELECT * FROM agent._teams_take_messages(%s)', :root), 'taking again returns nothing');
SELECT is((SELECT count(*)::int FROM agent.run_messages WHERE run_id = :root AND delivered_at IS NOT NULL), 2,
          'both are marked delivered');

-- 4. a parent run sends to its child only
SELECT ok(agent._teams_send(:root, :mid, 'focus on Europe') > 0, 'a parent sends to its child');
SELECT is((SELECT sender || ' ' || kind FROM agent.run_messages WHERE run_id = :mid), 'run:' || :root || ' followup',
          'sender is run:<parent>');
SELECT throws_ok(format('SELECT agent._teams_send(%s, %s, %L)', :root, :leaf, 'x'), '42501', NULL,
                 'a grandparent may not send to a grandchild');
SELECT throws_ok(format('SELECT agent._teams_send(%s, %s, %L)', :leaf, :mid, 'x'), '42501', NULL,
                 'a child may not send to its parent this way');

-- 5. ask_parent: question to the parent, child waits, an answer re-queues it
SELECT ok(agent._teams_ask_parent(:leaf, 'which year?') > 0, 'the child asks its parent');
SELECT is((SELECT status FROM agent.runs WHERE id = :leaf), 'waiting_input', 'the child waits in waiting_input');
SELECT ok((SELECT input_expires_at BETWEEN now() + interval '71 hours' AND now() + interval '73 hours'
             FROM agent.runs WHERE id = :leaf), 'it expires after pg_agents.approval_ttl (72 h)');
SELECT is((SELECT sender || ' ' || kind || ' ' || body FROM agent.run_messages WHERE run_id = :mid AND kind = 'question'),
          'run:' || :leaf || ' question which year?', 'the question is a message to the parent');
SELECT throws_ok(format('SELECT agent._teams_ask_parent(%s, %L)', :root, 'x'), '22023',
                 'run ' || :root || ' has no parent run', 'a root run has no parent to ask');
SELECT throws_ok(format('SELECT agent._teams_ask_parent(%s, %L)', :leaf, 'again'), '55000', NULL,
                 'a waiting run cannot ask again');
SELECT ok(agent._teams_send(:mid, :leaf, '2024') > 0, 'the parent answers');
SELECT is((SELECT kind FROM agent.run_messages WHERE run_id = :leaf ORDER BY seq DESC LIMIT 1), 'answer',
          'a message to a waiting_input run is an answer');
SELECT is((SELECT status FROM agent.runs WHERE id = :leaf), 'queued', 'the answer re-queues the child');
SELECT is((SELECT input_expires_at FROM agent.runs WHERE id = :leaf), NULL, 'and clears its expiry');

-- 6. expiry in tick
SELECT pg_temp.go(:leaf);
SELECT agent._teams_ask_parent(:leaf, 'and the month?');
SELECT is(agent._tick_teams(now() + interval '73 hours'), 1, '_tick_teams expires an unanswered question');
SELECT is((SELECT status || ' ' || error FROM agent.runs WHERE id = :leaf),
          'expired no answer to the question asked with ask_parent within pg_agents.approval_ttl',
          'the child ended expired with a clear error');

-- 7. live progress
SELECT agent._runs_add_step(:mid, 'llm', 'gpt-x', '{}', '{"text": "Looking into European pricing now"}', 'ok', true);
SELECT is((SELECT current_step || ' | ' || preview FROM agent.runs WHERE id = :mid),
          'llm:gpt-x | Looking into European pricing now', 'an llm step sets current_step and the text as preview');
SELECT agent._runs_add_step(:mid, 'llm', 'gpt-x', '{}',
                            '{"tool_calls": [{"name": "read_resource"}, {"name": "agent_teams"}]}', 'ok', true);
SELECT is((SELECT preview FROM agent.runs WHERE id = :mid), 'calls read_resource, agent_teams',
          'a tool-calling turn previews the tools');
SELECT agent._runs_add_step(:mid, 'tool', 'read_resource', '{}', jsonb_build_object('body', repeat('x', 500)), 'ok', true);
SELECT is((SELECT current_step || ' ' || length(preview) FROM agent.runs WHERE id = :mid),
          'tool:read_resource 200', 'previews are cut at 200 characters');

-- 8. run_tree over three levels
SELECT results_eq(format('SELECT run_id, parent_run_id, depth, agent_name, status FROM agent.run_tree(%s)', :root),
                  format($$VALUES (%s::bigint, NULL::bigint, 0, 'lead'::text, 'running'::text),
                                  (%s, %s, 1, 'researcher', 'running'),
                                  (%s, %s, 2, 'fact checker', 'expired')$$, :root, :mid, :root, :leaf, :mid),
                  'run_tree lists the three levels with depth, agent and status');
SELECT is((SELECT current_step FROM agent.run_tree(:root) WHERE run_id = :mid), 'tool:read_resource',
          'run_tree shows current steps');
SELECT agent.add_usage(:leaf, 10, 5);
SELECT is((SELECT tokens_total FROM agent.run_tree(:root) WHERE run_id = :root), 15::bigint,
          'run_tree shows tokens rolled up to the root');
SELECT is((SELECT count(*)::int FROM agent.run_tree(:mid)), 2, 'run_tree of a subtree starts there');

-- 9. a parent parked in waiting_children is woken by a child's question
UPDATE agent.runs SET status = 'waiting_children' WHERE id = :root;
SELECT ok(agent._teams_ask_parent(:mid, 'which market?') > 0, 'a child asks a parked parent');
SELECT is((SELECT status FROM agent.runs WHERE id = :root), 'queued', 'the parent is re-queued to see the question');

SELECT * FROM finish();
ROLLBACK;
