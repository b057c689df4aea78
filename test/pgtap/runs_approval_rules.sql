-- Approvals, issue 18: what an agent's scope may say about approvals.
-- "approval_rules" name SQL predicates the worker calls as the tool role
-- (test/t/624_worker_approval_rules.t); at save, the function must exist
-- with the signature (text, jsonb, bigint) RETURNS boolean, be executable by
-- the saving role and by agents_tool, and not be a SECURITY DEFINER function
-- of a non-superuser (that would run the model's input with its owner's
-- rights).  "deny_ends_run" is a boolean.  agent.deny takes a reason.
-- Roles: the application (agents_app), a role with no grants, an agent
-- session (agents_tool with an agent identity); two workspaces.
BEGIN;
SELECT plan(38);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.workspace = '';
CREATE ROLE tap_ar_app NOLOGIN IN ROLE agents_app;
CREATE ROLE tap_ar_nobody NOLOGIN;
CREATE ROLE tap_ar_owner NOLOGIN;
CREATE SCHEMA tap_ar;
GRANT USAGE ON SCHEMA tap_ar TO PUBLIC;
CREATE FUNCTION tap_ar.ok(tool text, input jsonb, run_id bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE FUNCTION tap_ar.two(tool text, input jsonb) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE FUNCTION tap_ar.num(tool text, input jsonb, run_id bigint) RETURNS integer LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION tap_ar.many(tool text, input jsonb, run_id bigint) RETURNS SETOF boolean LANGUAGE sql AS 'SELECT true';
CREATE FUNCTION tap_ar.definer(tool text, input jsonb, run_id bigint) RETURNS boolean
  LANGUAGE sql SECURITY DEFINER AS 'SELECT false';
ALTER FUNCTION tap_ar.definer(text, jsonb, bigint) OWNER TO tap_ar_owner;
CREATE FUNCTION tap_ar.su_definer(tool text, input jsonb, run_id bigint) RETURNS boolean
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS 'SELECT false';
CREATE FUNCTION tap_ar.no_tool(tool text, input jsonb, run_id bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
REVOKE EXECUTE ON FUNCTION tap_ar.no_tool(text, jsonb, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tap_ar.no_tool(text, jsonb, bigint) TO tap_ar_app;
CREATE FUNCTION tap_ar.no_app(tool text, input jsonb, run_id bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
REVOKE EXECUTE ON FUNCTION tap_ar.no_app(text, jsonb, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tap_ar.no_app(text, jsonb, bigint) TO agents_tool;

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (4190001, 'ws-ar-a', 'ar-o', 'gated'), (4190002, 'ws-ar-b', 'ar-o', 'other workspace');
INSERT INTO agent.shares (agent_id, user_id, level) VALUES (4190001, 'ar-i', 'interact');
-- a pending approval in each workspace
CREATE FUNCTION pg_temp.waiting(p_agent bigint, p_tool text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
  v := agent.start_run(p_agent, NULL, '{}', 'autonomous', 'api');
  UPDATE agent.runs SET status = 'running', attempts = 1 WHERE id = v;
  RETURN agent.request_approval(v, p_tool, '{"page": "x"}');
END $$;
SELECT pg_temp.waiting(4190001, 'tap_ar_tool_a') AS ka \gset
SELECT pg_temp.waiting(4190002, 'tap_ar_tool_b') AS kb \gset
CREATE FUNCTION pg_temp.rules(p_fn text, p_tools text DEFAULT '["write_resource", "mcp__*"]') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('scope', jsonb_build_object('approval_rules',
           jsonb_build_array(jsonb_build_object('tools', p_tools::jsonb, 'function', p_fn))))
$$;
GRANT EXECUTE ON FUNCTION pg_temp.rules(text, text) TO PUBLIC;

-- the application, in workspace a
SET LOCAL ROLE tap_ar_app;
SET LOCAL pg_agents.workspace = 'ws-ar-a';
SELECT lives_ok($$SELECT agent.save_settings(4190001, '{"scope": {"approval_rules": [{"tools": ["write_resource", "mcp__*"], "function": "tap_ar.ok(text, jsonb, bigint)"}], "deny_ends_run": true}}', 'ar-o')$$,
                'the application saves a rule naming a predicate, and deny_ends_run');
SELECT is((SELECT scope #>> '{approval_rules,0,function}' FROM agent.agents WHERE id = 4190001), 'tap_ar.ok(text, jsonb, bigint)',
          'the rule is in the scope');
SELECT is((SELECT snapshot #> '{scope,deny_ends_run}' FROM agent.versions WHERE agent_id = 4190001 ORDER BY id DESC LIMIT 1),
          'true'::jsonb, 'and in the version snapshot (versioned like every setting)');
SELECT lives_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.su_definer(text,jsonb,bigint)')),
                'a SECURITY DEFINER predicate a superuser owns is accepted');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.nope(text, jsonb, bigint)')),
                 '42883', 'approval rule function tap_ar.nope(text, jsonb, bigint) does not exist', 'an unknown function');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('ok(text, jsonb, bigint)')),
                 '42883', NULL, 'a name that is not schema-qualified is not looked up in any search path');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.two(text, jsonb)')),
                 '22023', 'approval rule function tap_ar.two(text,jsonb) has the wrong signature', 'two arguments');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.num(text, jsonb, bigint)')),
                 '22023', 'approval rule function tap_ar.num(text,jsonb,bigint) has the wrong signature', 'not boolean');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.many(text, jsonb, bigint)')),
                 '22023', NULL, 'a set-returning function');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('agent.approval_key(text, jsonb)')),
                 '22023', NULL, 'an extension function');
