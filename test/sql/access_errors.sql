-- Every error of the access API on bad input, with its SQLSTATE.
\set SHOW_CONTEXT never
\pset format unaligned
\pset tuples_only on
BEGIN;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7500001, 'ws-errors', 'erin', 'Target'), (7500002, 'ws-errors', 'erin', 'Deleted');
UPDATE agent.agents SET deleted_at = now() WHERE id = 7500002;
INSERT INTO agent.shares (agent_id, user_id, level) VALUES (7500001, 'ed', 'edit'), (7500001, 'ina', 'interact');
SELECT agent.save_settings(7500001, '{"instructions": "v2"}', 'erin') IS NOT NULL AS saved;
-- err(q): runs q and shows the SQLSTATE, message, detail and hint it raised.
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE st text; m text; d text; h text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
  RETURN st || ': ' || m || coalesce(E'\n  DETAIL: ' || nullif(d, ''), '') || coalesce(E'\n  HINT: ' || nullif(h, ''), '');
END
$f$;

-- can_access / explain_access
SELECT pg_temp.err($$SELECT agent.can_access(7500001, 'page', 'p', 'write')$$);
SELECT pg_temp.err($$SELECT agent.can_access(7500001, 'page', 'p', NULL)$$);
SELECT pg_temp.err($$SELECT agent.can_access(7500001, 'page', 'p', 'read', 'sometimes')$$);
SELECT pg_temp.err($$SELECT agent.can_access(7500001, 'page', 'p', 'read', 'manual')$$);
SELECT pg_temp.err($$SELECT agent.can_access(NULL, 'page', 'p')$$);
SELECT pg_temp.err($$SELECT * FROM agent.explain_access(7500001, NULL, 'p')$$);
SELECT pg_temp.err($$SELECT agent.set_acl_function('agent.can_access(bigint,text,text,text,text,text)')$$);

-- sharing
SELECT pg_temp.err($$SELECT agent.user_can('erin', 7500001, 'admin')$$);
SELECT pg_temp.err($$SELECT agent.share(7500001, 'team:x', 'full', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.share(7500001, 'user:x', 'owner', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.share(7500001, 'user:x', 'full', NULL)$$);
SELECT pg_temp.err($$SELECT agent.share(7500001, 'user:x', 'full', 'ed')$$);
SELECT pg_temp.err($$SELECT agent.share(7500001, 'user:x', 'full', 'stranger')$$);
SELECT pg_temp.err($$SELECT agent.unshare(7500001, 'x', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.share(7599999, 'user:x', 'full', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.share(7500002, 'user:x', 'full', 'erin')$$);

-- grants
SELECT pg_temp.err($$SELECT agent.grant(7500001, 'table', 't1')$$);
SELECT pg_temp.err($$SELECT agent.grant(7500001, 'page', '')$$);
SELECT pg_temp.err($$SELECT agent.grant(7500001, 'workspace_shared', 'all')$$);
SELECT pg_temp.err($$SELECT agent.grant(7500001, 'page', 'p1', 'write')$$);
SELECT pg_temp.err($$SELECT agent.grant(7500001, 'page', 'p1', 'read', 'ina')$$);
SELECT pg_temp.err($$SELECT agent.revoke(7599999, 'page', 'p1')$$);

-- lifecycle
SELECT pg_temp.err($$SELECT agent.create_agent('', 'erin', 'x')$$);
SELECT pg_temp.err($$SELECT agent.create_agent('ws-errors', NULL, 'x')$$);
SELECT pg_temp.err($$SELECT agent.create_agent('ws-errors', 'erin', '   ')$$);
SELECT pg_temp.err($$SELECT agent.create_agent('ws-errors', 'erin', 'x', '[]')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"instructions": "x", "temperature": 0.2}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"triggers": []}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"instructions": 42}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"name": ""}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"model": 4}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"approval_mode": "sometimes"}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"scope": []}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"web_access": "yes"}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"delegation": ["a"]}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"max_iterations": 0}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"hourly_run_cap": -1}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"default_token_budget": null}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"access": {"page": "p1"}}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"access": [{"resource_type": "page", "resource_id": "p1", "level": "edit"}]}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"access": [{"resource_type": "folder", "resource_id": "f1"}]}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"model": "m"}', 'ina')$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7500001, '{"model": "m"}', NULL)$$);
SELECT pg_temp.err($$SELECT agent.save_settings(7599999, '{"model": "m"}', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.restore_version(-1, 'erin')$$);
SELECT pg_temp.err($$SELECT agent.restore_version((SELECT id FROM agent.versions WHERE agent_id = 7500001 AND version = 1), 'ina')$$);
SELECT pg_temp.err($$SELECT * FROM agent.duplicate(7500001, 'stranger')$$);
SELECT pg_temp.err($$SELECT agent.set_status(7500001, 'paused', 'erin')$$);
SELECT pg_temp.err($$SELECT agent.set_status(7500001, 'suspended', 'ed')$$);
SELECT pg_temp.err($$SELECT agent.delete_agent(7500001, 'ed')$$);
SELECT pg_temp.err($$SELECT agent.delete_agent(7500002, 'erin')$$);
ROLLBACK;
