#!/usr/bin/env bash
# pg_agents.worker_tick (docs/cron.md, "Who ticks"): off, the worker leaves
# agent.tick() to someone else (pg_cron, the soak's simulated clock): a due
# schedule waits for an explicit tick, in either workspace, and fires once;
# on again, the worker ticks by itself.  The setting is the server's
# (PGC_SIGHUP): no session, application or not, can change it for itself.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
psql -XAtq -c "SET client_min_messages = warning; DROP ROLE IF EXISTS t625_app; DROP ROLE IF EXISTS t625_nobody;
               CREATE ROLE t625_app IN ROLE agents_app; CREATE ROLE t625_nobody" >/dev/null
a=$(mk_agent "tick625a")
b=$(mk_agent "tick625b" '{}' none '[]' 10 w625b owner625b)
llm_script "[[t625]]" '[{"text": "ticked", "repeat": true}]'

set_tick() {
    q "ALTER SYSTEM SET pg_agents.worker_tick = $1" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
    for i in $(seq 1 100); do [ "$(q "SHOW pg_agents.worker_tick")" = "$1" ] && break; sleep 0.05; done
    sleep 1.5   # the worker reloads its configuration on its next loop
}
set_tick off
is "$(q "SHOW pg_agents.worker_tick")" "off" "the setting is off for new sessions"

# due schedules in two workspaces: next_run_at in the past (an UPDATE of next_run_at alone is kept)
ta=$(q "INSERT INTO agent.triggers (agent_id, kind, schedule, prompt) VALUES ($a, 'schedule', '0 * * * *', 'hourly [[t625]]') RETURNING id")
tb=$(q "INSERT INTO agent.triggers (agent_id, kind, schedule, prompt) VALUES ($b, 'schedule', '0 * * * *', 'hourly [[t625]]') RETURNING id")
q "UPDATE agent.triggers SET next_run_at = now() - interval '1 minute' WHERE id IN ($ta, $tb)" >/dev/null
sleep 3   # three of the worker's tick periods
is "$(q "SELECT count(*) FROM agent.runs WHERE trigger_id IN ($ta, $tb)")" "0" "worker_tick off: the worker did not tick the due schedules"
is "$(q "SELECT agent.tick()")" "2" "an explicit agent.tick() fires both workspaces' schedules"
is "$(q "SELECT agent.tick()")" "0" "once"
r=$(q "SELECT id FROM agent.runs WHERE trigger_id = $tb")
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the worker still executes the runs"

# nobody but the server's configuration changes it
ok "$(psql -XAtq -c "SET pg_agents.worker_tick = on" >/dev/null 2>&1 && echo 1 || echo 0)" "a superuser session cannot SET it either (sighup)"
ok "$(psql -XAtq -c "SET ROLE t625_app" -c "ALTER SYSTEM SET pg_agents.worker_tick = on" >/dev/null 2>&1 && echo 1 || echo 0)" \
   "the application role cannot ALTER SYSTEM it"
ok "$(psql -XAtq -c "SET ROLE t625_nobody" -c "SELECT agent.tick()" >/dev/null 2>&1 && echo 1 || echo 0)" \
   "a role with no grants cannot tick"
ok "$(psql -XAtq -c "SET ROLE t625_app" -c "SET pg_agents.workspace = 'w625b'" -c "SELECT agent.tick()" >/dev/null 2>&1 && echo 1 || echo 0)" \
   "nor can the application (agent.tick acts for every workspace)"

# on again: the worker ticks by itself
q "UPDATE agent.triggers SET next_run_at = now() - interval '1 minute' WHERE id = $ta" >/dev/null
set_tick on
for i in $(seq 1 200); do [ "$(q "SELECT count(*) FROM agent.runs WHERE trigger_id = $ta")" = 2 ] && break; sleep 0.05; done
is "$(q "SELECT count(*) FROM agent.runs WHERE trigger_id = $ta")" "2" "worker_tick on: the worker fired the due schedule itself"
q "ALTER SYSTEM RESET pg_agents.worker_tick" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
q "DROP ROLE t625_app; DROP ROLE t625_nobody" >/dev/null
done_testing
