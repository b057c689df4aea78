#!/usr/bin/env bash
# Events: a watched table, a row added -> a run queued; a filtered-out row ->
# nothing; the same event twice -> one run (dedup).
. "$PG_AGENTS_ENV"
# every event belongs to a workspace: the demo's sessions work in "demo"
export PGOPTIONS='-c client_min_messages=warning -c pg_agents.workspace=demo'
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
echo
echo "== events: what wakes an agent"
q >/dev/null <<'SQL'
DELETE FROM agent.agents WHERE id = 3030;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, instructions)
VALUES (3030, 'demo', 'alice', 'Ticket triager', 'Triage new high-priority tickets.');
DROP TABLE IF EXISTS public.demo_tickets;
CREATE TABLE public.demo_tickets (id serial PRIMARY KEY, title text, priority text, body text);
SELECT agent.watch_table('public.demo_tickets', 'collection', 'id', ARRAY['body']);
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, resource_id, filter, prompt)
VALUES (3030, 'event', 'collection.row_added', 'collection', 'public.demo_tickets',
        '{"all": [{"property": "priority", "op": "eq", "value": "high"}]}', 'Triage this ticket.');
SQL
echo "  watching public.demo_tickets; trigger: collection.row_added where priority = high"
q -c "SET pg_agents.actor = 'user:alice'" -c "INSERT INTO public.demo_tickets (title, priority) VALUES ('Checkout is down', 'high')" >/dev/null
q -c "SELECT '  row added (high)   -> run ' || id || ' ' || status || ', origin ' || origin || ', row ' || (input->'payload'->'row')::text
      FROM agent.runs WHERE agent_id = 3030 ORDER BY id"
q -c "INSERT INTO public.demo_tickets (title, priority) VALUES ('Typo on the about page', 'low')" >/dev/null
echo "  row added (low)    -> runs for the agent: $(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 3030") (filtered out)"
a=$(q -c "SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.demo_tickets', '{\"row_id\": \"99\", \"row\": {\"priority\": \"high\"}}', 'user:bob', 'import:99')")
b=$(q -c "SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.demo_tickets', '{\"row_id\": \"99\", \"row\": {\"priority\": \"high\"}}', 'user:bob', 'import:99')")
echo "  same event fired twice (event_id import:99) -> $a run, then $b (dedup window $(q -c "SHOW pg_agents.dedup_window"))"
c=$(q -c "SET pg_agents.workspace = 'other'" -c "SELECT count(*) FROM agent.fire_event('collection.row_added', 'collection', 'public.demo_tickets', '{\"row_id\": \"100\", \"row\": {\"priority\": \"high\"}}', 'user:eve', 'import:100')")
echo "  the same kind of event in another workspace's session -> $c runs (every event belongs to a workspace)"
q -c "SELECT agent.validate_filter('{\"all\": [{\"property\": \"priority\", \"op\": \"equals\", \"value\": \"high\"}]}')" 2>&1 \
  | sed -n 's/^ERROR: */  a bad filter is refused: /p'
# leave no queued run behind for the later demo steps
q -c "SELECT agent.unwatch_table('public.demo_tickets')" -c "DROP TABLE public.demo_tickets" \
  -c "DELETE FROM agent.agents WHERE id = 3030" >/dev/null
