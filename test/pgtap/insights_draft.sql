-- Assisted creation: a draft proposes only what a search found and the user
-- can read (T-12); nothing is saved before create_from_draft; templates.
-- The worker is simulated: the draft run's steps and answer are recorded as
-- the worker records them (search_resources: kind tool, output.results).
BEGIN;
SELECT plan(41);

INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-dr', 'collection', 'c-support', 'user:dru', 'edit'),
  ('ws-dr', 'collection', 'c-ro', 'user:dru', 'read'),
  ('ws-dr', 'collection', 'c-secret', 'user:boss', 'read');

SELECT agent.generate_draft('Triage the tickets of the Support collection every morning', 'dru', 'ws-dr') AS run \gset
SELECT is((SELECT row(origin, regime, requested_by, status)::text FROM agent.runs WHERE id = :run),
          '(draft,manual,dru,queued)', 'a draft is a queued manual run acting as the user');
SELECT is((SELECT a.owner_id FROM agent.runs r JOIN agent.agents a ON a.id = r.agent_id WHERE r.id = :run),
          'pg_agents:assistant', 'run by the workspace''s hidden assistant');
SELECT is((SELECT count(*) FROM agent.visible_agents('dru')), 0::bigint, 'the assistant is listed nowhere');
SELECT agent.generate_draft('again', 'dru', 'ws-dr') AS run_again \gset
SELECT is((SELECT agent_id FROM agent.runs WHERE id = :run_again), (SELECT agent_id FROM agent.runs WHERE id = :run),
          'one assistant per workspace');
SELECT is(agent.draft(:run) ->> 'ready', 'false', 'not ready while queued');
SELECT is(agent.draft(:run) ->> 'status', 'queued', 'status reported');

-- the worker: searches as the user, then answers with a JSON draft that
-- also proposes things no search found or the user cannot read
UPDATE agent.runs SET status = 'running', started_at = now() WHERE id = :run;
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status) VALUES
  (:run, 1, 'tool', 'search_resources', '{"query": "support"}',
   '{"results": [{"resource_type": "collection", "resource_id": "c-support"}]}', 'ok'),
  (:run, 2, 'tool', 'search_resources', '{"query": "read only"}',
   '{"results": [{"resource_type": "collection", "resource_id": "c-ro"},
                 {"resource_type": "collection", "resource_id": "c-secret"}]}', 'ok'),
  (:run, 3, 'error', 'search_resources', '{"query": "x"}',
   '{"error": "boom", "results": [{"resource_type": "collection", "resource_id": "c-err"}]}', 'error');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-dr', 'collection', 'c-err', 'user:dru', 'read');
SELECT agent.finish_run(:run, 'succeeded', jsonb_build_object('text', $j$Here is the draft:
```json
{"name": "Support triage",
 "instructions": "Triage new tickets.",
 "triggers": [{"kind": "schedule", "schedule": "0 8 * * *", "timezone": "Europe/Paris", "prompt": "triage"},
              {"kind": "schedule", "schedule": "0 25 * * *"},
              {"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": "c-support", "enabled": true},
              {"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": "c-ghost"},
              {"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "filter": {"all": [{"property": "x", "op": "bogus"}]}}],
 "access": [{"resource_type": "collection", "resource_id": "c-support", "access": "edit"},
            {"resource_type": "collection", "resource_id": "c-ro", "access": "edit"},
            {"resource_type": "collection", "resource_id": "c-secret", "access": "read"},
            {"resource_type": "collection", "resource_id": "c-ghost", "access": "read"},
            {"resource_type": "collection", "resource_id": "c-err", "access": "read"},
            {"resource_type": "workspace_shared", "resource_id": "*"},
            {"resource_type": "collection", "resource_id": "c-support", "access": "edit"}]}
```$j$));

SELECT agent.draft(:run, 'dru') AS d \gset
SELECT is((:'d'::jsonb) ->> 'ready', 'true', 'ready once the run succeeded');
SELECT is((:'d'::jsonb) -> 'draft' -> 'access',
          '[{"access": "edit", "resource_id": "c-support", "resource_type": "collection"},
            {"access": "read", "resource_id": "c-ro", "resource_type": "collection"}]'::jsonb,
          'proposed access: exactly what a search found and the user can read (edit kept only where the user may edit)');
