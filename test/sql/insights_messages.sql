-- Activity, insights and assisted creation: outputs and error messages.
\set VERBOSITY default
\set SHOW_CONTEXT never
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (881001, 'ws-im', 'imown', 'Messages agent');
\set aid 881001
SELECT agent.share(:aid, 'user:im-int', 'interact', 'imown');
INSERT INTO agent.triggers (agent_id, kind, schedule, timezone, prompt)
VALUES (:aid, 'schedule', '30 8 * * 1-5', 'Europe/Paris', 'standup') RETURNING id AS sched \gset
SELECT agent.start_run(:aid, 'im-int', '{"message": "hello"}') AS r1 \gset
SELECT agent._enqueue_run(:aid, 'autonomous', 'schedule', '{}', :sched, 'imown') AS r2 \gset
UPDATE agent.runs SET status = 'running', started_at = created_at WHERE id = :r2;
SELECT agent.finish_run(:r2, 'failed', NULL, 'the model endpoint answered HTTP 503');
SELECT agent.rerun(:r2, 'imown') AS r3 \gset

-- the activity of the owner, ids masked
SELECT regexp_replace(trigger_label, 'run [0-9]+', 'run N') AS trigger_label, origin, regime, run_status, error
  FROM agent.activity(:aid, 'imown') ORDER BY run_id;
-- interact: its own manual run only
SELECT trigger_label, requested_by, run_status FROM agent.activity(:aid, 'im-int');
-- no access: nothing, and the same for an agent that does not exist
SELECT count(*) FROM agent.activity(:aid, 'stranger');
SELECT count(*) FROM agent.activity(-1, 'stranger');

-- bad arguments
SELECT * FROM agent.activity(:aid, NULL);
SELECT * FROM agent.activity(:aid, 'imown', 'finished');
SELECT * FROM agent.activity(:aid, 'imown', lim => 0);
SELECT * FROM agent.activity(:aid, 'imown', since => now(), until => now() - interval '1 day');
SELECT * FROM agent.run_detail(NULL, 'imown');

-- insights: full only, the same refusal for an unknown agent
SELECT section, key, runs, succeeded, failed, failure_rate, tokens
  FROM agent.insights(:aid, 'imown') WHERE section IN ('total', 'status', 'origin');
SELECT * FROM agent.insights(:aid, 'im-int');
SELECT * FROM agent.insights(-1, 'im-int');
SELECT * FROM agent.insights(:aid, 'stranger');

-- assisted creation
SELECT agent.generate_draft('', 'imown', 'ws-im');
SELECT agent.generate_draft('a digest', NULL, 'ws-im');
SELECT agent.generate_draft('a digest', 'imown');
SELECT agent.draft(-1);
SELECT agent.create_from_draft('{"name": "x"}', 'imown');
SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-im", "triggers": {}}', 'imown');
SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-im", "triggers": [{"kind": "cron"}]}', 'imown');
SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-im", "triggers": [{"kind": "schedule", "schedule": "0 9 * * *", "timezone": "Mars/Olympus"}]}', 'imown');
SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-im", "triggers": [{"kind": "event", "resource_type": "collection"}]}', 'imown');
SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-im", "access": [{"resource_type": "page", "resource_id": "nope"}]}', 'imown');
SELECT agent.create_from_draft('{"name": "x", "workspace_id": "ws-im"}', '');

-- the gallery
SELECT key, name, jsonb_array_length(draft -> 'triggers') AS triggers,
       (SELECT string_agg(coalesce(t ->> 'event_name', t ->> 'schedule', t ->> 'kind'), ', ')
          FROM jsonb_array_elements(draft -> 'triggers') t) AS wakes_on
  FROM agent.templates ORDER BY position;

-- clean up
DELETE FROM agent.agents WHERE workspace_id = 'ws-im';
