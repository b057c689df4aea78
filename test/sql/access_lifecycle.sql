-- Lifecycle: create, save (versions with automatic notes), restore, duplicate
-- with its report, status and deletion.  Ids made by sequences are not
-- printed (other tests share the database): \gset keeps them.
\set SHOW_CONTEXT never
BEGIN;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-life', 'page', 'plan', 'user:lena', 'edit'),
  ('ws-life', 'page', 'plan', 'user:dan', 'read'),
  ('ws-life', 'page', 'budget', 'user:lena', 'edit'),
  ('ws-life', 'page', 'notes', 'user:lena', 'edit'),
  ('ws-life', 'page', 'notes', 'group:team', 'edit'),
  ('ws-life', 'collection', 'tickets', 'user:lena', 'edit'),
  ('ws-life', 'collection', 'tickets', 'workspace', 'read'),
  ('ws-life', 'collection', 'payroll', 'user:lena', 'read'),
  ('ws-life', 'page', 'howto', 'user:lena', 'read'),
  ('ws-life', 'skill', 'summarize', 'workspace', 'read');
INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws-life', 'team', 'dan');

-- create: version 1 holds the initial settings and grants
SELECT agent.create_agent('ws-life', 'lena', 'Weekly digest',
  '{"instructions": "Summarise the week.", "model": "gpt-4o-mini",
    "access": [{"resource_type": "page", "resource_id": "plan", "access": "edit"},
               {"resource_type": "collection", "resource_id": "tickets"}]}') AS aid \gset
SELECT name, owner_id, instructions, model, approval_mode, status FROM agent.agents WHERE id = :aid;
SELECT resource_type, resource_id, access FROM agent.access WHERE agent_id = :aid ORDER BY 1, 2;
SELECT version, created_by, note, snapshot->'access' AS access FROM agent.versions WHERE agent_id = :aid ORDER BY version;
SELECT agent.user_can('lena', :aid, 'delete') AS owner_holds_full;

-- save: each save is a version whose note names the changed sections
SELECT agent.save_settings(:aid, '{"instructions": "Summarise the week in five bullets."}', 'lena') IS NOT NULL AS saved;
SELECT agent.save_settings(:aid, '{"model": "claude-3-5-haiku", "approval_mode": "all",
  "access": [{"resource_type": "page", "resource_id": "plan", "access": "read"},
             {"resource_type": "page", "resource_id": "budget", "access": "edit"}]}', 'lena', 'tighter') IS NOT NULL AS saved;
SELECT agent.save_settings(:aid, '{"web_access": true, "max_iterations": 5}', 'lena') IS NOT NULL AS saved;
SELECT agent.save_settings(:aid, '{"model": "claude-3-5-haiku"}', 'lena') IS NOT NULL AS saved;
SELECT version, created_by, note FROM agent.versions WHERE agent_id = :aid ORDER BY version;
SELECT resource_type, resource_id, access FROM agent.access WHERE agent_id = :aid ORDER BY 1, 2;

-- restore version 1: a new version (6), history kept, grants back
SELECT id AS v1 FROM agent.versions WHERE agent_id = :aid AND version = 1 \gset
SELECT agent.restore_version(:v1, 'lena') IS NOT NULL AS restored;
SELECT version, created_by, note FROM agent.versions WHERE agent_id = :aid ORDER BY version;
SELECT instructions, model, approval_mode, web_access, max_iterations FROM agent.agents WHERE id = :aid;
SELECT resource_type, resource_id, access FROM agent.access WHERE agent_id = :aid ORDER BY 1, 2;
SELECT (SELECT snapshot - 'triggers' FROM agent.versions WHERE agent_id = :aid AND version = 6)
     = (SELECT snapshot - 'triggers' FROM agent.versions WHERE agent_id = :aid AND version = 1) AS same_as_v1;

