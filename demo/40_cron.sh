#!/usr/bin/env bash
# Schedules: a cron expression in plain English, its next runs in a time zone,
# and a tick that queues the run that is due.
. "$PG_AGENTS_ENV"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
echo
echo "== Schedules (cron)"
expr='0 9 * * 1-5'
echo "  '$expr' = $(q -c "SELECT agent.cron_describe('$expr')")"
echo "  next runs in Europe/Paris (UTC shown):"
q -c "SELECT to_char(u AT TIME ZONE 'Europe/Paris', 'Dy YYYY-MM-DD HH24:MI') || ' Paris  (' || to_char(u AT TIME ZONE 'UTC', 'HH24:MI') || ' UTC)'
        FROM agent.cron_upcoming('$expr', 3, now(), 'Europe/Paris') u" | sed 's/^/    /'
echo "  DST: '30 2 * * *' in New York around the 2025 spring-forward (02:30 does not exist on March 9):"
q -c "SELECT to_char(u AT TIME ZONE 'America/New_York', 'Dy YYYY-MM-DD HH24:MI') || ' New York'
        FROM agent.cron_upcoming('30 2 * * *', 3, '2025-03-08 00:00 America/New_York', 'America/New_York') u" | sed 's/^/    /'

q >/dev/null <<'SQL'
DELETE FROM agent.agents WHERE workspace_id = 'demo-cron';
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (940001, 'demo-cron', 'alice', 'Morning digest');
INSERT INTO agent.triggers (id, agent_id, kind, schedule, timezone, prompt, created_by)
VALUES (940001, 940001, 'schedule', '0 7 * * *', 'Europe/Paris', 'Summarise the emails received overnight.', 'alice');
SQL
echo "  schedule trigger saved: $(q -c "SELECT schedule || ' ' || timezone || ' -> next_run_at ' || to_char(next_run_at AT TIME ZONE timezone, 'YYYY-MM-DD HH24:MI') || ' local' FROM agent.triggers WHERE id = 940001")"
# pretend the machine was off for three days: the slot is long overdue
q -c "UPDATE agent.triggers SET next_run_at = now() - interval '3 days' WHERE id = 940001" >/dev/null
echo "  machine off for three days; agent.tick() queued $(q -c "SELECT agent.tick()") run(s) (missed slots fire once)"
q -c "SELECT 'run #' || id || ': ' || regime || ', origin ' || origin || ', ' || status || ', prompt \"' || (input->>'prompt') || '\"'
        FROM agent.runs WHERE agent_id = 940001" | sed 's/^/    /'
echo "  next_run_at now $(q -c "SELECT to_char(next_run_at AT TIME ZONE timezone, 'YYYY-MM-DD HH24:MI') || ' local' FROM agent.triggers WHERE id = 940001"); a second tick queued $(q -c "SELECT agent.tick()") more"
q -c "DELETE FROM agent.agents WHERE workspace_id = 'demo-cron'" >/dev/null
