-- The worker records a batch of final answers in one transaction
-- (agent._worker_finish_replies, agent._finish_runs_effects): every run must end
-- with exactly the rows the one-reply path writes (src/runs/run_calls.c ReplyUnit:
-- lease, llm step, agent.add_usage, agent.finish_run, state forgotten).
-- Each case runs twice, once per path, on twin runs, and the two snapshots
-- are compared.
BEGIN;
SELECT plan(21);

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (660001, 'ws-wbatch', 'o-wb', 'batcher'), (660002, 'ws-wbatch', 'o-wb', 'delegator');
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, prompt) VALUES
  (660101, 'ws-wbatch', 660001, 'api', 'batched'), (660102, 'ws-wbatch', 660001, 'api', 'one by one'),
  (660103, 'ws-wbatch', 660001, 'api', 'batched'), (660104, 'ws-wbatch', 660001, 'api', 'one by one');
UPDATE agent.triggers SET last_run_at = timestamptz '2026-01-01 00:00+00' WHERE id IN (660103, 660104);

-- a running run (claimed), with its state row, as the worker holds it
CREATE FUNCTION pg_temp.running(p_trigger bigint DEFAULT NULL, p_budget bigint DEFAULT NULL,
                                p_parent bigint DEFAULT NULL) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
  v := agent._enqueue_run(660001, 'autonomous', 'api', '{"prompt": "x"}', p_trigger, NULL, p_parent, p_budget);
  UPDATE agent.runs SET status = 'running', attempts = 1, started_at = now(),
                        lease_until = now() + interval '5 minutes' WHERE id = v;
  INSERT INTO agent.run_state (run_id, workspace_id, worker_pid, state)
  VALUES (v, 'ws-wbatch', 1, '{"messages": [], "iterations": 0}');
  RETURN v;
END $$;

-- the reply of a run, as the worker sends it
CREATE FUNCTION pg_temp.reply(p_run bigint, p_text text, p_in int, p_out int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('run_id', p_run, 'model', 'm-1',
           'input', jsonb_build_object('provider', 'openai', 'model', 'm-1', 'messages', 1, 'tools', '["read_resource"]'::jsonb,
                                       'api_key', 'sk-abcdefghijklmnopqrstuvwxyz'),
           'output', jsonb_build_object('text', p_text, 'tool_calls', '[]'::jsonb, 'stop', 'stop',
                                        'usage', jsonb_build_object('in', p_in, 'out', p_out)),
           'tokens', p_in + p_out, 'tokens_in', p_in, 'tokens_out', p_out,
           'started_us', 1790000000000000, 'text', p_text)
$$;

-- the one-reply path (src/runs/run_calls.c ReplyUnit, src/tools/tools.c ToolsRecordStep)
CREATE FUNCTION pg_temp.one(p jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_run bigint := (p ->> 'run_id')::bigint;
  r agent.runs%ROWTYPE;
BEGIN
  UPDATE agent.runs SET lease_until = now() + make_interval(secs => 300) WHERE id = v_run AND status = 'running';
  IF NOT FOUND THEN RETURN 'gone'; END IF;
  INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status, tokens, started_at, finished_at)
  SELECT v_run, coalesce(max(s.seq), 0) + 1, 'llm', p ->> 'model', agent.redact(p -> 'input'), agent.redact(p -> 'output'),
         'ok', (p ->> 'tokens')::int, timestamptz 'epoch' + (p ->> 'started_us')::bigint * interval '1 microsecond',
         clock_timestamp()
    FROM agent.run_steps s WHERE s.run_id = v_run;
  PERFORM agent.add_usage(v_run, (p ->> 'tokens_in')::int, (p ->> 'tokens_out')::int, p ->> 'model');
  SELECT * INTO r FROM agent.runs WHERE id = v_run;
  IF r.token_budget IS NOT NULL AND r.tokens_total >= r.token_budget THEN
    PERFORM agent.finish_run(v_run, 'budget_exceeded', NULL,
                             format('token budget of %s exhausted (%s used)', r.token_budget, r.tokens_total));
  ELSIF EXISTS (SELECT 1 FROM agent.run_messages m WHERE m.run_id = v_run AND m.delivered_at IS NULL) THEN
    RETURN 'continue';
  ELSE
    PERFORM agent.finish_run(v_run, 'succeeded', jsonb_build_object('text', coalesce(p ->> 'text', '')), NULL);
  END IF;
  DELETE FROM agent.run_state WHERE run_id = v_run;
  RETURN 'finished';
END $$;

-- what a run looks like afterwards, run ids written as X
CREATE FUNCTION pg_temp.snap(p_run bigint) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'run', (SELECT jsonb_build_object('status', status, 'output', output, 'error', error, 'tokens_in', tokens_in,
                                      'tokens_out', tokens_out, 'tokens_total', tokens_total, 'tokens_reserved', tokens_reserved,
                                      'model', model, 'lease', lease_until IS NOT NULL,
                                      'finished_at', finished_at IS NOT DISTINCT FROM now(), 'current_step', current_step,
                                      'preview', preview)
              FROM agent.runs WHERE id = p_run),
    'steps', (SELECT jsonb_agg(jsonb_build_object('ws', workspace_id, 'seq', seq, 'kind', kind, 'name', name, 'input', input,
                                                  'output', output, 'status', status, 'tokens', tokens, 'started_at', started_at,
                                                  'finished', finished_at IS NOT NULL) ORDER BY seq)
                FROM agent.run_steps WHERE run_id = p_run),
    'audit', (SELECT jsonb_agg(jsonb_build_object('action', action, 'status', status, 'error_code', error_code,
                                                  'target', target_type, 'owner', owner_id, 'ws', workspace_id,
                                                  'actor', actor_kind, 'inputs', inputs,
                                                  'summary', replace(summary, p_run::text, 'X')) ORDER BY id)
                FROM agent.audit_log WHERE target_type = 'run' AND target_id = p_run::text AND action <> 'run.start'),
    'approvals', (SELECT jsonb_agg(jsonb_build_object('status', status, 'decided', decided_at IS NOT DISTINCT FROM now()))
                    FROM agent.approvals WHERE run_id = p_run),
    'state', (SELECT count(*) FROM agent.run_state WHERE run_id = p_run))
