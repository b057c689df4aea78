-- The extension is installed by the harness; check what it created.
SELECT extname, extversion, extrelocatable FROM pg_extension WHERE extname = 'pg_agents';
SELECT n.nspname FROM pg_namespace n WHERE n.nspname = 'agent';
-- identity helpers
BEGIN;
SELECT agent.set_identity('agent:42', 'ws1', 7, 'tool');
SELECT agent.current_actor(), agent.current_agent_id(), agent.current_workspace(),
       current_setting('pg_agents.run_id'), current_setting('pg_agents.surface');
ROLLBACK;
SELECT agent.current_agent_id() IS NULL AS no_agent_outside;
SELECT agent.set_identity('robot', 'ws1');
SELECT agent.set_identity('user:1', 'ws1', NULL, 'fax');
-- GUC prefix is reserved
SET pg_agents.no_such_setting = 1;
-- secrets are hidden from non-superusers
CREATE ROLE pga_install_plain LOGIN;
SET ROLE pga_install_plain;
SHOW pg_agents.llm_api_key;
RESET ROLE;
DROP ROLE pga_install_plain;
