#!/usr/bin/env bash
# Activity and insights of a demo agent's runs (through the real worker and a
# scripted model), a re-run from Activity, and an assisted draft whose
# proposed access is only what the user's own search found.
. "$PG_AGENTS_ENV"
. "$(dirname "$0")/../test/fixtures/llm.sh"
llm_start
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
echo
echo "== Activity, insights, assisted creation"
q >/dev/null <<SQL
DELETE FROM agent.agents WHERE workspace_id = 'demo-act';
CREATE TABLE IF NOT EXISTS public.demo_act_pages (id text PRIMARY KEY, title text, body text);
INSERT INTO public.demo_act_pages VALUES
  ('pg-runbook', 'Pump runbook', 'Restart the pump, then call Ada.'),
  ('pg-payroll', 'Payroll', 'Salaries of every employee.') ON CONFLICT DO NOTHING;
SELECT agent.register_resource_table('page', 'public.demo_act_pages', 'id', 'title', 'body');
DELETE FROM agent.resource_acl WHERE resource_id IN ('pg-runbook', 'pg-payroll');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('demo-act', 'page', 'pg-runbook', 'workspace', 'read'), ('demo-act', 'page', 'pg-payroll', 'user:hr', 'read');
INSERT INTO agent.agents (id, workspace_id, owner_id, name, instructions, approval_mode, scope)
VALUES (970001, 'demo-act', 'alice', 'Ops helper', 'Answer from the runbook.', 'none',
        jsonb_build_object('llm_url', '$LLM_URL'));
INSERT INTO agent.access (agent_id, resource_type, resource_id) VALUES (970001, 'page', 'pg-runbook');
SELECT agent.share(970001, 'user:bob', 'interact', 'alice');
SELECT agent._assistant_for('demo-act');
UPDATE agent.agents SET scope = jsonb_build_object('llm_url', '$LLM_URL')
 WHERE id = (SELECT agent_id FROM agent.assistants WHERE workspace_id = 'demo-act');
SQL

llm_script "[[d70a]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "pg-runbook"}, "usage": {"in": 120, "out": 14}},
                        {"text": "Restart the pump, then call Ada.", "usage": {"in": 180, "out": 12}}]'
llm_script "[[d70b]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "pg-payroll"}, "usage": {"in": 90, "out": 10}},
                        {"text": "I cannot see the payroll.", "usage": {"in": 110, "out": 9}}]'
llm_script "[[d70c]]" '[{"malformed": true}]'
q -c "SELECT agent.start_run(970001, 'bob', '{\"prompt\": \"How do I restart the pump? [[d70a]]\"}')" >/dev/null
q -c "SELECT agent.start_run(970001, 'alice', '{\"prompt\": \"Summarise the payroll [[d70b]]\"}', 'autonomous', 'api')" >/dev/null
bad=$(q -c "SELECT agent.start_run(970001, 'alice', '{\"prompt\": \"Nightly check [[d70c]]\"}', 'autonomous', 'api')")
wait_idle() {
    for _ in $(seq 1 300); do
        [ "$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = $1 AND status IN ('queued', 'running')")" = 0 ] && return 0
        sleep 0.1
    done
}
wait_idle 970001
rerun=$(q -c "SELECT agent.rerun($bad, 'alice')")
wait_idle 970001

echo "  Activity of 'Ops helper' as its owner alice (full):"
q -F ' | ' -c "SELECT 'run ' || run_id, trigger_label, run_status, coalesce(model, '-'), tokens_in + tokens_out || ' tokens',
                      CASE WHEN cardinality(resources_read) > 0 THEN 'read ' || array_to_string(resources_read, ',') ELSE '' END ||
                      CASE WHEN denied_steps > 0 THEN ' denied ' || denied_steps ELSE '' END ||
                      coalesce(' error: ' || error, '')
                 FROM agent.activity(970001, 'alice') ORDER BY run_id" | sed 's/^/    /'