SELECT is((SELECT jsonb_object_agg(e ->> 'resource_id', e ->> 'reason') FROM jsonb_array_elements((:'d'::jsonb) -> 'dropped') e
            WHERE e ->> 'kind' = 'access'),
          '{"c-secret": "not_readable", "c-ghost": "not_found_by_search", "c-err": "not_found_by_search", "*": "invalid_resource_type"}'::jsonb,
          'every other proposal dropped, with its reason');
SELECT is((:'d'::jsonb) -> 'downgraded' -> 0 ->> 'resource_id', 'c-ro', 'edit downgraded to read is reported');
SELECT is(jsonb_array_length((:'d'::jsonb) -> 'draft' -> 'triggers'), 2, 'valid triggers kept');
SELECT ok(NOT EXISTS (SELECT 1 FROM jsonb_array_elements((:'d'::jsonb) -> 'draft' -> 'triggers') t WHERE (t ->> 'enabled')::boolean),
          'every proposed trigger disabled');
SELECT is((SELECT array_agg(e ->> 'index' ORDER BY (e ->> 'index')::int) FROM jsonb_array_elements((:'d'::jsonb) -> 'dropped') e
            WHERE e ->> 'kind' = 'trigger'), ARRAY['2', '4', '5'], 'bad cron, unknown resource and bad filter dropped');
SELECT is((:'d'::jsonb) -> 'draft' ->> 'name', 'Support triage', 'name from the model');
SELECT is((:'d'::jsonb) -> 'draft' ->> 'workspace_id', 'ws-dr', 'workspace of the run');
SELECT is((SELECT string_agg(summary, '; ' ORDER BY seq) FROM agent.run_detail(:run, 'dru')),
          'searched "support": 1 result(s); searched "read only": 2 result(s); error in search_resources: boom',
          'the requester sees the steps of the draft run');
SELECT is_empty(format('SELECT * FROM agent.run_detail(%s, %L)', :run, 'intruder'), 'nobody else does');
SELECT throws_ok(format('SELECT agent.draft(%s, %L)', :run, 'intruder'), '42704', format('draft run %s does not exist', :run),
                 'another user''s draft looks like no draft');

-- nothing saved before create_from_draft
SELECT is((SELECT count(*) FROM agent.agents WHERE owner_id = 'dru'), 0::bigint, 'no agent saved by drafting');
SELECT is((SELECT count(*) FROM agent.access g JOIN agent.agents a ON a.id = g.agent_id WHERE a.workspace_id = 'ws-dr'),
          0::bigint, 'no grant saved by drafting');
SELECT is((SELECT count(*) FROM agent.triggers t WHERE t.workspace_id = 'ws-dr'), 0::bigint, 'no trigger saved by drafting');

SELECT agent.create_from_draft((:'d'::jsonb) -> 'draft', 'dru') AS aid \gset
SELECT is((SELECT owner_id || '/' || name FROM agent.agents WHERE id = :aid), 'dru/Support triage', 'created, owned by the user');
SELECT set_eq(format('SELECT resource_id, access FROM agent.access WHERE agent_id = %s', :aid),
              $$VALUES ('c-support', 'edit'), ('c-ro', 'read')$$, 'grants = the filtered proposal');
SELECT is((SELECT count(*) FROM agent.triggers WHERE agent_id = :aid), 2::bigint, 'triggers created');
SELECT is((SELECT count(*) FROM agent.triggers WHERE agent_id = :aid AND enabled), 0::bigint, 'and none active');
SELECT is((SELECT note FROM agent.versions WHERE agent_id = :aid), 'created from draft', 'version 1 written');
SELECT is((SELECT jsonb_array_length(snapshot -> 'triggers') FROM agent.versions WHERE agent_id = :aid), 2,
          'version 1 records the triggers');

-- T-12: a description naming something unknown gives an empty proposal, even when the model proposes it
SELECT agent.generate_draft('Summarize the Finance collection', 'dru', 'ws-dr') AS run2 \gset
UPDATE agent.runs SET status = 'running' WHERE id = :run2;
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status) VALUES
  (:run2, 1, 'tool', 'search_resources', '{"query": "finance"}', '{"results": []}', 'ok');
