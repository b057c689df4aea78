-- events: the filter evaluator (every operator) and filter validation errors.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET client_min_messages = warning;

-- every operator, each with a matching and a non-matching case
WITH p(payload) AS (
  SELECT '{"table": "public.tickets", "row_id": "17",
           "row": {"priority": "high", "title": "Server DOWN in eu-west", "points": 8,
                   "labels": ["ops", "urgent"], "done": false, "owner": null, "notes": "",
                   "meta": {}, "due": "2026-05-01"},
           "old": {"priority": "low"}, "changed": ["priority", "points"],
           "priority": "shadowed", "source": "api"}'::jsonb)
SELECT c.op, c.value, c.expected,
       agent.filter_matches(jsonb_build_object('all', jsonb_build_array(
           jsonb_strip_nulls(jsonb_build_object('property', c.prop, 'op', c.op, 'value', c.value)))), p.payload) AS got
FROM p, (VALUES
  ('eq',           'priority', '"high"'::jsonb,        true),
  ('eq',           'priority', '"High"',               false),
  ('eq',           'points',   '8',                    true),
  ('eq',           'points',   '"8"',                  true),
  ('eq',           'done',     'false',                true),
  ('eq',           'source',   '"api"',                true),   -- top level when not in row
  ('eq',           'missing',  '"x"',                  false),
  ('neq',          'priority', '"low"',                true),
  ('neq',          'priority', '"high"',               false),
  ('neq',          'missing',  '"x"',                  true),
  ('contains',     'title',    '"down"',               true),
  ('contains',     'title',    '"up"',                 false),
  ('contains',     'labels',   '"urgent"',             true),
  ('contains',     'labels',   '"later"',              false),
  ('not_contains', 'title',    '"outage"',             true),
  ('not_contains', 'labels',   '"ops"',                false),
  ('gt',           'points',   '5',                    true),
  ('gt',           'points',   '8',                    false),
  ('gte',          'points',   '8',                    true),
  ('gte',          'points',   '9',                    false),
  ('lt',           'points',   '10',                   true),
  ('lt',           'points',   '"7"',                  false),
  ('lte',          'points',   '8',                    true),
  ('lte',          'due',      '"2026-04-30"',         false),
  ('gt',           'due',      '"2026-04-30"',         true),
  ('gt',           'title',    '5',                    false),
  ('in',           'priority', '["high", "urgent"]',   true),
  ('in',           'priority', '["low"]',              false),
  ('in',           'labels',   '["ops"]',              true),
  ('is_empty',     'owner',    NULL,                   true),
  ('is_empty',     'notes',    NULL,                   true),
  ('is_empty',     'meta',     NULL,                   true),
  ('is_empty',     'missing',  NULL,                   true),
  ('is_empty',     'priority', NULL,                   false),
  ('is_not_empty', 'labels',   NULL,                   true),
  ('is_not_empty', 'owner',    NULL,                   false),
  ('changed',      'priority', NULL,                   true),
  ('changed',      'title',    NULL,                   false),
  ('changed_to',   'priority', '"high"',               true),
  ('changed_to',   'priority', '"low"',                false),
  ('changed_to',   'title',    '"Server DOWN in eu-west"', false)
) AS c(op, prop, value, expected)
ORDER BY c.op, c.expected DESC, c.value::text;

-- all / any / keywords / view, combined
CREATE TABLE events_ft_tickets (id int PRIMARY KEY, vip boolean);
INSERT INTO events_ft_tickets VALUES (17, true), (18, false);
CREATE VIEW events_ft_vip AS SELECT id FROM events_ft_tickets WHERE vip;
SELECT label, agent.filter_matches(f::jsonb, p::jsonb) AS got FROM (VALUES
  ('empty filter',          '{}',  '{"row": {"a": 1}}'),
  ('null filter',           NULL,  '{"row": {"a": 1}}'),
  ('all: both true',        '{"all": [{"property": "a", "op": "eq", "value": 1}, {"property": "b", "op": "eq", "value": 2}]}', '{"row": {"a": 1, "b": 2}}'),
  ('all: one false',        '{"all": [{"property": "a", "op": "eq", "value": 1}, {"property": "b", "op": "eq", "value": 3}]}', '{"row": {"a": 1, "b": 2}}'),
  ('any: one true',         '{"any": [{"property": "a", "op": "eq", "value": 9}, {"property": "b", "op": "eq", "value": 2}]}', '{"row": {"a": 1, "b": 2}}'),
  ('any: none true',        '{"any": [{"property": "a", "op": "eq", "value": 9}, {"property": "b", "op": "eq", "value": 9}]}', '{"row": {"a": 1, "b": 2}}'),
  ('any: empty list',       '{"any": []}', '{"row": {"a": 1}}'),
  ('keywords: whole word',  '{"keywords": ["outage"]}', '{"row": {"title": "Big OUTAGE today"}}'),
  ('keywords: part of word','{"keywords": ["outage"]}', '{"row": {"title": "outages are bad"}}'),
  ('keywords: nested text', '{"keywords": ["refund", "Chargeback"]}', '{"row": {"meta": {"tags": ["chargeback"]}}}'),
  ('keywords: phrase',      '{"keywords": ["server down"]}', '{"row": {"t": "the Server down, again"}}'),
  ('keywords: not in keys', '{"keywords": ["title"]}', '{"row": {"title": "x"}}'),
  ('keywords: payload',     '{"keywords": ["late"]}', '{"summary": "the delivery is late"}'),
  ('view: member',          '{"view": "public.events_ft_vip"}', '{"row_id": "17"}'),
  ('view: numeric row_id',  '{"view": "events_ft_vip"}', '{"row_id": 17}'),
  ('view: not member',      '{"view": "public.events_ft_vip"}', '{"row_id": "18"}'),
  ('view: no row_id',       '{"view": "public.events_ft_vip"}', '{"row": {"id": 17}}'),
  ('all + keywords + view', '{"all": [{"property": "p", "op": "eq", "value": "high"}], "keywords": ["vip"], "view": "public.events_ft_vip"}', '{"row_id": "17", "row": {"p": "high", "t": "a VIP customer"}}'),
  ('all ok, keyword fails', '{"all": [{"property": "p", "op": "eq", "value": "high"}], "keywords": ["vip"]}', '{"row": {"p": "high", "t": "vipers"}}')
) AS t(label, f, p);