echo "  as bob (interact) — only his own manual runs: $(q -c "SELECT string_agg('run ' || run_id || ' ' || trigger_label, ', ') FROM agent.activity(970001, 'bob')")"
echo "  as eve (no access): $(q -c "SELECT count(*) FROM agent.activity(970001, 'eve')") rows — the same as for an agent that does not exist"
echo "  steps of the payroll run:"
q -c "SELECT '#' || coalesce(seq::text, '-') || ' ' || summary FROM agent.run_detail(
        (SELECT run_id FROM agent.activity(970001, 'alice') WHERE denied_steps > 0 LIMIT 1), 'alice')" | sed 's/^/    /'
echo "  Insights (full level): $(q -c "SELECT runs || ' runs, ' || succeeded || ' succeeded, ' || failed || ' failed, failure rate ' || failure_rate || ', ' || tokens || ' tokens'
                                         FROM agent.insights(970001, 'alice') WHERE section = 'total'")"
q -c "SELECT '    ' || key || ': granted ' || coalesce(detail ->> 'granted', 'no') || ', read ' || (detail ->> 'reads') || ' time(s) -> ' || (detail ->> 'state')
        FROM agent.insights(970001, 'alice') WHERE section = 'resource'"
echo "  the same figures from SQL: $(q -c "SELECT sum(runs) || ' runs, ' || sum(tokens) || ' tokens' FROM agent.insights WHERE agent_id = 970001")"

echo "  Assisted creation: alice describes 'an agent that answers from the Pump runbook and the Payroll page'"
llm_script "[[d70d]]" '[{"tool": "search_resources", "input": {"query": "pump runbook", "resource_type": "page"}},
  {"tool": "search_resources", "input": {"query": "payroll", "resource_type": "page"}},
  {"text": "{\"name\": \"Runbook answers\", \"instructions\": \"Answer from the runbook.\", \"triggers\": [{\"kind\": \"schedule\", \"schedule\": \"0 8 * * 1-5\", \"prompt\": \"Daily check\"}], \"access\": [{\"resource_type\": \"page\", \"resource_id\": \"pg-runbook\"}, {\"resource_type\": \"page\", \"resource_id\": \"pg-payroll\"}]}"}]'
d=$(q -c "SELECT agent.generate_draft('An agent that answers from the Pump runbook and the Payroll page [[d70d]]', 'alice', 'demo-act')")
for _ in $(seq 1 300); do
    [ "$(q -c "SELECT status FROM agent.runs WHERE id = $d")" = succeeded ] && break; sleep 0.1
done
echo "    proposed access: $(q -c "SELECT string_agg(e ->> 'resource_id', ', ') FROM jsonb_array_elements(agent.draft($d) -> 'draft' -> 'access') e")"
echo "    dropped: $(q -c "SELECT string_agg((e ->> 'resource_id') || ' (' || (e ->> 'reason') || ')', ', ') FROM jsonb_array_elements(agent.draft($d) -> 'dropped') e")"
echo "    new agents of alice before saving: $(q -c "SELECT count(*) FROM agent.agents WHERE owner_id = 'alice' AND workspace_id = 'demo-act' AND id <> 970001")"
new=$(q -c "SELECT agent.create_from_draft(agent.draft($d) -> 'draft', 'alice')")
echo "    create_from_draft -> agent $new, $(q -c "SELECT count(*) || ' trigger(s), ' || count(*) FILTER (WHERE enabled) || ' enabled' FROM agent.triggers WHERE agent_id = $new")"
echo "  Gallery: $(q -c "SELECT string_agg(name, ', ' ORDER BY position) FROM agent.templates")"

q >/dev/null <<SQL
DELETE FROM agent.agents WHERE workspace_id = 'demo-act';
DELETE FROM agent.resource_acl WHERE resource_id IN ('pg-runbook', 'pg-payroll');
SELECT agent.unregister_resource_table('public.demo_act_pages');
DROP TABLE public.demo_act_pages;
SQL
