-- events: agent.fire_event matching, dedup, cap, anti-loop, suspension,
-- rollback, mentions, table watchers.
BEGIN;
SELECT plan(89);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.run_id = '';
-- every event belongs to a workspace: the session's (test/pgtap/events_tenants.sql
-- covers events of other workspaces and of none)
SET LOCAL pg_agents.workspace = 'w-events';
SET LOCAL pg_agents.dedup_window = 600;
SET LOCAL pg_agents.self_retrigger_cap = 3;

INSERT INTO agent.agents (id, workspace_id, owner_id, name, status, hourly_run_cap, deleted_at) VALUES
  (4200, 'w-events', 'u1', 'triager',   'active',    NULL, NULL),
  (4201, 'w-events', 'u1', 'suspended', 'suspended', NULL, NULL),
  (4202, 'w-events', 'u1', 'deleted',   'active',    NULL, now()),
  (4203, 'w-events', 'u1', 'capped',    'active',    2,    NULL),
  (4204, 'w-events', 'u1', 'looper',    'active',    NULL, NULL),
  (4205, 'w-events', 'u1', 'helper',    'active',    NULL, NULL);

CREATE FUNCTION pg_temp.runs_of(bigint) RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM agent.runs WHERE agent_id = $1 $$;
CREATE FUNCTION pg_temp.fire(ev text, rid text, payload jsonb, eid text DEFAULT NULL, actor text DEFAULT NULL)
  RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM agent.fire_event(ev, 'collection', rid, payload, actor, eid) $$;

-- ---------------------------------------------------------------- matching
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, resource_id, filter, prompt) VALUES
  (4200, 4200, 'event', 'events.t.added', 'collection', NULL, '{}', 'Triage the new ticket');

SELECT is(pg_temp.fire('events.t.added', 'public.tickets', '{"row": {"priority": "high"}}', 'm-1', 'user:alice'), 1::bigint,
          'a matching event makes one run');
SELECT results_eq(
  $$ SELECT regime, origin, trigger_id, status, priority::int, requested_by FROM agent.runs WHERE agent_id = 4200 $$,
  $$ VALUES ('autonomous', 'event', 4200::bigint, 'queued', 0, 'user:alice') $$,
  'the run is autonomous, origin event, queued, low priority, requested by the actor');
SELECT is((SELECT input FROM agent.runs WHERE agent_id = 4200),
          '{"event": "events.t.added", "resource_type": "collection", "resource_id": "public.tickets",
            "event_id": "m-1", "actor": "user:alice", "payload": {"row": {"priority": "high"}},
            "prompt": "Triage the new ticket"}'::jsonb,
          'run input = event, resource, event_id, actor, payload, prompt');
SELECT isnt((SELECT last_run_at FROM agent.triggers WHERE id = 4200), NULL, 'the trigger records last_run_at');
SELECT is(pg_temp.fire('events.t.removed', 'public.tickets', '{}', 'm-2'), 0::bigint, 'another event name: no run');
SELECT is((SELECT count(*) FROM agent.fire_event('events.t.added', 'page', 'public.tickets', '{}', NULL, 'm-3')), 0::bigint,
          'another resource type: no run');

INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, resource_id) VALUES
  (4201, 4205, 'event', 'events.t.scoped', 'collection', 'public.a');
SELECT is(pg_temp.fire('events.t.scoped', 'public.b', '{}', 's-1'), 0::bigint, 'a trigger on one resource ignores another');
SELECT is(pg_temp.fire('events.t.scoped', 'public.a', '{}', 's-2'), 1::bigint, 'and fires for its own resource');
SELECT is(pg_temp.fire('events.t.added', 'public.anything', '{}', 's-3'), 1::bigint, 'resource_id NULL matches any resource');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, resource_id) VALUES
  (4218, 4205, 'event', 'events.t.anytype', NULL, NULL);
SELECT is((SELECT count(*) FROM agent.fire_event('events.t.anytype', 'page', 'p-1', '{}', NULL, 'at-1'))
        + (SELECT count(*) FROM agent.fire_event('events.t.anytype', 'meeting', 'm-1', '{}', NULL, 'at-2')), 2::bigint,
          'resource_type NULL matches any resource type');