$$;

-- 1. plain final answers, a run with a pending approval, a run over its budget,
--    a run a message waits for, runs of the same trigger (twice), a cancelled run, a child run
SELECT pg_temp.running() AS a1, pg_temp.running() AS b1 \gset
SELECT pg_temp.running() AS a2, pg_temp.running() AS b2 \gset
SELECT agent.request_approval(r, 'wb_tool', '{"n": 1}') FROM unnest(ARRAY[:a2, :b2]::bigint[]) r;
UPDATE agent.runs SET status = 'running' WHERE id IN (:a2, :b2);
SELECT pg_temp.running(NULL, 100) AS a3, pg_temp.running(NULL, 100) AS b3 \gset
SELECT pg_temp.running() AS a4, pg_temp.running() AS b4 \gset
INSERT INTO agent.run_messages (run_id, seq, sender, kind, body)
VALUES (:a4, 1, 'user:u1', 'followup', 'one more thing'), (:b4, 1, 'user:u1', 'followup', 'one more thing');
SELECT pg_temp.running(660101) AS a5, pg_temp.running(660102) AS b5 \gset
SELECT pg_temp.running(660101) AS a6, pg_temp.running(660102) AS b6 \gset
SELECT pg_temp.running(660103) AS a7, pg_temp.running(660104) AS b7 \gset
SELECT pg_temp.running() AS a8, pg_temp.running() AS b8 \gset
SELECT agent.cancel_run(r, 'o-wb') FROM unnest(ARRAY[:a8, :b8]::bigint[]) r;
SELECT pg_temp.running() AS p9 \gset
SELECT pg_temp.running(NULL, NULL, :p9) AS a9, pg_temp.running(NULL, NULL, :p9) AS b9 \gset

