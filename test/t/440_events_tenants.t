#!/usr/bin/env bash
# events across sessions: the unknown-workspace counter is shared by every
# backend and survives a rollback; the per-backend trigger cache of one
# session serves each workspace its own triggers; a failing filter view is
# recorded without ever making a concurrent writer wait; an application
# session (agents_app) without a workspace is refused, a superuser one wakes
# nobody.  Two workspaces, the application role, a role with no grants.
. "$PG_AGENTS_ENV"
export PGOPTIONS='-c client_min_messages=error'
. "$(dirname "$0")/../fixtures/tap.sh"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
plan 12

q >/dev/null <<'SQL'
DELETE FROM agent.agents WHERE id IN (4450, 4451);
DROP TABLE IF EXISTS public.ev440_items;
DROP VIEW IF EXISTS public.ev440_boom;
DROP FUNCTION IF EXISTS public.ev440_boom();
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ev440_app') THEN CREATE ROLE ev440_app NOLOGIN IN ROLE agents_app; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ev440_nobody') THEN CREATE ROLE ev440_nobody NOLOGIN; END IF;
END $$;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (4450, 'w-440-a', 'ua', 'A any row'), (4451, 'w-440-b', 'ub', 'B any row');
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, prompt) VALUES
  (4450, 'w-440-a', 4450, 'event', 'ev440.added', 'collection', 'A'),
  (4451, 'w-440-b', 4451, 'event', 'ev440.added', 'collection', 'B');
CREATE FUNCTION public.ev440_boom() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'ev440 boom'; END $$;
CREATE VIEW public.ev440_boom AS SELECT '1'::text AS id WHERE public.ev440_boom();
INSERT INTO agent.triggers (id, workspace_id, agent_id, kind, event_name, resource_type, filter) VALUES
  (4452, 'w-440-a', 4450, 'event', 'ev440.boom', 'collection', '{"view": "public.ev440_boom"}');
CREATE TABLE public.ev440_items (id int PRIMARY KEY, ws text);
SELECT agent.watch_table('public.ev440_items', 'collection', 'id', NULL, 'ws');
GRANT INSERT ON public.ev440_items TO ev440_app;
SQL

# one session, one backend: the same event in A then in B, cached in between
out=$(q <<'SQL'
SET ROLE ev440_app;
SET pg_agents.workspace = 'w-440-a';
SELECT count(*) FROM agent.fire_event('ev440.added', 'collection', 'public.x', '{}', 'user:ua', 'c-a-1');
SELECT count(*) FROM agent.fire_event('ev440.added', 'collection', 'public.x', '{}', 'user:ua', 'c-a-2');
SET pg_agents.workspace = 'w-440-b';
SELECT count(*) FROM agent.fire_event('ev440.added', 'collection', 'public.x', '{}', 'user:ub', 'c-b-1');
SQL
)
is "$(echo $out)" "1 1 1" "one backend fires the same event in A twice, then in B: one run each"
is "$(q -c "SELECT string_agg(input->>'event_id' || '=' || agent_id, ',' ORDER BY input->>'event_id') FROM agent.runs WHERE agent_id IN (4450, 4451)")" \
   "c-a-1=4450,c-a-2=4450,c-b-1=4451" "the backend's trigger cache served each workspace its own trigger"

# the counter is shared memory: one backend counts, another reads
u0=$(q -c "SELECT events FROM agent.unknown_workspace_events()")
q -c "SELECT count(*) FROM agent.fire_event('ev440.added', 'collection', 'public.x', '{}')" >/dev/null
q >/dev/null <<'SQL'
BEGIN;
INSERT INTO public.ev440_items VALUES (1, NULL);
ROLLBACK;
SQL
u1=$(q -c "SELECT events FROM agent.unknown_workspace_events()")
is "$((u1 - u0))" "2" "events of no workspace from other sessions are counted, a rolled-back one too"
is "$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id IN (4450, 4451)")" "3" "and they woke nobody"
is "$(q -c "SELECT last_event || ' ' || last_resource_id FROM agent.unknown_workspace_events()")" \
   "collection.row_added public.ev440_items" "the counter names the last one"

