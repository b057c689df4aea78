-- run_as applies to schedule triggers only (issue 31): on a trigger of kind
-- event, mention or api it would be stored and ignored, so every way of
-- saving one refuses it (22023, the hint naming schedule triggers):
-- agent.set_trigger given the key, a change of kind that keeps run_as
-- shared, a direct write of the application role, a draft.  A schedule
-- keeps both values.  Two workspaces; the application role with its
-- documented grants; a role with no grants writes nothing.
BEGIN;
SELECT plan(22);

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (991001, 'ws-runas991-a', 'r991-owner', 'run_as refusals a'),
  (991002, 'ws-runas991-b', 'r991-ownerb', 'run_as refusals b');
SET LOCAL pg_agents.workspace = 'ws-runas991-a';

SELECT throws_ok($$SELECT agent.set_trigger(991001, '{"kind": "api", "prompt": "p", "run_as": "shared"}', 'r991-owner')$$,
                 '22023', 'trigger key "run_as" cannot be set on a trigger of kind api',
                 'set_trigger: run_as shared on an api trigger is refused');
SELECT throws_ok($$SELECT agent.set_trigger(991001, '{"kind": "event", "event_name": "page.updated", "run_as": "creator"}', 'r991-owner')$$,
                 '22023', 'trigger key "run_as" cannot be set on a trigger of kind event',
                 'set_trigger: even run_as creator, given for an event trigger, is refused (it would be ignored)');
SELECT throws_ok($$SELECT agent.set_trigger(991001, '{"kind": "mention", "run_as": "shared"}', 'r991-owner')$$,
                 '22023', 'trigger key "run_as" cannot be set on a trigger of kind mention',
                 'set_trigger: and on a mention trigger');
-- the hint says where it applies
CREATE FUNCTION pg_temp.hint_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
  EXECUTE q;
  RETURN NULL;
EXCEPTION WHEN invalid_parameter_value THEN
  GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
  RETURN h;
END $$;
SELECT is(pg_temp.hint_of($$SELECT agent.set_trigger(991001, '{"kind": "api", "run_as": "shared"}', 'r991-owner')$$),
          'run_as applies to schedule triggers only; leave the key out for other kinds.', 'with a hint naming schedule triggers');
SELECT is((SELECT count(*)::int FROM agent.triggers WHERE agent_id = 991001), 0, 'nothing was saved');

-- a schedule takes both values
SELECT agent.set_trigger(991001, '{"kind": "schedule", "schedule": "0 9 * * *", "prompt": "d", "run_as": "shared"}', 'r991-owner') AS tid \gset
SELECT is((SELECT run_as FROM agent.triggers WHERE id = :tid), 'shared', 'a schedule trigger keeps run_as shared');
SELECT lives_ok(format($$SELECT agent.set_trigger(991001, '{"id": %s, "run_as": "creator"}', 'r991-owner')$$, :tid),
                'and changes it');
SELECT agent.set_trigger(991001, format('{"id": %s, "run_as": "shared"}', :tid)::jsonb, 'r991-owner') AS _ \gset
-- turning the shared schedule into an api trigger would keep run_as shared, ignored
SELECT throws_ok(format($$SELECT agent.set_trigger(991001, '{"id": %s, "kind": "api"}', 'r991-owner')$$, :tid),
                 '22023', 'run_as "shared" cannot be set on a trigger of kind api',
                 'changing the kind of a shared schedule to api is refused');
SELECT is((SELECT kind || ' ' || run_as FROM agent.triggers WHERE id = :tid), 'schedule shared', 'and the trigger is unchanged');
SELECT agent.set_trigger(991001, format('{"id": %s, "run_as": "creator"}', :tid)::jsonb, 'r991-owner') AS _ \gset
SELECT lives_ok(format($$SELECT agent.set_trigger(991001, '{"id": %s, "kind": "api", "schedule": null}', 'r991-owner')$$, :tid),
                'a creator schedule may become an api trigger (creator is the default other kinds store)');

-- the application role writing agent.triggers directly
SET LOCAL ROLE agents_app;
SELECT throws_ok($$INSERT INTO agent.triggers (agent_id, kind, event_name, run_as) VALUES (991001, 'event', 'page.updated', 'shared')$$,
                 '22023', 'run_as "shared" cannot be set on a trigger of kind event',
                 'a direct insert of an event trigger with run_as shared is refused');
SELECT lives_ok($$INSERT INTO agent.triggers (agent_id, kind, event_name) VALUES (991001, 'event', 'page.updated')$$,
                'without run_as it is accepted');
SELECT throws_ok($$UPDATE agent.triggers SET run_as = 'shared' WHERE agent_id = 991001 AND kind = 'event'$$,
                 '22023', 'run_as "shared" cannot be set on a trigger of kind event', 'and so is an update setting it');
RESET ROLE;

-- a role with no grants writes nothing
CREATE ROLE r991_nobody;
SET LOCAL ROLE r991_nobody;
SELECT throws_ok($$INSERT INTO agent.triggers (agent_id, kind, schedule, run_as) VALUES (991002, 'schedule', '0 9 * * *', 'shared')$$,
                 '42501', NULL, 'a role with no grants cannot write a trigger at all');
RESET ROLE;

-- a draft: the key on another kind is a problem of the draft
SELECT is(agent._draft_trigger_problem('{"kind": "event", "event_name": "page.updated", "resource_type": "page", "run_as": "shared"}'),
          'run_as applies to schedule triggers only', 'a draft event trigger with run_as is invalid');
SELECT is(agent._draft_trigger_problem('{"kind": "schedule", "schedule": "0 9 * * *", "run_as": "shared"}'),
          NULL, 'a draft schedule with run_as is valid');

-- settings: a scope key the worker does not read is refused, not stored
SELECT throws_ok($$SELECT agent.save_settings(991001, '{"scope": {"mcp": ["crm"]}}', 'r991-owner')$$,
                 '22023', 'unknown scope key "mcp"', 'save_settings refuses a scope key the worker ignores');
SELECT throws_ok($$SELECT agent.save_settings(991001, '{"scope": {"llm_provider": "gemini"}}', 'r991-owner')$$,
                 '22023', 'scope key "llm_provider" must be openai or anthropic', 'and a wire format the worker cannot speak');
SELECT throws_ok($$SELECT agent.save_settings(991001, '{"scope": {"manage_jobs": "yes"}}', 'r991-owner')$$,
                 '22023', 'scope key "manage_jobs" must be a boolean', 'and a manage_jobs that is not a boolean');
SELECT lives_ok($$SELECT agent.save_settings(991001, '{"scope": {"max_tokens": 500, "needs_approval": ["write_resource"], "manage_jobs": true}}', 'r991-owner')$$,
                'known scope keys are saved');

SELECT throws_ok($$SELECT agent.save_settings(991001, '{"credit_limit_monthly": 100}', 'r991-owner')$$,
                 '22023', 'settings key "credit_limit_monthly" cannot be honoured: pg_agents enforces no credit limit',
                 'a credit limit, which nothing enforces, is refused');
SELECT lives_ok($$SELECT agent.save_settings(991001, '{"credit_limit_monthly": null}', 'r991-owner')$$,
                'null (no limit) is accepted');

SELECT * FROM finish();
ROLLBACK;
