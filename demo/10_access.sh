#!/usr/bin/env bash
# Access: an agent is created, granted, checked (with the reasons for each
# refusal), shared, versioned and duplicated.
set -euo pipefail
. "$PG_AGENTS_ENV"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }

q >/dev/null <<'SQL'
-- the host application's ACL: who may read or edit which page
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('acme', 'page', 'roadmap', 'user:alice', 'edit'),
  ('acme', 'page', 'payroll', 'user:hr',    'edit'),
  ('acme', 'page', 'minutes', 'user:alice', 'read'),
  ('acme', 'page', 'minutes', 'user:bob',   'read'),
  ('acme', 'page', 'handbook', 'workspace', 'read')
ON CONFLICT DO NOTHING;
SQL
id=$(q -c "SELECT agent.create_agent('acme', 'alice', 'Roadmap keeper',
            '{\"instructions\": \"Keep the roadmap page tidy.\", \"model\": \"gpt-4o-mini\"}')")
echo "access: alice created agent $id \"Roadmap keeper\" (version 1)"
q -c "SELECT agent.grant($id, 'page', 'roadmap', 'edit', 'alice'),
             agent.grant($id, 'page', 'minutes', 'edit', 'alice'),
             agent.grant($id, 'page', 'payroll', 'read', 'alice'),
             agent.grant($id, 'workspace_shared', '*', 'read', 'alice')" >/dev/null
echo "access: granted roadmap (edit), minutes (edit), payroll (read), what the workspace shares (read)"
q -F ' ' -c "SELECT format('  autonomous %-5s %-9s -> %-24s %s', m, r, e.reason, e.detail)
             FROM (VALUES ('roadmap', 'edit'), ('minutes', 'edit'), ('payroll', 'read'), ('handbook', 'read')) v(r, m),
                  agent.explain_access($id, 'page', r, m) e"
q -c "SELECT format('  manual     %-5s %-9s -> %-24s (as bob: %s)', 'read', 'roadmap', e.reason, e.detail)
      FROM agent.explain_access($id, 'page', 'roadmap', 'read', 'manual', 'bob') e"
q -c "SELECT agent.share($id, 'user:bob', 'interact', 'alice')" >/dev/null
echo "access: shared with bob at interact -> bob may chat: $(q -c "SELECT agent.user_can('bob', $id, 'chat')"), edit settings: $(q -c "SELECT agent.user_can('bob', $id, 'edit_settings')")"
q -c "SELECT agent.save_settings($id, '{\"model\": \"claude-3-5-haiku\", \"approval_mode\": \"all\"}', 'alice')" >/dev/null
v5=$(q -c "SELECT id FROM agent.versions WHERE agent_id = $id AND version = 5")
q -c "SELECT agent.restore_version($v5, 'alice')" >/dev/null
q -c "SELECT format('  version %s by %s: %s', version, created_by, note) FROM agent.versions WHERE agent_id = $id AND version > 4 ORDER BY version"
q -c "SELECT format('access: bob duplicated it as agent %s; dropped: %s', d.agent_id,
              (SELECT string_agg(format('%s %s (%s)', e->>'resource_type', e->>'resource_id', e->>'reason'), ', ')
                 FROM jsonb_array_elements(d.report->'dropped') e))
      FROM agent.duplicate($id, 'bob') d"
q -c "SELECT format('  the copy holds: %s', string_agg(format('%s %s (%s)', resource_type, resource_id, access), ', ' ORDER BY resource_id))
      FROM agent.access WHERE agent_id = (SELECT max(id) FROM agent.agents WHERE owner_id = 'bob' AND name = 'Roadmap keeper (copy)')"