UPDATE agent.triggers SET enabled = false WHERE id = 4201;
SELECT is(pg_temp.fire('events.t.scoped', 'public.a', '{}', 's-4'), 0::bigint, 'a disabled trigger never fires (cache flushed by the update)');
UPDATE agent.triggers SET enabled = true WHERE id = 4201;
SELECT is(pg_temp.fire('events.t.scoped', 'public.a', '{}', 's-5'), 1::bigint, 're-enabled in the same transaction: fires again');
DELETE FROM agent.triggers WHERE id = 4201;
SELECT is(pg_temp.fire('events.t.scoped', 'public.a', '{}', 's-6'), 0::bigint, 'a deleted trigger never fires');

-- ---------------------------------------------------------------- filters
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4202, 4205, 'event', 'events.t.filtered', 'collection',
   '{"all": [{"property": "priority", "op": "eq", "value": "high"}], "keywords": ["outage"]}');
SELECT is(pg_temp.fire('events.t.filtered', 'x', '{"row": {"priority": "high", "title": "Outage in eu"}}', 'f-1'), 1::bigint,
          'filter satisfied: run');
SELECT is(pg_temp.fire('events.t.filtered', 'x', '{"row": {"priority": "low", "title": "Outage in eu"}}', 'f-2'), 0::bigint,
          'property filter not satisfied: no run');
SELECT is(pg_temp.fire('events.t.filtered', 'x', '{"row": {"priority": "high", "title": "all good"}}', 'f-3'), 0::bigint,
          'keyword filter not satisfied: no run');
SELECT is((SELECT count(*) FROM agent.event_dedup WHERE trigger_id = 4202), 1::bigint,
          'filtered-out events leave no fingerprint');

CREATE TABLE pg_temp.vip (id text);
INSERT INTO pg_temp.vip VALUES ('17');
CREATE VIEW pg_temp.vip_view AS SELECT id FROM pg_temp.vip;
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4203, 4205, 'event', 'events.t.view', 'collection', jsonb_build_object('view', 'pg_temp.vip_view'));
SELECT is(pg_temp.fire('events.t.view', 'x', '{"row_id": "17"}', 'v-1'), 1::bigint, 'view filter: the row is in the view');
SELECT is(pg_temp.fire('events.t.view', 'x', '{"row_id": "18"}', 'v-2'), 0::bigint, 'view filter: the row is not in the view');

-- ---------------------------------------------------------------- dedup
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES
  (4204, 4205, 'event', 'events.t.dedup', 'collection');
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"n": 1}', 'd-1'), 1::bigint, 'first event with an id: run');
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"n": 2}', 'd-1'), 0::bigint, 'same event id again (other payload): no run');
SELECT is((SELECT sum(pg_temp.fire('events.t.dedup', 'x', '{"n": 1}', 'd-50')) FROM generate_series(1, 50)), 1::numeric,
          '50 identical events make exactly one run');
SELECT is((SELECT sum(pg_temp.fire('events.t.dedup', 'x', '{"n": 1}', 'd-distinct-' || i)) FROM generate_series(1, 5) i), 5::numeric,
          '5 distinct event ids make 5 runs');
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"b": 1, "a": 2}'), 1::bigint, 'no event id: the payload is the fingerprint');
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"a": 2, "b": 1}'), 0::bigint, 'same payload (other key order): no run');
SELECT is(pg_temp.fire('events.t.dedup', 'y', '{"a": 2, "b": 1}'), 1::bigint, 'same payload on another resource: run');
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"a": 3, "b": 1}'), 1::bigint, 'another payload: run');
UPDATE agent.event_dedup SET seen_at = seen_at - interval '11 minutes' WHERE trigger_id = 4204 AND fingerprint LIKE 'e:%';
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"n": 1}', 'd-1'), 1::bigint, 'past the window the same event runs again');
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"n": 1}', 'd-1'), 0::bigint, 'and its refreshed fingerprint dedups again');
SET LOCAL pg_agents.dedup_window = 0;
SELECT is(pg_temp.fire('events.t.dedup', 'x', '{"n": 1}', 'd-1'), 1::bigint, 'pg_agents.dedup_window = 0 turns dedup off');
SET LOCAL pg_agents.dedup_window = 600;
UPDATE agent.event_dedup SET seen_at = now() - interval '1 hour' WHERE trigger_id = 4204 AND fingerprint LIKE 'p:%';
CREATE TEMP TABLE dedup_before AS
  SELECT count(*) FILTER (WHERE seen_at < now() - interval '10 minutes') AS old, count(*) AS total FROM agent.event_dedup;