-- attack: a SECURITY DEFINER function of another role would run the model's input with that role's rights
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.definer(text, jsonb, bigint)')),
                 '42501', 'approval rule function tap_ar.definer(text,jsonb,bigint) is SECURITY DEFINER',
                 'a SECURITY DEFINER predicate of a non-superuser is refused');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.no_tool(text, jsonb, bigint)')),
                 '42501', 'role agents_tool may not execute approval rule function tap_ar.no_tool(text,jsonb,bigint)',
                 'a predicate the tool role may not execute is refused (it would always fail closed)');
-- attack: naming a function the application may not execute itself, so that the worker runs it
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.no_app(text, jsonb, bigint)')),
                 '42501', 'permission denied for function tap_ar.no_app(text,jsonb,bigint)',
                 'a predicate the saving role may not execute is refused');
SELECT throws_ok($$SELECT agent.save_settings(4190001, '{"scope": {"approval_rules": {"tools": ["x"]}}}', 'ar-o')$$,
                 '22023', 'scope key "approval_rules" must be an array of at most 50 rules', 'rules are an array');
SELECT throws_ok($$SELECT agent.save_settings(4190001, '{"scope": {"approval_rules": [{"function": "tap_ar.ok(text,jsonb,bigint)"}]}}', 'ar-o')$$,
                 '22023', NULL, 'a rule names its tools');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.ok(text,jsonb,bigint)', '[]')),
                 '22023', NULL, 'at least one tool');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.ok(text,jsonb,bigint)', '["write resource"]')),
                 '22023', NULL, 'a tool pattern has no spaces');
SELECT throws_ok($$SELECT agent.save_settings(4190001, '{"scope": {"approval_rules": [{"tools": ["x"], "function": "tap_ar.ok(text,jsonb,bigint)", "when": "always"}]}}', 'ar-o')$$,
                 '22023', NULL, 'an unknown rule key');
SELECT throws_ok($$SELECT agent.save_settings(4190001, '{"scope": {"deny_ends_run": "yes"}}', 'ar-o')$$,
                 '22023', 'scope key "deny_ends_run" must be a boolean', 'deny_ends_run is a boolean');
SELECT throws_ok(format('SELECT agent.create_agent(''ws-ar-a'', ''ar-o'', ''new'', %L)', pg_temp.rules('tap_ar.definer(text,jsonb,bigint)')),
                 '42501', NULL, 'create_agent checks the rules too');
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-i'')', pg_temp.rules('tap_ar.ok(text,jsonb,bigint)')),
                 '42501', NULL, 'an interact user may not save rules');
