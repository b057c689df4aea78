-- Overlapping triggers (issue 18): the overlap stated by agent.trigger_overlaps,
-- a WARNING when an overlapping trigger is saved (directly or through
-- agent.set_trigger), none for filters that exclude each other; an
-- automation and a trigger launching the same event make one run.
BEGIN;
SET LOCAL pg_agents.workspace = 'ws-ovl';
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (4180001, 'ws-ovl', 'ovl-owner', 'watcher'), (4180002, 'ws-ovl', 'ovl-owner', 'other');
-- page.updated on any page, then on page p1: they overlap
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES (4180101, 4180001, 'event', 'page.updated', 'page');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, resource_id)
  VALUES (4180102, 4180001, 'event', 'page.updated', 'page', 'p1');
-- another agent's trigger, another resource type, another event: no overlap
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES (4180201, 4180002, 'event', 'page.updated', 'page');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES (4180103, 4180001, 'event', 'page.updated', 'collection');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES (4180104, 4180001, 'event', 'page.created', 'page');
-- filters that exclude each other: no warning (open/closed, open/empty, closed/[open, new]);
-- a list that contains the value, or a filter the analysis cannot judge: a warning
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4180105, 4180001, 'event', 'task.updated', 'task', '{"all": [{"property": "status", "op": "eq", "value": "open"}]}');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4180106, 4180001, 'event', 'task.updated', 'task', '{"all": [{"property": "status", "op": "eq", "value": "closed"}]}');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4180107, 4180001, 'event', 'task.updated', 'task', '{"all": [{"property": "status", "op": "is_empty"}]}');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4180111, 4180001, 'event', 'task.updated', 'task', '{"keywords": ["urgent"]}');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4180108, 4180001, 'event', 'task.updated', 'task', '{"any": [{"property": "status", "op": "in", "value": ["open", "new"]}]}');
-- two mention triggers overlap on agent.mentioned; a disabled trigger never warns
INSERT INTO agent.triggers (id, agent_id, kind, resource_type) VALUES (4180109, 4180001, 'mention', 'page');
INSERT INTO agent.triggers (id, agent_id, kind, resource_type, enabled) VALUES (4180110, 4180001, 'mention', NULL, false);
UPDATE agent.triggers SET enabled = true WHERE id = 4180110;
SELECT * FROM agent.trigger_overlaps(4180001);
-- many overlapping triggers saved at once: at most three named per trigger,
-- then one warning that there are more (a bulk insert stays linear)
SAVEPOINT many;
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type)
  SELECT 4180201 + i, 4180002, 'event', 'page.updated', 'page' FROM generate_series(1, 5) i;
SELECT count(*) AS overlaps FROM agent.trigger_overlaps(4180002);
ROLLBACK TO many;
-- agent.set_trigger warns too
SELECT agent.set_trigger(4180001, '{"id": 4180106, "kind": "event", "event_name": "task.updated", "resource_type": "task", "filter": {"all": [{"property": "status", "op": "neq", "value": "open"}]}}', 'ovl-owner') > 0 AS saved;
SELECT trigger_id, other_trigger_id FROM agent.trigger_overlaps(4180001) WHERE 4180106 IN (trigger_id, other_trigger_id);
SELECT * FROM agent.trigger_overlaps(4180002);
SAVEPOINT unknown;
SELECT * FROM agent.trigger_overlaps(4189999);
ROLLBACK TO unknown;

-- an automation and a trigger on the same event: one run
DELETE FROM agent.triggers WHERE agent_id IN (4180001, 4180002) AND id <> 4180101;
SELECT count(*) AS runs FROM agent.fire_event('page.updated', 'page', 'p9', '{"row_id": "p9", "title": "Nine"}', NULL, 'evt-9');
SET LOCAL client_min_messages = warning;  -- the NOTICE names a run id
SELECT count(*) AS runs FROM agent.fire_event('page.updated', 'page', 'p9', '{"row_id": "p9", "from": "flow"}', automation => 'flow-7');
SELECT count(*) AS runs FROM agent.fire_event('page.updated', 'page', 'p8', '{"row_id": "p8"}', automation => 'flow-7');
SELECT count(*) AS runs FROM agent.fire_event('page.updated', 'page', 'p8', '{"row_id": "p8", "again": true}', NULL, 'evt-8');
-- the same automation again is a new launch (like a second event without label)
SELECT count(*) AS runs FROM agent.fire_event('page.updated', 'page', 'p8', '{"row_id": "p8", "third": true}', NULL, NULL, 'flow-7');
-- the old six-argument calls, positional and named
SELECT count(*) AS runs FROM agent.fire_event('page.updated', 'page', 'p7', '{"row_id": "p7"}', NULL, 'evt-7');
SELECT count(*) AS runs FROM agent.fire_event(event_name => 'page.updated', resource_type => 'page', resource_id => 'p6', event_id => 'evt-6');
RESET client_min_messages;
SELECT input ->> 'resource_id' AS resource, input ->> 'automation' AS automation, input -> 'also_started_by' AS also_started_by
  FROM agent.runs WHERE agent_id = 4180001 ORDER BY id;
SELECT trigger_id, automation, deduplicated, last_event, last_resource_id,
       last_run_id = (SELECT min(id) FROM agent.runs WHERE agent_id = 4180001 AND input ->> 'resource_id' = 'p8') AS last_run_is_kept_run
  FROM agent.event_overlaps WHERE agent_id = 4180001;
SELECT trigger_id, other_trigger_id, automation, event_name, deduplicated, overlap FROM agent.trigger_overlaps(4180001);
SAVEPOINT long;
SELECT count(*) AS runs FROM agent.fire_event('page.updated', 'page', 'p8', '{}', NULL, NULL, repeat('x', 201));
ROLLBACK TO long;
-- an agent of another workspace is unknown
SET LOCAL pg_agents.workspace = 'ws-ovl-other';
SAVEPOINT other;
SELECT * FROM agent.trigger_overlaps(4180001);
ROLLBACK TO other;
ROLLBACK;