SELECT is(agent._events_cleanup(now()), (SELECT old FROM dedup_before), '_events_cleanup deletes fingerprints older than the window');
SELECT is((SELECT count(*) FROM agent.event_dedup), (SELECT total - old FROM dedup_before), 'and keeps the others');
SELECT is((SELECT count(*) FROM agent.event_dedup WHERE trigger_id = 4204 AND fingerprint LIKE 'p:%'), 0::bigint,
          'old fingerprints are gone');

-- ---------------------------------------------------------------- rollback
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES
  (4205, 4205, 'event', 'events.t.rollback', 'collection');
SAVEPOINT before_event;
SELECT is(pg_temp.fire('events.t.rollback', 'x', '{}', 'r-1'), 1::bigint, 'inside the transaction the run exists');
ROLLBACK TO SAVEPOINT before_event;
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4205), 0::bigint, 'rolled back: no run');
SELECT is((SELECT count(*) FROM agent.event_dedup WHERE trigger_id = 4205), 0::bigint, 'rolled back: no fingerprint');
SELECT is(pg_temp.fire('events.t.rollback', 'x', '{}', 'r-1'), 1::bigint, 'the same event fired again later makes its run');

-- ---------------------------------------------------------------- hourly cap
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES
  (4206, 4203, 'event', 'events.t.cap', 'collection');
SELECT is((SELECT sum(pg_temp.fire('events.t.cap', 'x', '{}', 'c-' || i)) FROM generate_series(1, 4) i), 4::numeric,
          'past the hourly cap events still make runs (4 of 4)');
SELECT results_eq(
  $$ SELECT status, count(*) FROM agent.runs WHERE agent_id = 4203 GROUP BY status ORDER BY status $$,
  $$ VALUES ('budget_exceeded', 2::bigint), ('queued', 2::bigint) $$,
  'hourly_run_cap = 2: two queued, two visible budget_exceeded');
SELECT is((SELECT DISTINCT error FROM agent.runs WHERE agent_id = 4203 AND status = 'budget_exceeded'),
          'hourly run cap of 2 reached', 'budget_exceeded runs say why');
SELECT isnt((SELECT min(finished_at) FROM agent.runs WHERE agent_id = 4203 AND status = 'budget_exceeded'), NULL,
            'budget_exceeded runs are finished');

-- ---------------------------------------------------------------- suspension
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES
  (4207, 4201, 'event', 'events.t.susp', 'collection'),
  (4208, 4202, 'event', 'events.t.susp', 'collection'),
  (4209, 4205, 'event', 'events.t.susp', 'collection');
SELECT is(pg_temp.fire('events.t.susp', 'x', '{}', 'su-1'), 1::bigint, 'suspended and deleted agents: only the active one runs');
SELECT is(pg_temp.runs_of(4201) + pg_temp.runs_of(4202), 0::bigint, 'the dispatcher is silent for suspended and deleted agents');
SELECT is((SELECT count(*) FROM agent.event_dedup WHERE trigger_id IN (4207, 4208)), 0::bigint, 'and records nothing for them');
UPDATE agent.agents SET status = 'active' WHERE id = 4201;
SELECT is(pg_temp.fire('events.t.susp', 'x', '{}', 'su-1'), 1::bigint, 'reactivated: the same event now runs it (it was never deduped)');
SELECT is(pg_temp.runs_of(4201), 1::bigint, 'the reactivated agent has its run');

-- ---------------------------------------------------------------- anti-loop
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES
  (4210, 4200, 'event', 'events.t.loop', 'collection'),
  (4211, 4205, 'event', 'events.t.loop', 'collection');
