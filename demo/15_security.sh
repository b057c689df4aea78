#!/usr/bin/env bash
# Roles and tenants: the application, an analytics role bound to one
# workspace, and a role with nothing (docs/security.md).
. "$PG_AGENTS_ENV"
PGOPTIONS="-c client_min_messages=warning" psql -XAtq -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
DROP ROLE IF EXISTS demo_app; DROP ROLE IF EXISTS demo_analytics; DROP ROLE IF EXISTS demo_nobody;
CREATE ROLE demo_app IN ROLE agents_app;
CREATE ROLE demo_analytics IN ROLE agents_reader;
CREATE ROLE demo_nobody;
SELECT agent.bind_reader('demo_analytics', 'ws-sec-a');
SELECT agent._audit_event('demo.security', p_workspace_id => 'ws-sec-a', p_summary => 'an event of ws-sec-a');
SELECT agent._audit_event('demo.security', p_workspace_id => 'ws-sec-b', p_summary => 'an event of ws-sec-b');
SQL
try() {  # role, workspace, sql
    psql -XAtq -c "SET ROLE $1" -c "SET pg_agents.workspace = '$2'" -c "$3" 2>&1 | grep -v "^\(DETAIL\|HINT\)" | tail -1 | sed "s/^ERROR: *//"
}
q="SELECT count(*) || ' audit row(s)' FROM agent.audit_log WHERE action = 'demo.security'"
echo "security: who reads the audit log (docs/security.md)"
echo "  application, naming ws-sec-b:          $(try demo_app ws-sec-b "$q")"
echo "  analytics bound to ws-sec-a, ws-sec-a: $(try demo_analytics ws-sec-a "$q")"
echo "  analytics bound to ws-sec-a, ws-sec-b: $(try demo_analytics ws-sec-b "$q")"
echo "  a role with nothing, ws-sec-a:          $(try demo_nobody ws-sec-a "$q")"
echo "  a role with nothing asks for a user's access: $(try demo_nobody ws-sec-a "SELECT agent.can_access(1, 'page', 'p', 'read', 'manual', 'alice')")"
psql -XAtq -c "SELECT agent.unbind_reader('demo_analytics', 'ws-sec-a')" -c "DROP ROLE demo_app, demo_analytics, demo_nobody" >/dev/null