-- the batch, in an order that is not the id order
SELECT results_eq(
  format($q$SELECT run_id, outcome FROM agent._worker_finish_replies(%L, 300) ORDER BY run_id$q$,
         jsonb_build_array(pg_temp.reply(:a6, 'six', 3, 4), pg_temp.reply(:a1, 'one', 10, 20), pg_temp.reply(:a2, 'two', 1, 2),
                           pg_temp.reply(:a3, 'three', 60, 50), pg_temp.reply(:a4, 'four', 1, 1),
                           pg_temp.reply(:a5, 'five', 5, 5), pg_temp.reply(:a7, NULL, 0, 0),
                           pg_temp.reply(:a8, 'eight', 1, 1), pg_temp.reply(:a9, 'nine', 1, 1))),
  format($q$VALUES (%s::bigint, 'finished'), (%s, 'finished'), (%s, 'finished'), (%s, 'continue'), (%s, 'finished'),
                   (%s, 'finished'), (%s, 'finished'), (%s, 'gone'), (%s, 'single')$q$,
         :a1, :a2, :a3, :a4, :a5, :a6, :a7, :a8, :a9),
  'each run of the batch has its outcome: finished, continue, gone (cancelled) or single (a child run)');

-- the same replies one by one, in id order
SELECT is(pg_temp.one(pg_temp.reply(:b1, 'one', 10, 20)), 'finished', 'one by one: finished');
SELECT pg_temp.one(pg_temp.reply(:b2, 'two', 1, 2));
SELECT pg_temp.one(pg_temp.reply(:b3, 'three', 60, 50));
SELECT is(pg_temp.one(pg_temp.reply(:b4, 'four', 1, 1)), 'continue', 'one by one: a message waits');
SELECT pg_temp.one(pg_temp.reply(:b5, 'five', 5, 5));
SELECT pg_temp.one(pg_temp.reply(:b6, 'six', 3, 4));
SELECT pg_temp.one(pg_temp.reply(:b7, NULL, 0, 0));
SELECT is(pg_temp.one(pg_temp.reply(:b8, 'eight', 1, 1)), 'gone', 'one by one: a cancelled run is left alone');

SELECT is(pg_temp.snap(:a1), pg_temp.snap(:b1), 'a final answer: the same run, step, audit rows and state');
SELECT is(pg_temp.snap(:a1) #>> '{run,status}', 'succeeded', '(it succeeded)');
SELECT is(pg_temp.snap(:a2), pg_temp.snap(:b2), 'with a pending approval: expired the same way');
SELECT is(pg_temp.snap(:a2) #>> '{approvals,0,status}', 'expired', '(the approval expired)');
SELECT is(pg_temp.snap(:a3), pg_temp.snap(:b3), 'over its token budget: ended budget_exceeded the same way');
SELECT is(pg_temp.snap(:a3) #>> '{run,error}', 'token budget of 100 exhausted (110 used)', '(budget_exceeded with its error)');
SELECT is(pg_temp.snap(:a4), pg_temp.snap(:b4), 'a message waits: step and usage recorded, the run goes on');
SELECT is(pg_temp.snap(:a4) #>> '{run,status}', 'running', '(still running, its lease renewed)');
SELECT is(pg_temp.snap(:a5), pg_temp.snap(:b5), 'runs of a trigger (first)');
SELECT is(pg_temp.snap(:a6), pg_temp.snap(:b6), 'runs of a trigger (second)');
SELECT is(pg_temp.snap(:a7), pg_temp.snap(:b7), 'no text, no tokens');
SELECT is(pg_temp.snap(:a8), pg_temp.snap(:b8), 'a cancelled run: nothing recorded');
SELECT is(pg_temp.snap(:a9) -> 'steps', 'null'::jsonb, 'a child run is left to the one-reply path');
SELECT results_eq(
  $$SELECT last_status, last_error, last_run_at FROM agent.triggers WHERE id IN (660101, 660103) ORDER BY id$$,
  $$SELECT last_status, last_error, last_run_at FROM agent.triggers WHERE id IN (660102, 660104) ORDER BY id$$,
  'the triggers keep the same last status, error and first run time');

-- 2. the batch fails as a whole on bad token counts (the worker then records each reply alone)
SELECT pg_temp.running() AS c1 \gset
SELECT throws_ok(format($q$SELECT * FROM agent._worker_finish_replies(%L, 300)$q$,
                        jsonb_build_array(pg_temp.reply(:c1, 'x', -1, 0))),
                 '22023', 'token counts must be non-negative', 'negative token counts fail the batch');

-- 3. an empty batch
SELECT is_empty($$SELECT * FROM agent._worker_finish_replies('[]', 300)$$, 'an empty batch does nothing');
SELECT lives_ok($$SELECT agent._finish_runs_effects('{}')$$, 'no run to end');

SELECT * FROM finish();
ROLLBACK;