-- duplicate by dan (interact), who cannot read everything the agent can
SELECT agent.save_settings(:aid, '{"instruction_page_id": "howto", "scope": {"max_tokens": 800}, "hourly_run_cap": 3,
  "access": [{"resource_type": "page", "resource_id": "plan", "access": "edit"},
             {"resource_type": "page", "resource_id": "notes", "access": "edit"},
             {"resource_type": "collection", "resource_id": "tickets", "access": "edit"},
             {"resource_type": "collection", "resource_id": "payroll"},
             {"resource_type": "skill", "resource_id": "summarize"},
             {"resource_type": "workspace_shared", "resource_id": "*"}]}', 'lena') IS NOT NULL AS saved;
-- direct writes (each one a version: 8, 9, 10)
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, resource_id, prompt)
VALUES (:aid, 'event', 'collection.row_added', 'collection', 'tickets', 'Triage it')
RETURNING id AS t_ok \gset
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, resource_id, prompt)
VALUES (:aid, 'event', 'collection.row_added', 'collection', 'payroll', 'Check it')
RETURNING id AS t_hidden \gset
INSERT INTO agent.triggers (agent_id, kind, schedule, prompt) VALUES (:aid, 'schedule', '0 9 * * 1', 'Digest');
SELECT agent.share(:aid, 'user:dan', 'interact', 'lena');
SELECT agent_id AS copy, report FROM agent.duplicate(:aid, 'dan') \gset
SELECT (:'report'::jsonb ->> 'source_agent_id')::bigint = :aid AS source_ok,
       :'report'::jsonb ->> 'source_version' AS source_version;
SELECT e - 'trigger_id' AS dropped, (e ->> 'trigger_id')::bigint = :t_hidden AS is_payroll_trigger
FROM jsonb_array_elements(:'report'::jsonb -> 'dropped') e;
SELECT e AS downgraded FROM jsonb_array_elements(:'report'::jsonb -> 'downgraded') e;
SELECT e AS copied_access FROM jsonb_array_elements(:'report'::jsonb -> 'copied' -> 'access') e;
SELECT (:'report'::jsonb -> 'copied' ->> 'instruction_page_id') AS copied_page,
       jsonb_array_length(:'report'::jsonb -> 'copied' -> 'triggers') AS copied_triggers,
       :'report'::jsonb -> 'not_copied' AS not_copied;
-- the copy itself: private, dan's, suffixed, instructions and model kept, limits and scope not
SELECT name, owner_id, instructions, model, scope, hourly_run_cap, instruction_page_id FROM agent.agents WHERE id = :copy;
SELECT resource_type, resource_id, access FROM agent.access WHERE agent_id = :copy ORDER BY 1, 2;
SELECT kind, event_name, resource_id, schedule, enabled FROM agent.triggers WHERE agent_id = :copy ORDER BY kind, resource_id;
SELECT count(*) AS shares_of_copy FROM agent.shares WHERE agent_id = :copy;
SELECT version, created_by, note ~ '^duplicated from agent [0-9]+ version 10$' AS note_ok FROM agent.versions WHERE agent_id = :copy;
SELECT agent.user_can('lena', :copy, 'chat') AS source_owner_sees_copy;
-- the copy gives dan's agent no access dan lacks
SELECT r, agent.can_access(:copy, t, r, 'edit') AS edit, agent.can_access(:copy, t, r) AS read
FROM (VALUES ('page', 'plan'), ('page', 'notes'), ('collection', 'tickets'), ('collection', 'payroll')) v(t, r);

-- status and deletion
SELECT agent.set_status(:aid, 'suspended', 'lena');
SELECT allowed, reason FROM agent.explain_access(:aid, 'page', 'plan');
SELECT agent.delete_agent(:aid, 'lena');
SELECT deleted_at IS NOT NULL AS deleted, (SELECT count(*) FROM agent.versions WHERE agent_id = :aid) AS versions_kept
FROM agent.agents WHERE id = :aid;
SELECT count(*) AS visible_to_lena FROM agent.visible_agents('lena') WHERE agent_id = :aid;
SELECT action, status, summary ~ '^lena|^dan|^agent' AS summary_ok
FROM agent.audit_log WHERE action LIKE 'agent.%' AND target_type = 'agent' AND target_id IN (:'aid', :'copy') ORDER BY id;
ROLLBACK;
