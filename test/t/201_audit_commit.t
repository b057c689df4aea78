#!/usr/bin/env bash
# Audit rows still buffered when a transaction commits (the statement-level
# trigger disabled by the table's owner) are written before the commit, in
# committed transactions of their own sessions; rows of a rolled-back
# transaction never appear.  Two workspaces, the application role (member of
# agents_app) owning the audited table, an agent session, a role with no
# grants.
. "$PG_AGENTS_ENV"
. "$(dirname "$0")/../fixtures/tap.sh"
plan 6
check() {  # description, condition (shows $out when it fails)
    if eval "$2"; then ok 0 "$1"; else ok 1 "$1"; diag "got: $out"; fi
}
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@" 2>&1; }
trap 'q -c "DROP TABLE IF EXISTS public.audit_commit_items" -c "DROP ROLE IF EXISTS audit_commit_app" -c "DROP ROLE IF EXISTS audit_commit_nobody" >/dev/null' EXIT
q >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS public.audit_commit_items;
DROP ROLE IF EXISTS audit_commit_app;
DROP ROLE IF EXISTS audit_commit_nobody;
CREATE ROLE audit_commit_app NOLOGIN IN ROLE agents_app;
CREATE ROLE audit_commit_nobody NOLOGIN;
GRANT USAGE ON SCHEMA public TO audit_commit_app, audit_commit_nobody;
CREATE TABLE public.audit_commit_items (id int PRIMARY KEY, workspace_id text, title text);
ALTER TABLE public.audit_commit_items OWNER TO audit_commit_app;
SQL
out=$(q <<'SQL'
SET ROLE audit_commit_app;
SELECT agent.audit_table('public.audit_commit_items', 'commit_item');
-- the owner turns the statement trigger off: rows wait for the commit
ALTER TABLE public.audit_commit_items DISABLE TRIGGER pg_agents_audit_stmt;
SELECT agent.set_identity('agent:5', 'ws-commit-a');
BEGIN;
INSERT INTO public.audit_commit_items
  SELECT g, CASE WHEN g % 2 = 0 THEN 'ws-commit-a' ELSE 'ws-commit-b' END, 'item ' || g FROM generate_series(1, 1500) g;
UPDATE public.audit_commit_items SET title = 'changed' WHERE id <= 10;
COMMIT;
BEGIN;
INSERT INTO public.audit_commit_items SELECT g, 'ws-commit-a', 'gone' FROM generate_series(2001, 2300) g;
ROLLBACK;
SQL
)
check "the session ran" '[ -z "$out" ] || [[ "$out" != *ERROR* ]]'
out=$(q -c "SELECT count(*) FROM agent.audit_log WHERE target_type = 'commit_item' AND action = 'insert'")
check "the 1,500 rows buffered at commit were written (1,000 in a batch, the rest before the commit)" '[ "$out" = 1500 ]'
out=$(q -c "SELECT count(*) FROM agent.audit_log WHERE target_type = 'commit_item' AND action = 'update'")
check "and the ten updates" '[ "$out" = 10 ]'
out=$(q -c "SELECT count(*) FROM agent.audit_log WHERE target_type = 'commit_item' AND target_id::int > 2000")
check "a rolled-back transaction left none" '[ "$out" = 0 ]'
out=$(q -c "BEGIN; SET LOCAL ROLE audit_commit_app; SELECT agent.set_identity('user:u1', 'ws-commit-b');
               SELECT count(*) FROM agent.audit_events(target_type => 'commit_item', lim => 10000); COMMIT" | tail -1)
check "the application reads the 755 rows of ws-commit-b only (750 inserts, 5 updates)" '[ "$out" = 755 ]'
out=$(q -c "SET ROLE audit_commit_nobody" -c "SELECT count(*) FROM agent.audit_log" | tail -1)
check "a role with no grants reads nothing" '[[ "$out" == *"permission denied"* ]]'
done_testing
