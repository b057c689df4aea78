#!/usr/bin/env bash
# The readable set behind the allowlist policies is computed in C once per
# statement and kept, in the backend, while the data it was computed from
# cannot have changed: no transaction changing access data (grants, ACL,
# groups, agents, ACL setting) has committed since (src/util/shmem.c), or, in
# REPEATABLE READ and in a transaction that changed access data itself, the
# same snapshot and command.  This test keeps ONE agent
# session open and changes grants, the owner's ACL, group membership,
# workspace shares and the agent's status from OTHER sessions between its
# statements: every change must show at the agent's next statement, in
# READ COMMITTED, through a prepared statement, and not before its snapshot
# allows it in REPEATABLE READ; a rolled-back grant of its own must vanish.
# The agent's own row: a write that leaves its owner, status and deletion as
# they were keeps the set; a suspension or deletion empties it and a
# resumption restores it, without the grants revoked meanwhile; an owner
# change (elsewhere, in one commit with other changes, or by the agent
# session itself) never shows the old owner's pages.
. "$PG_AGENTS_ENV"
set -u
DB=rls_cache_$$
work=$(mktemp -d)
trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1; rm -rf "$work"' EXIT
. "$(dirname "$0")/../fixtures/tap.sh"

psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null || { echo "1..0 # Skip cannot create database"; exit 1; }
psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || { echo "Bail out! setup failed"; exit 1; }
CREATE EXTENSION pg_agents;
CREATE TABLE public.docs (id bigint PRIMARY KEY, title text NOT NULL);
INSERT INTO public.docs SELECT g, 'doc ' || g FROM generate_series(1, 50) g;
GRANT SELECT ON public.docs TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7, 'ws1', 'u1', 'cache test agent');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', g::text, 'user:u1', 'read' FROM generate_series(1, 10) g;
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', g::text, 'group:g1', 'read' FROM generate_series(11, 20) g;
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access) VALUES ('page', '30', 'user:u1', 'read');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 7, 'page', g::text, 'read' FROM generate_series(1, 15) g;
SELECT agent.enable_allowlist('public.docs', 'page', 'id');
SQL