SELECT is(pg_temp.fire('events.t.loop', 'x', '{}', 'l-1', 'agent:4200'), 1::bigint,
          'an agent''s own event does not wake it, other agents still run');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4210), 0::bigint, 'no run for the acting agent');
SET LOCAL pg_agents.actor = 'agent:4200';
SELECT is(pg_temp.fire('events.t.loop', 'x', '{}', 'l-2'), 1::bigint, 'actor defaults to the session pg_agents.actor');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4210), 0::bigint, 'still no run for the acting agent');
SELECT is((SELECT requested_by FROM agent.runs WHERE trigger_id = 4211 AND input->>'event_id' = 'l-2'), 'agent:4200',
          'the session actor is recorded as requested_by');
SET LOCAL pg_agents.actor = '';

INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, allow_self_retrigger) VALUES
  (4212, 4204, 'event', 'events.t.self', 'collection', true);
CREATE FUNCTION pg_temp.self_fire(eid text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r bigint;
BEGIN
  SELECT f INTO r FROM agent.fire_event('events.t.self', 'collection', 'x', '{}', 'agent:4204', eid) f;
  RETURN r;
END $$;
SELECT set_config('pg_agents.run_id', '', true);
SELECT set_config('pg_agents.run_id', pg_temp.self_fire('self-1')::text, true);
SELECT is((SELECT (input->>'self_chain')::int FROM agent.runs WHERE id = current_setting('pg_agents.run_id')::bigint), 1,
          'self-retrigger allowed: the first run counts self_chain 1');
SELECT set_config('pg_agents.run_id', pg_temp.self_fire('self-2')::text, true);
SELECT is((SELECT (input->>'self_chain')::int FROM agent.runs WHERE id = current_setting('pg_agents.run_id')::bigint), 2,
          'a run started by that run''s write counts 2');
SELECT set_config('pg_agents.run_id', pg_temp.self_fire('self-3')::text, true);
SELECT is((SELECT (input->>'self_chain')::int FROM agent.runs WHERE id = current_setting('pg_agents.run_id')::bigint), 3,
          'then 3');
SELECT is(pg_temp.self_fire('self-4'), NULL, 'the 4th link is refused (pg_agents.self_retrigger_cap = 3)');
SELECT is(pg_temp.runs_of(4204), 3::bigint, 'the loop stopped by itself after 3 runs');
SELECT results_eq(
  $$ SELECT action, status, error_code, target_id, (inputs->>'self_chain')::int FROM agent.audit_log
     WHERE action = 'event.self_retrigger_capped' AND target_id = '4212' $$,
  $$ VALUES ('event.self_retrigger_capped', 'denied', 'self_retrigger_cap', '4212', 4) $$,
  'the stop is recorded in the audit log');
SELECT set_config('pg_agents.run_id', '', true);
SELECT is(pg_temp.self_fire('self-5') IS NOT NULL, true, 'a new chain (no current run) starts again at 1');

-- ---------------------------------------------------------------- mentions
INSERT INTO agent.triggers (id, agent_id, kind, prompt) VALUES (4213, 4200, 'mention', 'Answer the mention'),
                                                           (4214, 4205, 'mention', NULL);
SELECT is((SELECT count(*) FROM agent.fire_event('agent.mentioned', 'collection', 'x', '{"agent_id": 4200}', 'user:bob', 'mn-1')),
          1::bigint, 'agent.mentioned is routed to the mentioned agent only');
SELECT results_eq($$ SELECT agent_id, origin, trigger_id FROM agent.runs WHERE input->>'event_id' = 'mn-1' $$,
                  $$ VALUES (4200::bigint, 'mention', 4213::bigint) $$, 'a mention run has origin mention');
SELECT is((SELECT count(*) FROM agent.fire_event('agent.mentioned', 'collection', 'x', '{}', 'user:bob', 'mn-2')),
          0::bigint, 'a mention without agent_id wakes nobody');

-- ---------------------------------------------------------------- page.comment_added, meeting.summarized (T-07)
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, prompt) VALUES
  (4219, 4205, 'event', 'meeting.summarized', 'meeting', 'Send the action items.'),
  (4220, 4205, 'event', 'page.comment_added', 'page', NULL);
