-- agent.explain_access: the reason and detail of every kind of decision.
\set SHOW_CONTEXT never
BEGIN;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7400001, 'ws-explain', 'olga', 'Reporter'),
  (7400002, 'ws-explain', 'olga', 'Sleeper'),
  (7400003, 'ws-explain', 'olga', 'Gone');
UPDATE agent.agents SET status = 'suspended' WHERE id = 7400002;
UPDATE agent.agents SET deleted_at = now() WHERE id = 7400003;
SELECT agent.grant(7400001, 'page', 'roadmap', 'edit');
SELECT agent.grant(7400001, 'page', 'minutes', 'read');
SELECT agent.grant(7400001, 'collection', 'tickets', 'read');
SELECT agent.grant(7400001, 'workspace_shared', '*', 'read');
INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws-explain', 'product', 'olga');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-explain', 'page', 'roadmap', 'user:olga', 'edit'),
  ('ws-explain', 'page', 'minutes', 'group:product', 'edit'),
  ('ws-explain', 'page', 'handbook', 'workspace', 'read'),
  ('ws-explain', 'page', 'salaries', 'user:hr', 'edit'),
  ('ws-explain', 'page', 'secret', 'user:bob', 'read');

-- autonomous runs: grants intersected with the owner's ACL
SELECT * FROM agent.explain_access(7400001, 'page', 'roadmap', 'edit');
SELECT * FROM agent.explain_access(7400001, 'page', 'roadmap');
SELECT * FROM agent.explain_access(7400001, 'page', 'minutes', 'read');
SELECT * FROM agent.explain_access(7400001, 'page', 'minutes', 'edit');
SELECT * FROM agent.explain_access(7400001, 'collection', 'tickets');
SELECT * FROM agent.explain_access(7400001, 'page', 'handbook');
SELECT * FROM agent.explain_access(7400001, 'page', 'handbook', 'edit');
SELECT * FROM agent.explain_access(7400001, 'page', 'salaries');
-- manual runs: the user's own ACL
SELECT * FROM agent.explain_access(7400001, 'page', 'secret', 'read', 'manual', 'bob');
SELECT * FROM agent.explain_access(7400001, 'page', 'secret', 'edit', 'manual', 'bob');
SELECT * FROM agent.explain_access(7400001, 'page', 'roadmap', 'read', 'manual', 'bob');
-- the agent itself
SELECT * FROM agent.explain_access(7400002, 'page', 'roadmap');
SELECT * FROM agent.explain_access(7400002, 'page', 'secret', 'read', 'manual', 'bob');
SELECT * FROM agent.explain_access(7400003, 'page', 'roadmap');
SELECT * FROM agent.explain_access(7499999, 'page', 'roadmap');
-- bad arguments: a row here (can_access raises, see access_errors)
SELECT * FROM agent.explain_access(7400001, 'page', 'roadmap', 'write');
SELECT * FROM agent.explain_access(7400001, 'page', 'roadmap', 'read', 'scheduled');
SELECT * FROM agent.explain_access(7400001, 'page', 'roadmap', 'read', 'manual');
-- can_access in a WHERE clause
SELECT r AS readable FROM unnest(ARRAY['roadmap', 'minutes', 'handbook', 'salaries', 'secret']) r
WHERE agent.can_access(7400001, 'page', r) ORDER BY r;
ROLLBACK;