# The agent session: one psql, one backend.  "\! other SQL" runs SQL in
# another session, which commits before the agent's next statement.
other="psql -XAtq -d $DB -v ON_ERROR_STOP=1 -c"
cat > "$work/agent.sql" <<SQL
SET ROLE agents_tool;
SET pg_agents.actor = 'agent:7';
PREPARE visible AS SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '-') FROM public.docs;
\echo t1 :'x'
EXECUTE visible;
EXECUTE visible;
\! $other "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7, 'page', '16', 'read'), (7, 'page', '30', 'read')"
EXECUTE visible;
\! $other "INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws1', 'g1', 'u1')"
SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '-') FROM public.docs;
\! $other "DELETE FROM agent.access WHERE agent_id = 7 AND resource_id IN ('1', '2')"
EXECUTE visible;
\! $other "DELETE FROM agent.resource_acl WHERE resource_id = '3' AND principal = 'user:u1'"
EXECUTE visible;
\! $other "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7, 'workspace_shared', '*', 'read'); INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES ('ws1', 'page', '40', 'workspace', 'read'), ('ws1', 'page', '40', 'user:u1', 'read')"
EXECUTE visible;
BEGIN ISOLATION LEVEL REPEATABLE READ;
EXECUTE visible;
\! $other "DELETE FROM agent.access WHERE agent_id = 7 AND resource_id = '4'"
EXECUTE visible;
COMMIT;
EXECUTE visible;
BEGIN;
RESET ROLE;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7, 'page', '5', 'read') ON CONFLICT DO NOTHING;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7, 'page', '4', 'read');
SET ROLE agents_tool;
EXECUTE visible;
ROLLBACK;
SET ROLE agents_tool;
EXECUTE visible;
\! $other "UPDATE agent.agents SET status = 'suspended' WHERE id = 7"
EXECUTE visible;
\! $other "UPDATE agent.agents SET status = 'active' WHERE id = 7"
EXECUTE visible;
SET pg_agents.actor = 'user:u1';
SELECT count(*) FROM public.docs;
SET pg_agents.actor = 'agent:7';
EXECUTE visible;
SELECT computed AS c0, reused AS r0 FROM agent.readable_set_stats() \gset
EXECUTE visible;
\! $other "CREATE TABLE IF NOT EXISTS public.unrelated (x int); INSERT INTO public.unrelated VALUES (1)"
EXECUTE visible;
SELECT (computed - :c0) || ' computed, ' || CASE WHEN reused > :r0 THEN 'reused' ELSE 'not reused' END FROM agent.readable_set_stats();
\! $other "UPDATE agent.access SET access = access WHERE agent_id = 7 AND resource_id = '5'"
EXECUTE visible;
SELECT (computed - :c0) || ' computed, ' || CASE WHEN reused > :r0 THEN 'reused' ELSE 'not reused' END FROM agent.readable_set_stats();
SELECT computed AS c1, reused AS r1 FROM agent.readable_set_stats() \gset
\! $other "INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (8, 'ws1', 'u1', 'other agent'); INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (8, 'page', '1', 'read'), (8, 'page', '17', 'read'); INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws1', 'g1', 'u3')"
EXECUTE visible;
SELECT (computed - :c1) || ' computed, ' || CASE WHEN reused > :r1 THEN 'reused' ELSE 'not reused' END FROM agent.readable_set_stats();
\! $other "DELETE FROM agent.access WHERE agent_id = 7 AND resource_id = '5'; INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7, 'page', '17', 'read'), (7, 'page', 'p1', 'read')"
EXECUTE visible;
\! $other "UPDATE agent.resource_acl SET access = 'read' WHERE resource_id = '6' AND principal = 'user:u1'; DELETE FROM agent.resource_acl WHERE resource_id = '7' AND principal = 'user:u1'; INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access) VALUES ('page', '41', 'user:u1', 'read')"
EXECUTE visible;
\! $other "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7, 'page', '41', 'read')"
EXECUTE visible;
\! $other "UPDATE agent.agents SET owner_id = 'u2' WHERE id = 7"
EXECUTE visible;
\! $other "UPDATE agent.agents SET owner_id = 'u1' WHERE id = 7"
EXECUTE visible;
\! $other "DELETE FROM agent.group_members WHERE group_id = 'g1' AND user_id = 'u1'"
EXECUTE visible;
\! $other "INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws2', 'g1', 'u1')"
EXECUTE visible;
\! $other "UPDATE agent.group_members SET workspace_id = NULL WHERE group_id = 'g1' AND user_id = 'u1'"
EXECUTE visible;
SELECT computed AS c2, reused AS r2 FROM agent.readable_set_stats() \gset
\! $other "UPDATE agent.agents SET status = status, name = 'renamed', instructions = 'new', model = 'm', updated_at = now() WHERE id = 7"
EXECUTE visible;
SELECT (computed - :c2) || ' computed, ' || CASE WHEN reused > :r2 THEN 'reused' ELSE 'not reused' END FROM agent.readable_set_stats();
\! $other "UPDATE agent.agents SET status = 'suspended', name = 'renamed again', updated_at = now() WHERE id = 7"
EXECUTE visible;
\! $other "DELETE FROM agent.access WHERE agent_id = 7 AND resource_id = '6'"
EXECUTE visible;
\! $other "UPDATE agent.agents SET status = 'active' WHERE id = 7"
EXECUTE visible;
\! $other "BEGIN; UPDATE agent.agents SET status = 'suspended' WHERE id = 7; DELETE FROM agent.access WHERE agent_id = 7 AND resource_id = '8'; UPDATE agent.agents SET status = 'active' WHERE id = 7; COMMIT"
EXECUTE visible;
\! $other "UPDATE agent.agents SET status = 'suspended' WHERE id = 7"
EXECUTE visible;
\! $other "UPDATE agent.agents SET status = 'active' WHERE id = 7"
EXECUTE visible;
\! $other "UPDATE agent.agents SET deleted_at = now() WHERE id = 7"
EXECUTE visible;
\! $other "UPDATE agent.agents SET deleted_at = now() + interval '1 minute', updated_at = now() WHERE id = 7"
EXECUTE visible;
\! $other "UPDATE agent.agents SET deleted_at = NULL WHERE id = 7"
EXECUTE visible;
\! $other "UPDATE agent.agents SET owner_id = 'u2', status = status, name = 'transferred' WHERE id = 7"
EXECUTE visible;
\! $other "BEGIN; UPDATE agent.agents SET owner_id = 'u1' WHERE id = 7; UPDATE agent.agents SET owner_id = 'u2' WHERE id = 7; COMMIT"
EXECUTE visible;
\! $other "BEGIN; UPDATE agent.agents SET owner_id = 'u1' WHERE id = 7; UPDATE agent.agents SET status = 'suspended' WHERE id = 7; COMMIT"
EXECUTE visible;
\! $other "UPDATE agent.agents SET status = 'active' WHERE id = 7"
EXECUTE visible;
RESET ROLE;
UPDATE agent.agents SET owner_id = 'u2' WHERE id = 7;
SET ROLE agents_tool;
EXECUTE visible;
BEGIN;
RESET ROLE;
UPDATE agent.agents SET owner_id = 'u1' WHERE id = 7;
SET ROLE agents_tool;
EXECUTE visible;
ROLLBACK;
SET ROLE agents_tool;
EXECUTE visible;
RESET ROLE;
UPDATE agent.agents SET owner_id = 'u1', name = 'back' WHERE id = 7;
SET ROLE agents_tool;
EXECUTE visible;
SQL
sed -i '/^\\echo t1/d' "$work/agent.sql"
mapfile -t out < <(psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 -f "$work/agent.sql" 2>"$work/err")
if [ -s "$work/err" ]; then sed 's/^/# /' "$work/err"; fi