SELECT is((SELECT count(*) FROM agent.fire_event('meeting.summarized', 'meeting', 'm-77',
           '{"title": "Weekly ops", "summary": "Roll back v2.3; Bob owns the post-mortem."}', 'system', 'meeting:m-77')),
          1::bigint, 'meeting.summarized wakes the follow-up agent');
SELECT results_eq($$ SELECT input->'payload'->>'summary', input->>'prompt', input->>'resource_id' FROM agent.runs WHERE trigger_id = 4219 $$,
                  $$ VALUES ('Roll back v2.3; Bob owns the post-mortem.', 'Send the action items.', 'm-77') $$,
                  'with the summary in its payload');
SELECT is((SELECT count(*) FROM agent.fire_event('page.comment_added', 'page', 'p-318',
           '{"row_id": "c-1", "row": {"body": "Can someone check the outage?"}}', 'user:bob', 'comment:c-1')),
          1::bigint, 'page.comment_added is a plain fire_event call');

-- ---------------------------------------------------------------- watchers
CREATE TABLE events_tickets (id serial PRIMARY KEY, title text, priority text, body text);
SELECT agent.watch_table('events_tickets', 'collection', 'id', ARRAY['body']);
SELECT is((SELECT resource_type || '/' || id_column || '/' || array_to_string(mention_columns, ',')
           FROM agent.watched_tables WHERE tbl = 'events_tickets'::regclass), 'collection/id/body', 'watched_tables lists it');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, resource_id, filter) VALUES
  (4215, 4205, 'event', 'collection.row_added', 'collection', 'public.events_tickets',
   '{"all": [{"property": "priority", "op": "eq", "value": "high"}]}'),
  (4216, 4205, 'event', 'collection.property_updated', 'collection', 'public.events_tickets', '{}'),
  (4217, 4205, 'event', 'collection.row_removed', 'collection', 'public.events_tickets', '{}');

SET LOCAL pg_agents.actor = 'user:carol';
INSERT INTO events_tickets (title, priority, body) VALUES ('Printer on fire', 'high', 'cc [[agent:4200]]');
INSERT INTO events_tickets (title, priority, body) VALUES ('Coffee', 'low', 'meh');
SET LOCAL pg_agents.actor = '';
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4215), 1::bigint,
          'row_added: the high-priority row makes a run, the filtered-out row none');
SELECT is((SELECT input->'payload' FROM agent.runs WHERE trigger_id = 4215),
          jsonb_build_object('table', 'public.events_tickets', 'row_id', '1',
                             'row', jsonb_build_object('id', 1, 'title', 'Printer on fire', 'priority', 'high', 'body', 'cc [[agent:4200]]')),
          'row_added payload: table, row_id, row');
SELECT results_eq($$ SELECT input->>'resource_id', input->>'actor', requested_by FROM agent.runs WHERE trigger_id = 4215 $$,
                  $$ VALUES ('public.events_tickets', 'user:carol', 'user:carol') $$,
                  'resource_id is the qualified table, the writer''s actor is passed through');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4213 AND input->'payload'->>'table' = 'public.events_tickets'),
          1::bigint, 'a [[agent:ID]] token in a mention column wakes that agent''s mention trigger');
SELECT is((SELECT input->'payload'->'columns' FROM agent.runs WHERE trigger_id = 4213 AND input->'payload'->>'table' = 'public.events_tickets'),
          '["body"]'::jsonb, 'the mention payload names the column');

UPDATE events_tickets SET priority = priority WHERE id = 1;
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4216), 0::bigint, 'an update that changes nothing emits nothing');
UPDATE events_tickets SET priority = 'urgent', body = replace(body, 'cc', 'cc:') || ' and [[fdagent:4205]]' WHERE id = 1;
SELECT is((SELECT input->'payload'->'changed' FROM agent.runs WHERE trigger_id = 4216), '["priority", "body"]'::jsonb,
          'property_updated lists the changed columns');
SELECT is((SELECT input->'payload'->'old'->>'priority' FROM agent.runs WHERE trigger_id = 4216), 'high',
          'property_updated carries the old row');
