#!/usr/bin/env bash
# The readable set of a type registered as the rows of collections
# (agent.register_resource_table with a parent) is kept across statements
# like any other, and follows what it depends on: the application's rows (a
# row added to a granted collection, moved out of it, removed; the table
# truncated), reported by the registration's row trigger, and the grants,
# the ACL and the owner's groups of the collections.  ONE agent session stays
# open; OTHER sessions commit the changes between its statements; every
# change must show at its next statement, and a write that changes neither
# a row's id nor its collection keeps the set (no recomputation).  A second
# workspace's agent with the same collection names never sees a row.
. "$PG_AGENTS_ENV"
set -u
DB=rls_rows_$$
work=$(mktemp -d)
trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1; rm -rf "$work"' EXIT
. "$(dirname "$0")/../fixtures/tap.sh"

psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null || { echo "1..0 # Skip cannot create database"; exit 1; }
psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || { echo "Bail out! setup failed"; exit 1; }
CREATE EXTENSION pg_agents;
CREATE TABLE public.tickets (id bigint PRIMARY KEY, collection_id text NOT NULL, title text NOT NULL,
                             body text NOT NULL DEFAULT '');
INSERT INTO public.tickets (id, collection_id, title)
  SELECT g, CASE WHEN g <= 5 THEN 'c1' WHEN g <= 8 THEN 'c2' ELSE 'c3' END, 'ticket ' || g
    FROM generate_series(1, 10) g;
SELECT agent.register_resource_table('page', 'public.tickets', 'id', 'title', 'body',
                                     parent_type => 'collection', parent_column => 'collection_id');
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (7, 'ws1', 'u1', 'triage'), (8, 'ws2', 'u2', 'second workspace');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (7, 'collection', 'c1', 'read'), (7, 'collection', 'c3', 'read'), (8, 'collection', 'c1', 'read');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws1', 'collection', 'c1', 'user:u1', 'read'), ('ws1', 'collection', 'c2', 'user:u1', 'read'),
  ('ws1', 'collection', 'c3', 'group:g1', 'read');
SELECT agent.enable_allowlist('public.tickets', 'page', 'id');
SQL

other="psql -XAtq -d $DB -v ON_ERROR_STOP=1 -c"
cat > "$work/agent.sql" <<SQL
SET ROLE agents_tool;
SET pg_agents.workspace = 'ws1';
SET pg_agents.actor = 'agent:7';
PREPARE visible AS SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '-') FROM public.tickets;
EXECUTE visible;
SELECT computed AS c0, reused AS r0 FROM agent.readable_set_stats() \gset
EXECUTE visible;
SELECT (computed - :c0) || ' computed, ' || CASE WHEN reused > :r0 THEN 'reused' ELSE 'not reused' END FROM agent.readable_set_stats();
\! $other "INSERT INTO public.tickets (id, collection_id, title) VALUES (11, 'c1', 'new'), (12, 'c2', 'elsewhere')"
EXECUTE visible;
\! $other "UPDATE public.tickets SET collection_id = 'c2' WHERE id = 1"
EXECUTE visible;
\! $other "DELETE FROM public.tickets WHERE id = 2"
EXECUTE visible;
SELECT computed AS c1, reused AS r1 FROM agent.readable_set_stats() \gset
\! $other "UPDATE public.tickets SET title = 'renamed', body = 'edited' WHERE id IN (3, 4)"
EXECUTE visible;
SELECT (computed - :c1) || ' computed, ' || CASE WHEN reused > :r1 THEN 'reused' ELSE 'not reused' END FROM agent.readable_set_stats();
\! $other "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7, 'collection', 'c2', 'read')"
EXECUTE visible;
\! $other "DELETE FROM agent.resource_acl WHERE resource_id = 'c2' AND principal = 'user:u1'"
EXECUTE visible;
\! $other "INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws1', 'g1', 'u1')"
EXECUTE visible;
\! $other "DELETE FROM agent.access WHERE agent_id = 7 AND resource_id = 'c1'"
EXECUTE visible;
\! $other "UPDATE public.tickets SET id = 100 WHERE id = 10"
EXECUTE visible;
\! $other "TRUNCATE public.tickets"
EXECUTE visible;
\! $other "INSERT INTO public.tickets (id, collection_id, title) VALUES (20, 'c3', 'after truncate')"
EXECUTE visible;
SET pg_agents.workspace = 'ws2';
SET pg_agents.actor = 'agent:8';
\! $other "INSERT INTO public.tickets (id, collection_id, title) VALUES (21, 'c1', 'c1 again')"
EXECUTE visible;
SQL
mapfile -t out < <(psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 -f "$work/agent.sql" 2>"$work/err")
if [ -s "$work/err" ]; then sed 's/^/# /' "$work/err"; fi

expect=(
  "1,2,3,4,5|the rows of the granted collection c1 (c3 waits for the owner's group)"
  "1,2,3,4,5|the same at the next statement"
  "0 computed, reused|... from the kept set"
  "1,2,3,4,5,11|a row added elsewhere to c1 shows at the next statement (the one added to c2 does not)"
  "2,3,4,5,11|a row moved out of c1 is hidden"
  "3,4,5,11|a row removed is gone"
  "3,4,5,11|a write of other columns elsewhere"
  "0 computed, reused|... keeps the set"
  "1,3,4,5,6,7,8,11,12|a grant on c2 committed elsewhere (the owner reads c2): c2's rows show"
  "3,4,5,11|the owner's ACL row on c2 removed elsewhere: c2's rows hidden"
  "3,4,5,9,10,11|the owner joins the group that reads c3: its rows show"
  "9,10|the grant on c1 revoked: its rows hidden"
  "9,100|a row's id changed: the new id shows, the old one is gone"
  "-|the table truncated: nothing"
  "20|a row added after the truncation shows"
  "-|the second workspace's agent, granted a collection of the same name: nothing"
)
plan ${#expect[@]}
for i in "${!expect[@]}"; do
    want=${expect[$i]%%|*}; what=${expect[$i]#*|}
    got=${out[$i]:-<none>}
    [ "$got" = "$want" ]; ok $? "$what"
    [ "$got" = "$want" ] || echo "#   got: $got; want: $want"
done
done_testing