base='1,2,3,4,5,6,7,8,9,10'
expect=(
  "$base|granted and owner-readable: 1-10 (11-15 wait for the owner's group)"
  "$base|the same from the kept set"
  "$base,30|a grant committed elsewhere shows at the next statement (16 waits for the owner's group)"
  "$base,11,12,13,14,15,16,30|the owner joins a group: its pages show at the next statement"
  "3,4,5,6,7,8,9,10,11,12,13,14,15,16,30|a revocation committed elsewhere hides the pages at the next statement"
  "4,5,6,7,8,9,10,11,12,13,14,15,16,30|the owner loses a page: hidden at the next statement"
  "4,5,6,7,8,9,10,11,12,13,14,15,16,30,40|workspace_shared: a page shared with the workspace shows"
  "4,5,6,7,8,9,10,11,12,13,14,15,16,30,40|REPEATABLE READ: first statement"
  "4,5,6,7,8,9,10,11,12,13,14,15,16,30,40|REPEATABLE READ: a revocation committed meanwhile is not in the snapshot yet"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|after COMMIT the revocation shows"
  "4,5,6,7,8,9,10,11,12,13,14,15,16,30,40|the session's own uncommitted grant shows in its transaction"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|rolled back: gone again"
  "-|suspended elsewhere: nothing at the next statement"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|reactivated: back"
  "50|a non-agent session is unaffected"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|acting as the agent again: filtered again"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|nothing changed: the same"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|a commit elsewhere that changes no access data: the same"
  "0 computed, reused|... and the kept set served both statements (one use or two each: the id probe, the membership filter)"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|an update of agent.access elsewhere (even one that changes nothing)"
  "1 computed, reused|... makes the next statement bring the set up to date (patched: one grant changed)"
  "5,6,7,8,9,10,11,12,13,14,15,16,30,40|another agent created and granted elsewhere, another user joins the owner's group"
  "0 computed, reused|... leaves this agent's kept set as it was"
  "6,7,8,9,10,11,12,13,14,15,16,17,30,40|one grant revoked and one added (and a stray id) in one commit: the patched set shows both"
  "6,8,9,10,11,12,13,14,15,16,17,30,40|the owner's ACL changed on three pages: the patched set follows (7 hidden; 41 is not granted)"
  "6,8,9,10,11,12,13,14,15,16,17,30,40,41|then granted: shows"
  "40|the agent's owner changed: computed afresh (u2 may read only what is shared with the workspace)"
  "6,8,9,10,11,12,13,14,15,16,17,30,40,41|and back"
  "6,8,9,10,30,40,41|the owner leaves the group: its pages hidden (patched from the group's ACL rows)"
  "6,8,9,10,30,40,41|joins it in another workspace: still hidden"
  "6,8,9,10,11,12,13,14,15,16,17,30,40,41|the membership moved to no workspace (every workspace): shown"
  "6,8,9,10,11,12,13,14,15,16,17,30,40,41|the agent's row written elsewhere, its status as it was (name, instructions, model)"
  "0 computed, reused|... leaves its kept set as it was"
  "-|suspended elsewhere in a statement that also renames it: nothing at the next statement"
  "-|a grant revoked while it is suspended: still nothing"
  "8,9,10,11,12,13,14,15,16,17,30,40,41|resumed: back, without the page revoked while it was suspended"
  "9,10,11,12,13,14,15,16,17,30,40,41|suspended, a grant revoked and resumed in one commit: the revocation shows"
  "-|suspended again: nothing"
  "9,10,11,12,13,14,15,16,17,30,40,41|resumed again: back"
  "-|deleted (deleted_at set): nothing"
  "-|deleted_at moved: still nothing"
  "9,10,11,12,13,14,15,16,17,30,40,41|deleted_at cleared: back"
  "40|the owner changed elsewhere (with its status written as it was): only what u2 may read"
  "40|the owner changed back and again to u2 in one commit: still only what u2 may read"
  "-|the owner changed back to u1 and the agent suspended in one commit: nothing"
  "9,10,11,12,13,14,15,16,17,30,40,41|resumed: u1's pages again"
  "40|the owner changed by this same session: none of the old owner's pages"
  "9,10,11,12,13,14,15,16,17,30,40,41|changed back in its own open transaction: seen there"
  "40|rolled back: the new owner's answer again"
  "9,10,11,12,13,14,15,16,17,30,40,41|changed back by this session and committed"
)
plan ${#expect[@]}
for i in "${!expect[@]}"; do
    want=${expect[$i]%%|*}; what=${expect[$i]#*|}
    got=${out[$i]:-<none>}
    [ "$got" = "$want" ]; ok $? "$what"
    [ "$got" = "$want" ] || echo "#   got: $got; want: $want"
done
done_testing
