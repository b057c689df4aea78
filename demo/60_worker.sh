#!/usr/bin/env bash
# The worker end to end: a scripted LLM server, a real agent, a search, a read
# through can_access, a refused read, and a final answer; then its steps.
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/fixtures/llm.sh"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
echo
echo "== The worker (scripted LLM server, OpenAI wire format)"
llm_start
q >/dev/null <<SQL
DROP TABLE IF EXISTS public.demo_pages;
CREATE TABLE public.demo_pages (id text PRIMARY KEY, title text, body text);
INSERT INTO public.demo_pages VALUES
  ('pg-runbook', 'Pump runbook', 'If pump 3 overheats: stop it, open valve B, call the on-call engineer.'),
  ('pg-salaries', 'Salaries 2026', 'Confidential: the salary grid of every team.');
SELECT agent.register_resource_table('page', 'public.demo_pages', 'id', 'title', 'body');
GRANT SELECT, UPDATE ON public.demo_pages TO agents_tool;
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  VALUES ('page', 'pg-runbook', 'user:alice', 'edit'), ('page', 'pg-salaries', 'user:alice', 'edit')
  ON CONFLICT DO NOTHING;
DELETE FROM agent.agents WHERE workspace_id = 'demo-worker';
SQL
a=$(q -c "SELECT agent.create_agent('demo-worker', 'alice', 'Plant assistant',
            jsonb_build_object('instructions', 'Answer operators from the plant runbooks.', 'approval_mode', 'none'))")
q -c "UPDATE agent.agents SET scope = scope || jsonb_build_object('llm_url', '$LLM_URL') WHERE id = $a" >/dev/null
q -c "SELECT agent.grant($a, 'page', 'pg-runbook', 'read', 'alice')" >/dev/null
echo "  agent #$a 'Plant assistant' (owner alice) is granted page pg-runbook only; alice can read both pages"
llm_script "" '[{"tool": "search_resources", "input": {"query": "pump"}},
                {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "pg-runbook"}},
                {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "pg-salaries"}},
                {"text": "Stop pump 3, open valve B and call the on-call engineer."}]'
r=$(q -c "SELECT agent.start_run($a, 'alice', '{\"prompt\": \"Pump 3 is overheating, what do I do?\"}', 'autonomous', 'api')")
echo "  run #$r queued (autonomous): \"Pump 3 is overheating, what do I do?\""
for i in $(seq 1 200); do
    st=$(q -c "SELECT status FROM agent.runs WHERE id = $r")
    case "$st" in succeeded|failed|budget_exceeded) break ;; esac
    sleep 0.05
done
echo "  run #$r $st: $(q -c "SELECT coalesce(output->>'text', error) FROM agent.runs WHERE id = $r")"
q -c "SELECT '    ' || lpad(seq::text, 2) || '. ' || rpad(kind, 7) || rpad(coalesce(name, ''), 18) ||
        CASE kind
          WHEN 'llm' THEN coalesce('asks for ' || (SELECT string_agg(c->>'name', ', ') FROM jsonb_array_elements(output->'tool_calls') c),
                                   'answers') || ' (' || tokens || ' tokens)'
          WHEN 'denied' THEN (input->>'resource_id') || ' refused: ' || (output->>'reason') || ' (the model only hears \"access denied\")'
          WHEN 'read' THEN 'read ' || (input->>'resource_id')
          ELSE coalesce(output::text, '') END
      FROM agent.run_steps WHERE run_id = $r ORDER BY seq"
leak=$(llm_requests | grep -c "salary grid" || true)
echo "  requests the model received that contain the refused page's body: $leak"
echo "  audit: $(q -c "SELECT count(*) || ' denied row(s), actor ' || min(actor_kind) || ':' || min(actor_id) FROM agent.audit_log WHERE run_id = $r AND status = 'denied'")"
echo "  tokens: $(q -c "SELECT tokens_in || ' in, ' || tokens_out || ' out' FROM agent.runs WHERE id = $r")"
q -c "DELETE FROM agent.agents WHERE workspace_id = 'demo-worker'; DROP TABLE public.demo_pages" >/dev/null
