-- The worker's settings: the API key cannot be stored per role, per
-- database or per function (those catalogs are world-readable); the LLM
-- endpoint allowlist checked when an agent's scope is written; approvals
-- refused when their input cannot be shown whole.
\set ON_ERROR_ROLLBACK on
\set SHOW_CONTEXT never
CREATE ROLE pga_ws_nobody NOLOGIN;
CREATE ROLE pga_ws_app NOLOGIN IN ROLE agents_app;
-- 1. the key: ALTER ROLE / DATABASE ... SET and function SET clauses fail
ALTER ROLE pga_ws_nobody SET pg_agents.llm_api_key = 'sk-regress-secret-0001';
ALTER ROLE ALL SET pg_agents.llm_api_key = 'sk-regress-secret-0002';
SELECT pg_catalog.format('ALTER DATABASE %I SET pg_agents.llm_api_key = %L', current_database(), 'sk-regress-secret-0003') \gexec
SELECT pg_catalog.format('ALTER ROLE pga_ws_nobody IN DATABASE %I SET pg_agents.llm_api_key = %L', current_database(), 'sk-regress-secret-0004') \gexec
CREATE FUNCTION public.pga_ws_keyed() RETURNS integer LANGUAGE sql
  SET pg_agents.llm_api_key = 'sk-regress-secret-0005' AS 'SELECT 1';
SELECT count(*) AS stored_anywhere FROM pg_db_role_setting WHERE setconfig::text LIKE '%sk-regress-secret%';
SELECT count(*) AS keyed_functions FROM pg_proc WHERE proname = 'pga_ws_keyed';
-- RESET is fine, and so are the other settings
ALTER ROLE pga_ws_nobody RESET pg_agents.llm_api_key;
ALTER ROLE pga_ws_nobody SET pg_agents.max_reply_bytes = '1MB';
ALTER ROLE pga_ws_nobody RESET ALL;
-- the bounds and their defaults
SELECT name, setting, unit, context FROM pg_settings
 WHERE name IN ('pg_agents.max_tool_calls_per_turn', 'pg_agents.max_reply_bytes',
                'pg_agents.approval_max_input', 'pg_agents.llm_url_allowlist',
                'pg_agents.max_tool_result_bytes', 'pg_agents.max_request_bytes')
 ORDER BY name;
-- 2. the allowlist is for superusers only
SET ROLE pga_ws_app;
SET pg_agents.llm_url_allowlist = 'https://evil.example.com/v1';
RESET ROLE;
SET pg_agents.llm_url = 'https://llm.cluster.example/v1';
SET pg_agents.llm_url_allowlist = ' https://llm.example.com/v1/ ,https://other.example.com/api';
-- 3. agents naming an endpoint: allowlisted ones (trailing slashes trimmed) and the cluster's own
BEGIN;
SET ROLE pga_ws_nobody;
SET LOCAL pg_agents.workspace = 'ws-worker-settings-2';
SELECT agent.create_agent('ws-worker-settings-2', 'u2', 'nobody', '{"scope": {"llm_url": "https://llm.example.com/v1"}}');
RESET ROLE;
SET ROLE pga_ws_app;
SELECT agent.create_agent('ws-worker-settings-2', 'u2', 'elsewhere', '{"scope": {"llm_url": "http://127.0.0.1:9/v1"}}');
SET LOCAL pg_agents.workspace = 'ws-worker-settings';
SELECT agent.create_agent('ws-worker-settings', 'u1', 'listed', '{"scope": {"llm_url": "https://llm.example.com/v1"}}') AS listed_id \gset
SELECT :listed_id > 0 AS created;
SELECT agent.create_agent('ws-worker-settings', 'u1', 'listed2', '{"scope": {"llm_url": "https://other.example.com/api//"}}') > 0 AS created;
SELECT agent.create_agent('ws-worker-settings', 'u1', 'cluster', '{"scope": {"llm_url": "https://llm.cluster.example/v1/"}}') > 0 AS created;
SELECT agent.create_agent('ws-worker-settings', 'u1', 'other', '{"scope": {"llm_url": "https://llm.example.com/v1/chat"}}');
SELECT agent.create_agent('ws-worker-settings', 'u1', 'other', '{"scope": {"llm_url": "https://LLM.example.com/v1"}}');
SELECT agent.create_agent('ws-worker-settings', 'u1', 'other', '{"scope": {"llm_url": 42}}');
SELECT agent.save_settings(:listed_id, '{"scope": {"llm_url": "http://127.0.0.1:9/v1"}}', 'u1');
-- saving other settings of an agent whose endpoint is no longer allowed is not blocked (the worker refuses the run)
RESET ROLE;
SET LOCAL pg_agents.llm_url_allowlist = '';
SET ROLE pga_ws_app;
SELECT agent.save_settings(:listed_id, '{"instructions": "Be brief.", "scope": {"llm_url": "https://llm.example.com/v1"}}', 'u1') > 0 AS saved;
SELECT agent.save_settings(:listed_id, '{"scope": {"llm_url": "https://other.example.com/api"}}', 'u1');
RESET ROLE;
ROLLBACK;
RESET pg_agents.llm_url_allowlist;
RESET pg_agents.llm_url;
-- 4. approvals show what runs: no credential stored, nothing cut
SELECT agent._has_credential('{"body": "The pump needs oil."}') AS plain,
       agent._has_credential('{"api_key": "abc"}') AS by_name,
       agent._has_credential('{"token_budget": 5, "password": null}') AS scalars_kept,
       agent._has_credential('{"note": "use sk-abcdefghijklmnopqrstuvwxyz0123"}') AS by_shape,
       agent._has_credential(pg_catalog.jsonb_build_object('body', pg_catalog.repeat('a ', 3000) || 'sk-abcdefghijklmnopqrstuvwxyz0123')) AS past_2kb,
       agent._has_credential('{"list": [{"secret": {"x": 1}}]}') AS nested;
BEGIN;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (390901, 'ws-worker-settings', 'om', 'approver');
INSERT INTO agent.runs (id, agent_id, regime, origin, status, depth, root_run_id)
  VALUES (3909001, 390901, 'autonomous', 'api', 'running', 0, 3909001);
SELECT agent.request_approval(3909001, 'write_resource', pg_catalog.jsonb_build_object('body', pg_catalog.repeat('x', 70000)));
SELECT agent.request_approval(3909001, 'write_resource', '{"body": "connect with password=hunter2 please"}');
SELECT agent.request_approval(3909001, 'write_resource', pg_catalog.jsonb_build_object('body', pg_catalog.repeat('y', 10000))) IS NOT NULL AS requested;
SELECT length(input->>'body') AS body_length, input = pg_catalog.jsonb_build_object('body', pg_catalog.repeat('y', 10000)) AS exact
  FROM agent.approvals WHERE run_id = 3909001;
SET LOCAL pg_agents.approval_max_input = '4kB';
SELECT agent.request_approval(3909001, 'write_resource', pg_catalog.jsonb_build_object('body', pg_catalog.repeat('z', 5000)));
ROLLBACK;
DROP ROLE pga_ws_app;
DROP ROLE pga_ws_nobody;