-- validation: valid filters pass
SELECT agent.validate_filter('{}');
SELECT agent.validate_filter('{"all": [{"property": "priority", "op": "eq", "value": "high"}], "any": [{"property": "x", "op": "changed"}], "keywords": ["outage"], "view": "public.events_ft_vip"}');

-- validation: each error names the bad part
SELECT agent.validate_filter(NULL);
SELECT agent.validate_filter('[]');
SELECT agent.validate_filter('{"where": []}');
SELECT agent.validate_filter('{"all": {"property": "a"}}');
SELECT agent.validate_filter('{"all": ["priority"]}');
SELECT agent.validate_filter('{"all": [{"property": "priority", "op": "equals", "value": "high"}]}');
SELECT agent.validate_filter('{"any": [{"property": "a", "op": "eq", "value": 1}, {"property": "b", "op": "like", "value": 1}]}');
SELECT agent.validate_filter('{"all": [{"op": "eq", "value": 1}]}');
SELECT agent.validate_filter('{"all": [{"property": "", "op": "eq", "value": 1}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "value": 1}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "op": 3, "value": 1}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "op": "eq", "value": 1, "case": "insensitive"}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "op": "eq"}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "op": "is_empty", "value": 1}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "op": "in", "value": "high"}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "op": "gt", "value": [1]}]}');
SELECT agent.validate_filter('{"all": [{"property": "a", "op": "contains", "value": null}]}');
SELECT agent.validate_filter('{"keywords": "outage"}');
SELECT agent.validate_filter('{"keywords": ["ok", ""]}');
SELECT agent.validate_filter('{"view": 12}');
SELECT agent.validate_filter('{"view": "public.no_such_view"}');
SELECT agent.validate_filter('{"view": "a.b.c.d"}');
SELECT agent.validate_filter('{"view": "pg_catalog.pg_am"}');

-- a trigger with an invalid filter or definition is refused when saved
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (4100, 'w-events-ft', 'u1', 'filter test agent');
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, filter)
VALUES (4100, 'event', 'collection.row_added', 'collection', '{"all": [{"property": "priority", "op": "equals", "value": "high"}]}');
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type) VALUES (4100, 'event', NULL, 'collection');
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type) VALUES (4100, 'event', 'bad name!', 'collection');
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, filter)
VALUES (4100, 'event', 'collection.row_added', 'collection', '{"all": [{"property": "priority", "op": "eq", "value": "high"}]}')
RETURNING kind, event_name, filter;
UPDATE agent.triggers SET filter = '{"any": [{"property": "x", "op": "between", "value": [1, 2]}]}' WHERE agent_id = 4100;
SELECT count(*) FROM agent.triggers WHERE agent_id = 4100;

-- every event belongs to a workspace: this superuser session sets none, so
-- its event belongs to no workspace, wakes nobody and is counted
SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.events_ft_tickets', '{}');
SELECT agent.watch_table('events_ft_tickets', 'collection', 'id', NULL, 'no_such_column');

-- a filter view that fails: the event does not match, the trigger says why
CREATE FUNCTION events_ft_boom() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no, not today'; END $$;
CREATE VIEW events_ft_boom_view AS SELECT '1'::text AS id WHERE events_ft_boom();
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter)
VALUES (4150, 4100, 'event', 'ft.boom', 'thing', '{"view": "public.events_ft_boom_view"}');
SET pg_agents.workspace = 'w-events-ft';
SELECT count(*) FROM agent.fire_event('ft.boom', 'thing', 'x', '{"row_id": "1"}');
RESET pg_agents.workspace;
SELECT last_status, last_error, saved_by = current_user::regrole AS saved_by_me
FROM agent.triggers WHERE agent_id = 4100 AND event_name = 'ft.boom';

-- a view the saving role may not read is refused (the application's role,
-- not the owner of the function that saves)
CREATE ROLE events_ft_app IN ROLE agents_app;
REVOKE ALL ON events_ft_boom_view FROM PUBLIC;
SET ROLE events_ft_app;
SELECT agent.validate_filter('{"view": "public.events_ft_boom_view"}');
RESET ROLE;
DROP ROLE events_ft_app;
DROP VIEW events_ft_boom_view;
DROP FUNCTION events_ft_boom();

DELETE FROM agent.agents WHERE id = 4100;
DROP VIEW events_ft_vip;
DROP TABLE events_ft_tickets;
