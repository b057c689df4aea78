#!/usr/bin/env bash
# Audit: a table changed by a human and by an agent, secrets redacted.
. "$PG_AGENTS_ENV"
start=$(psql -XAtq -c "SELECT coalesce(max(id), 0) FROM agent.audit_log")
PGOPTIONS="-c client_min_messages=warning" psql -XAtq -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
DROP TABLE IF EXISTS public.demo_tickets;
CREATE TABLE public.demo_tickets (id int PRIMARY KEY, workspace_id text, title text,
                                  priority text, webhook_token text, notes text);
SELECT agent.audit_table('public.demo_tickets', 'ticket');
BEGIN;
SELECT agent.set_identity('user:alice', 'ws-demo', surface => 'frontend');
INSERT INTO demo_tickets VALUES (17, 'ws-demo', 'Checkout is down', 'high', 'tok-live-123', 'reported by phone');
COMMIT;
BEGIN;
SELECT agent.set_identity('agent:1', 'ws-demo', run_id => 1001, surface => 'tool', on_behalf_of => 'alice');
UPDATE demo_tickets SET priority = 'urgent',
       notes = 'retried with Authorization: Bearer sk-live-0123456789abcdefghijklmnop' WHERE id = 17;
COMMIT;
SQL
echo "audit: public.demo_tickets changed by a human, then by an agent (secrets redacted before storage)"
psql -XAtq -F ' | ' <<SQL | sed 's/^/  /'
SET pg_agents.workspace = 'ws-demo';
SELECT actor_kind || ':' || actor_id, coalesce('for ' || on_behalf_of || ', run ' || run_id, 'direct'),
       action, changes::text
  FROM agent.audit_events(target_type => 'ticket', target_id => '17') WHERE id > $start ORDER BY id;
SQL
echo "  append-only: $(psql -XAtq -c "DELETE FROM agent.audit_log" 2>&1 | head -1 | sed 's/^ERROR: *//')"
psql -XAtq -c "SELECT agent.unaudit_table('public.demo_tickets'); DROP TABLE public.demo_tickets" >/dev/null