SELECT agent.finish_run(:run2, 'succeeded',
  '{"text": "{\"name\": \"Finance\", \"instructions\": \"x\", \"triggers\": [], \"access\": [{\"resource_type\": \"collection\", \"resource_id\": \"c-finance\", \"access\": \"read\"}]}"}');
SELECT is(agent.draft(:run2) -> 'draft' -> 'access', '[]'::jsonb, 'unknown resource: empty proposal');
SELECT is(agent.draft(:run2) -> 'dropped' -> 0 ->> 'reason', 'not_found_by_search', 'the guess is reported as dropped');

-- an answer that is not a draft
SELECT agent.generate_draft('anything', 'dru', 'ws-dr') AS run3 \gset
UPDATE agent.runs SET status = 'running' WHERE id = :run3;
SELECT agent.finish_run(:run3, 'succeeded', '{"text": "Sorry, I cannot help."}');
SELECT is(agent.draft(:run3) ->> 'error', 'the model''s answer is not a JSON draft', 'no JSON: not ready, said so');

-- create_from_draft validates again
SELECT throws_ok($$SELECT agent.create_from_draft('[]', 'dru')$$, '22023', 'invalid draft: a draft must be a JSON object', 'not an object');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-dr", "colour": "red"}', 'dru')$$, '22023',
                 'invalid draft: unknown key "colour"', 'unknown key');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": " ", "workspace_id": "ws-dr"}', 'dru')$$, '22023',
                 'invalid draft: name must be a string of 1 to 200 characters', 'empty name');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-dr", "triggers": [{"kind": "schedule", "schedule": "61 * * * *"}]}', 'dru')$$,
                 '22023', 'invalid draft: trigger 1: invalid schedule "61 * * * *"', 'bad cron');
SELECT throws_like($$SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-dr", "triggers": [{"kind": "event", "event_name": "e", "resource_type": "collection", "filter": {"any": 3}}]}', 'dru')$$,
                   'invalid draft: trigger 1: invalid filter%', 'bad filter');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-dr", "access": [{"resource_type": "collection", "resource_id": "c-secret"}]}', 'dru')$$,
                 '42501', 'invalid draft: access 1: user "dru" cannot read collection "c-secret"', 'unreadable grant');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-dr", "access": [{"resource_type": "collection", "resource_id": "c-ro", "access": "edit"}]}', 'dru')$$,
                 '42501', 'invalid draft: access 1: user "dru" cannot edit collection "c-ro"', 'edit without the user''s edit right');
SELECT throws_ok($$SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-dr", "access": [{"resource_type": "table", "resource_id": "t"}]}', 'dru')$$,
                 '22023', 'invalid resource type "table"', 'bad resource type');
SELECT is((SELECT count(*) FROM agent.agents WHERE owner_id = 'dru'), 1::bigint, 'a refused draft saves nothing');

-- the gallery: six templates, each a valid agent with every trigger disabled
SELECT is((SELECT count(*) FROM agent.templates), 6::bigint, 'six templates');
SELECT is_empty($$SELECT t.key FROM agent.templates t
                   CROSS JOIN LATERAL agent.create_from_draft(t.draft || '{"workspace_id": "ws-dr"}', 'tpl-user') AS c(aid)
                   JOIN agent.agents a ON a.id = c.aid
                  WHERE a.name <> t.name
                     OR (SELECT count(*) FROM agent.triggers x WHERE x.agent_id = c.aid) <> jsonb_array_length(t.draft -> 'triggers')
                     OR (SELECT count(*) FROM agent.triggers x WHERE x.agent_id = c.aid AND x.enabled) <> 0
                     OR (SELECT count(*) FROM agent.triggers x WHERE x.agent_id = c.aid) = 0
                     OR EXISTS (SELECT 1 FROM agent.access g WHERE g.agent_id = c.aid)
                     OR (SELECT v.note FROM agent.versions v WHERE v.agent_id = c.aid) <> 'created from template ' || t.key$$,
                'every template creates its agent with its triggers, all disabled, and no access');
SELECT * FROM finish();
ROLLBACK;