SELECT is((SELECT input->'payload'->'row'->>'priority' FROM agent.runs WHERE trigger_id = 4216), 'urgent',
          'and the new row');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4213), 2::bigint,
          'editing text around a mention already in the old row does not wake the agent again');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4214), 1::bigint, 'a newly added [[fdagent:ID]] mention does');
UPDATE events_tickets SET body = body || ' again [[agent:4200]]' WHERE id = 1;
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4213), 3::bigint,
          'writing the mention once more (one more token) wakes it');

DELETE FROM events_tickets WHERE id = 2;
SELECT is((SELECT ARRAY(SELECT jsonb_object_keys(input->'payload') ORDER BY 1) FROM agent.runs WHERE trigger_id = 4217),
          ARRAY['old', 'row', 'row_id', 'table'], 'row_removed payload: table, row_id, old (and row = the removed row)');
SELECT is((SELECT input->'payload'->'old'->>'title' FROM agent.runs WHERE trigger_id = 4217), 'Coffee', 'the removed row');
SELECT is((SELECT count(DISTINCT input->>'event_id') FROM agent.runs WHERE trigger_id IN (4215, 4216, 4217, 4213, 4214)),
          (SELECT count(*) FROM agent.runs WHERE trigger_id IN (4215, 4216, 4217, 4213, 4214)),
          'every row change has its own event_id');
UPDATE events_tickets SET title = 'x' WHERE id = 1;
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4216), 3::bigint, 'a further update is a new event (not deduped)');

ALTER TABLE events_tickets ADD COLUMN team text DEFAULT 'ops';
UPDATE events_tickets SET title = 'y' WHERE id = 1;
SELECT is((SELECT input->'payload'->'row'->>'team' FROM agent.runs WHERE trigger_id = 4216 ORDER BY id DESC LIMIT 1), 'ops',
          'after ALTER TABLE the watcher sees the new column');
SELECT agent.unwatch_table('events_tickets');
INSERT INTO events_tickets (title, priority) VALUES ('after unwatch', 'high');
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4215), 1::bigint, 'unwatched: no more events');

-- ---------------------------------------------------------------- the application's role
CREATE ROLE events_app_role IN ROLE agents_app;   -- fire_event is agents_app's, not PUBLIC's
GRANT INSERT, SELECT ON events_tickets TO events_app_role;
GRANT USAGE ON SEQUENCE events_tickets_id_seq TO events_app_role;
SELECT agent.watch_table('events_tickets', 'collection', 'id', ARRAY['body']);
SET LOCAL ROLE events_app_role;
SELECT is((SELECT count(*) FROM agent.fire_event('events.t.dedup', 'collection', 'x', '{}', NULL, 'role-1')), 1::bigint,
          'an application role (agents_app, no rights on agent.runs) fires an event: the run is made');
INSERT INTO events_tickets (title, priority) VALUES ('from the app role', 'high');
SELECT is(current_user::text, 'events_app_role', 'and the caller''s identity is restored afterwards');
RESET ROLE;
SELECT is((SELECT count(*) FROM agent.runs WHERE trigger_id = 4215 AND input->'payload'->'row'->>'title' = 'from the app role'),
          1::bigint, 'its write to a watched table makes a run too');
SELECT agent.unwatch_table('events_tickets');

-- ---------------------------------------------------------------- priority, errors
CREATE TEMP TABLE manual_run AS SELECT agent._enqueue_run(4205, 'manual', 'chat') AS id;
SELECT is((SELECT priority::int FROM agent.runs WHERE id = (SELECT id FROM manual_run)), 10,
          'manual runs are queued with a higher priority than autonomous ones');
SELECT throws_ok($$ SELECT agent.fire_event(NULL, 'collection', 'x') $$, '22023', 'event_name must not be empty',
                 'fire_event refuses a missing event name');
SELECT throws_ok($$ SELECT agent.fire_event('e', 'collection', 'x', '[1]') $$, '22023', 'event payload must be a JSON object',
                 'fire_event refuses a payload that is not an object');

SELECT * FROM finish();
ROLLBACK;