SELECT throws_ok(format('SELECT agent.save_settings(4190002, %L, ''ar-o'')', pg_temp.rules('tap_ar.ok(text,jsonb,bigint)')),
                 '42704', 'agent 4190002 does not exist', 'an agent of another workspace does not exist');
-- deny with a reason: the application, in its workspace
SELECT throws_ok(format('SELECT agent.deny(%L, ''ar-o'', NULL, ''no'')', :'kb'), '42704', format('no pending approval with key "%s"', :'kb'),
                 'an approval of another workspace does not exist');
SELECT throws_ok(format('SELECT agent.deny(%L, ''ar-i'', NULL, ''no'')', :'ka'), '42501', NULL, 'an interact user may not deny');
SELECT lives_ok($$SELECT agent.save_settings(4190001, '{"scope": {"deny_ends_run": true}}', 'ar-o')$$,
                'a scope with deny_ends_run (a scope is saved whole)');
SELECT ok(agent.deny(:'ka', 'ar-o', NULL, 'too risky') > 0, 'the owner denies with a reason');
SELECT is((SELECT x.status FROM agent.runs x JOIN agent.approvals p ON p.run_id = x.id WHERE p.approval_key = :'ka'),
          'failed', 'deny_ends_run (saved above) ends the run');

-- an agent session: the identity chooses rules, never rights
SET LOCAL pg_agents.actor = 'agent:4190001';
SELECT throws_ok(format('SELECT agent.save_settings(4190001, %L, ''ar-o'')', pg_temp.rules('tap_ar.definer(text,jsonb,bigint)')),
                 '42501', NULL, 'claiming to be the agent does not let the application name a definer function');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT throws_ok($$SELECT agent.save_settings(4190001, '{}', 'ar-o')$$, '42501', NULL, 'the tool role may not save settings');
SELECT throws_ok(format('SELECT agent.deny(%L, ''ar-o'', NULL, ''x'')', :'kb'), '42501', NULL, 'nor deny');
SELECT throws_ok($$SELECT agent.consume_refusal(1, 'x', '{}')$$, '42501', NULL, 'nor take a refusal');
-- a role with no grants
RESET ROLE;
SET LOCAL pg_agents.actor = '';
SET LOCAL ROLE tap_ar_nobody;
SELECT throws_ok($$SELECT agent.save_settings(4190001, '{}', 'ar-o')$$, '42501', NULL, 'a role with no grants may not save settings');
SELECT throws_ok(format('SELECT agent.deny(%L, ''ar-o'', NULL, ''x'')', :'kb'), '42501', NULL, 'nor deny');
SELECT throws_ok($$SELECT agent.consume_refusal(1, 'x', '{}')$$, '42501', NULL, 'nor take a refusal');
RESET ROLE;
SELECT is((SELECT status FROM agent.approvals WHERE approval_key = :'kb'), 'pending', 'the other workspace''s approval is untouched');

-- an executor of workspace a takes workspace b's approved call (the attack:
-- consume it so that b's run asks again, or learn that it exists)
CREATE ROLE tap_ar_exec NOLOGIN IN ROLE agents_executor;
UPDATE agent.approvals SET status = 'approved', decided_by = 'ar-o' WHERE approval_key = :'kb';
SELECT run_id AS rb FROM agent.approvals WHERE approval_key = :'kb' \gset
SET LOCAL ROLE tap_ar_exec;
SET LOCAL pg_agents.workspace = 'ws-ar-a';
SELECT is(agent.consume_approval(:rb, 'tap_ar_tool_b', '{"page": "x"}'), false,
          'an executor of another workspace cannot consume an approval');
SET LOCAL pg_agents.workspace = 'ws-ar-b';
SELECT is(agent.consume_approval(:rb, 'tap_ar_tool_b', '{"page": "x"}'), true,
          'the executor of its workspace consumes it, once');
RESET ROLE;
SELECT isnt((SELECT consumed_at FROM agent.approvals WHERE approval_key = :'kb'), NULL, 'consumed by its own workspace''s executor');

SELECT * FROM finish();
ROLLBACK;
