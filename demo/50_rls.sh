#!/usr/bin/env bash
# Allowlist: an agent searches the application's pages and finds only what it
# was granted; a secret page that mentions it and shares its words stays out.
. "$PG_AGENTS_ENV"
set -euo pipefail
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
q >/dev/null <<'SQL'
CREATE SCHEMA demo_rls;
CREATE TABLE demo_rls.pages (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL,
  related bigint[] NOT NULL DEFAULT '{}',
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || body)) STORED);
INSERT INTO demo_rls.pages (id, title, body, related) VALUES
  (1, 'Q3 budget', 'The budget plan for Q3, see the acquisition notes.', '{3}'),
  (2, 'Hiring plan', 'Two engineers for the budget tool.', '{}'),
  (3, 'Acquisition (secret)', 'Acquisition budget plan: 40M. Ask [[agent:4242]].', '{}');
GRANT USAGE ON SCHEMA demo_rls TO agents_tool;
GRANT SELECT ON demo_rls.pages TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (4242, 'demo-rls', 'alice', 'budget helper');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal)
  SELECT 'page', g::text, 'user:alice' FROM generate_series(1, 3) g;
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES (4242, 'page', '1'), (4242, 'page', '2');
INSERT INTO agent.runs (id, workspace_id, agent_id, regime, origin, status)
  VALUES (424242, 'demo-rls', 4242, 'autonomous', 'mention', 'running');
SELECT agent.enable_allowlist('demo_rls.pages', 'page', 'id');
SELECT agent.register_relation('page', 'demo_rls.pages', 'related', 'page');
SQL
search="SELECT string_agg(format('%s (%s)', title, round(ts_rank(tsv, q)::numeric, 3)), ', ' ORDER BY ts_rank(tsv, q) DESC)
          FROM demo_rls.pages, plainto_tsquery('english', 'budget plan') q WHERE tsv @@ q"
echo "allowlist: a secret page mentions agent 4242 and shares its words; the agent holds grants on pages 1 and 2"
echo "  as a user:        $(q -c "SET ROLE agents_tool" -c "$search")"
echo "  as agent 4242:    $(q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:4242'" -c "$search")"
echo "  follow page 1 -> related: [$(q -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:4242'" -c "SET pg_agents.run_id = '424242'" \
        -c "SELECT coalesce(string_agg(x, ','), '') FROM agent.follow_relation('page', '1', 'related') x")], run step: $(q -c \
        "SELECT kind || ' ' || name || ' ' || output::text FROM agent.run_steps WHERE run_id = 424242")"
