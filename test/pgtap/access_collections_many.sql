-- Rows of collections at a size where the readable set's lists grow past
-- their first allocation: the list of rows read through SPI must outlive
-- SPI (it was grown in SPI's procedure context and read after SPI_finish:
-- a crash of the backend when an agent read a table with thousands of rows
-- in its collections).  Two workspaces, a role with no grants, the
-- application role, an agent session.
BEGIN;
SELECT plan(5);

CREATE SCHEMA collm_t;
CREATE TABLE collm_t.tickets (id bigint PRIMARY KEY, collection_id text NOT NULL, title text NOT NULL,
                              body text NOT NULL);
INSERT INTO collm_t.tickets
  SELECT i, 'c' || (i % 100), 'ticket ' || i, 'body ' || i FROM generate_series(1, 40000) i;
CREATE ROLE collm_t_nobody NOLOGIN;
SELECT agent.register_resource_table('page', 'collm_t.tickets', 'id', 'title', 'body',
                                     parent_type => 'collection', parent_column => 'collection_id');
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7610001, 'ws-m1', 'mo1', 'many rows'), (7610002, 'ws-m2', 'mo2', 'second workspace');
-- 10 collections of 400 rows each: 4,000 readable rows
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 7610001, 'collection', 'c' || k, 'read' FROM generate_series(0, 90, 10) k;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
  SELECT 'ws-m1', 'collection', 'c' || k, 'user:mo1', 'read' FROM generate_series(0, 90, 10) k;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 7610002, 'collection', 'c' || k, 'read' FROM generate_series(0, 90, 10) k;
SELECT agent.enable_allowlist('collm_t.tickets', 'page', 'id');
GRANT USAGE ON SCHEMA collm_t TO agents_app, agents_tool, collm_t_nobody;
GRANT SELECT ON collm_t.tickets TO agents_app, agents_tool, collm_t_nobody;

SET LOCAL ROLE agents_tool;
SELECT set_config('pg_agents.workspace', 'ws-m1', true);
SELECT set_config('pg_agents.actor', 'agent:7610001', true);
SELECT is((SELECT count(*)::int FROM collm_t.tickets), 4000,
          'an agent session reads the 4,000 rows of its ten collections');
SELECT is((SELECT count(*)::int FROM collm_t.tickets WHERE collection_id <> ALL (SELECT 'c' || k FROM generate_series(0, 90, 10) k)),
          0, 'and no row of a collection not granted');
SELECT set_config('pg_agents.workspace', 'ws-m2', true);
SELECT set_config('pg_agents.actor', 'agent:7610002', true);
SELECT is((SELECT count(*)::int FROM collm_t.tickets), 0,
          'the second workspace''s agent (same collection names, no owner ACL) reads none');
SELECT set_config('pg_agents.actor', '', true);
RESET ROLE;
SET LOCAL ROLE agents_app;
SELECT set_config('pg_agents.workspace', 'ws-m1', true);
SELECT set_config('pg_agents.actor', 'agent:7610001', true);
SELECT is((SELECT count(*)::int FROM collm_t.tickets WHERE id % 20 = 0), 2000,
          'the application role acting as the agent: the same set, filtered');
RESET ROLE;
SET LOCAL ROLE collm_t_nobody;
SELECT is((SELECT count(*)::int FROM collm_t.tickets WHERE agent.can_access(7610001, 'page', id::text)), 4000,
          'can_access over every row from a role with no grants agrees with the set');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