# an application session without a workspace is refused; a role with no grants may not fire
v=$(q -c "SET ROLE ev440_app" -c "SELECT agent.fire_event('ev440.added', 'collection', 'public.x')" 2>&1)
case "$v" in *"pg_agents.workspace is not set"*) ok 0 "the application's session without a workspace is refused";;
             *) ok 1 "the application's session without a workspace is refused ($v)";; esac
v=$(q -c "SET ROLE ev440_nobody" -c "SET pg_agents.workspace = 'w-440-a'" -c "SELECT agent.fire_event('ev440.added', 'collection', 'public.x')" 2>&1)
case "$v" in *"permission denied"*) ok 0 "a role with no grants may not fire events";;
             *) ok 1 "a role with no grants may not fire events ($v)";; esac

# rows with a workspace column, written by the application without a session workspace
q -c "SET ROLE ev440_app" -c "INSERT INTO public.ev440_items VALUES (2, 'w-440-b'), (3, 'w-440-a')" >/dev/null 2>&1; rc=$?
ok $rc "the application writes rows of two workspaces in one statement"
is "$(q -c "SELECT string_agg(input#>>'{payload,row_id}' || '=' || agent_id, ',' ORDER BY 1) FROM agent.runs WHERE input#>>'{payload,table}' = 'public.ev440_items'")" \
   "" "no trigger of either workspace listens to collection.row_added: nothing made"
q -c "UPDATE agent.triggers SET event_name = 'collection.row_added' WHERE id IN (4450, 4451)" >/dev/null
q -c "SET ROLE ev440_app" -c "INSERT INTO public.ev440_items VALUES (4, 'w-440-b'), (5, 'w-440-a')" >/dev/null
is "$(q -c "SELECT string_agg(input#>>'{payload,row_id}' || '=' || agent_id, ',' ORDER BY input#>>'{payload,row_id}') FROM agent.runs WHERE input#>>'{payload,table}' = 'public.ev440_items'")" \
   "4=4451,5=4450" "each row wakes the agent of its own workspace"

# a failing filter view: recorded by one open transaction, a second writer does not wait for it
out1=$(mktemp)
( { echo "SET pg_agents.workspace = 'w-440-a';"
    echo "BEGIN;"
    echo "SELECT count(*) FROM agent.fire_event('ev440.boom', 'collection', 'x', '{\"row_id\": \"1\"}', 'user:ua', 'b-1');"
    echo "SELECT 'held';"
    sleep 6
    echo "COMMIT;"; } | psql -XAtq >"$out1" 2>&1 ) &
hold=$!
for _ in $(seq 200); do grep -q held "$out1" && break; sleep 0.1; done
v=$(q -c "SET pg_agents.workspace = 'w-440-a'" -c "SET lock_timeout = '4s'" \
      -c "SELECT count(*) FROM agent.fire_event('ev440.boom', 'collection', 'x', '{\"row_id\": \"1\"}', 'user:ua', 'b-2')" 2>&1)
is "$v" "0" "while another transaction holds the failing trigger's row, a second writer's event goes through without waiting"
wait $hold; rm -f "$out1"
is "$(q -c "SELECT last_status || ': ' || last_error FROM agent.triggers WHERE id = 4452")" \
   'error: filter view "public.ev440_boom": ev440 boom' "the first transaction recorded the failure at commit"

q >/dev/null <<'SQL'
SELECT agent.unwatch_table('public.ev440_items');
DROP TABLE public.ev440_items;
DELETE FROM agent.agents WHERE id IN (4450, 4451);
DROP VIEW public.ev440_boom;
DROP FUNCTION public.ev440_boom();
DROP ROLE ev440_app;
DROP ROLE ev440_nobody;
SQL
done_testing
