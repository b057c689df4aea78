#!/usr/bin/env bash
# events, issue 18: an application automation (fire_event(..., automation =>
# label)) and a trigger launching the agent on the same event make one run,
# even from concurrent sessions; the other launch is counted.  The WARNING
# an application gets when it saves an overlapping trigger.
. "$PG_AGENTS_ENV"
export PGOPTIONS='-c client_min_messages=warning -c pg_agents.workspace=w-auto-it'
. "$(dirname "$0")/../fixtures/tap.sh"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
pgb=$(command -v pgbench || echo "$PG_AGENTS_BINDIR/pgbench")
dir=$(mktemp -d)
cleanup() {
    q -c "DELETE FROM agent.agents WHERE id IN (4250, 4251); DROP TABLE IF EXISTS public.w425_fired;
          DROP ROLE IF EXISTS w425_app" >/dev/null 2>&1
}
trap 'cleanup; rm -rf "$dir"' EXIT
cleanup
q <<'SQL' >/dev/null
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (4250, 'w-auto-it', 'u1', 'launched twice', 100000), (4251, 'w-auto-it', 'u1', 'two sessions', 100000);
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type) VALUES
  (4250, 4250, 'event', 'auto.it.row_added', 'collection'), (4251, 4251, 'event', 'auto.it.two', 'collection');
CREATE TABLE public.w425_fired (r int);
CREATE ROLE w425_app LOGIN IN ROLE agents_app;
SQL

# 10 clients, half the watcher's events (an event id per row), half the
# automation's (its own payload, no event id), on 20 rows, each holding its
# transaction a little so that they collide while uncommitted
cat >"$dir/watcher.sql" <<'SQL'
\set r random(1, 20)
BEGIN;
INSERT INTO public.w425_fired VALUES (:r);
SELECT count(*) FROM agent.fire_event('auto.it.row_added', 'collection', 'public.t', jsonb_build_object('row_id', :r::text, 'row', jsonb_build_object('id', :r)), 'user:it', 'w-' || :r);
SELECT pg_sleep(0.005);
COMMIT;
SQL
cat >"$dir/automation.sql" <<'SQL'
\set r random(1, 20)
BEGIN;
INSERT INTO public.w425_fired VALUES (:r);
SELECT count(*) FROM agent.fire_event('auto.it.row_added', 'collection', 'public.t', jsonb_build_object('row_id', :r::text, 'via', 'flow'), 'user:it', NULL, 'flow-425');
SELECT pg_sleep(0.005);
COMMIT;
SQL
"$pgb" -n -c 10 -j 2 -t 10 -f "$dir/watcher.sql" -f "$dir/automation.sql" >"$dir/out" 2>&1; rc=$?
ok $rc "pgbench: 10 clients x 10 launches ran"
[ "$rc" = 0 ] || sed 's/^/# /' "$dir/out"
got=$(q -c "SELECT (SELECT count(*) FROM agent.runs WHERE agent_id = 4250) || '/' || (SELECT count(DISTINCT r) FROM public.w425_fired)")
ok $([ "${got%/*}" = "${got#*/}" ] && [ "${got#*/}" -gt 0 ] && echo 0 || echo 1) "one run per row launched, whoever launched it (runs/rows: $got)"
got=$(q -c "SELECT count(*) FROM (SELECT input->'payload'->>'row_id' FROM agent.runs WHERE agent_id = 4250 GROUP BY 1 HAVING count(*) > 1) d")
ok $([ "$got" = 0 ] && echo 0 || echo 1) "no row has two runs (got $got)"

# two sessions, one event: the watcher's transaction still open when the automation fires
( q -c "BEGIN" -c "SELECT count(*) FROM agent.fire_event('auto.it.two', 'collection', 'public.t', '{\"row_id\": \"7\"}', NULL, 'two-7')" \
    -c "SELECT pg_sleep(1)" -c "COMMIT" >"$dir/a" 2>&1 ) &
pid=$!
sleep 0.3
b=$(q -c "SELECT count(*) FROM agent.fire_event('auto.it.two', 'collection', 'public.t', '{\"row_id\": \"7\", \"via\": \"flow\"}', NULL, NULL, 'flow-two')")
wait "$pid"
a=$(head -1 "$dir/a")
ok $([ "$((a + b))" = 1 ] && echo 0 || echo 1) "concurrent launches of one event: one run (watcher session $a, automation session $b)"
got=$(q -c "SELECT automation || ':' || deduplicated FROM agent.event_overlaps WHERE trigger_id = 4251")
ok $([ "$got" = "flow-two:1" ] && echo 0 || echo 1) "the other launch is counted (got $got)"

# the application saving an overlapping trigger is warned
out=$(PGOPTIONS='-c pg_agents.workspace=w-auto-it' psql -XAtq -U w425_app -c \
      "SELECT agent.set_trigger(4250, '{\"kind\": \"event\", \"event_name\": \"auto.it.row_added\", \"resource_type\": \"collection\"}', 'u1') > 0" 2>&1)
ok $([[ "$out" == *"WARNING:  trigger "*" overlaps trigger 4250 of agent 4250"* && "$out" == *"t" ]] && echo 0 || echo 1) \
   "the application is warned when it saves an overlapping trigger, and the trigger is saved"
echo "# $(echo "$out" | head -2 | tr '\n' ' ')"
got=$(PGOPTIONS='-c pg_agents.workspace=w-auto-it' psql -XAtq -U w425_app -c "SELECT count(*) FROM agent.trigger_overlaps(4250) WHERE other_trigger_id IS NOT NULL")
ok $([ "$got" = 2 ] && echo 0 || echo 1) "and trigger_overlaps lists the pair both ways (got $got)"
done_testing
