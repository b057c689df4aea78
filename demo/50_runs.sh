#!/usr/bin/env bash
# Demo: a run started and claimed, a delegation chain with budgets, a refused
# depth and a refused cycle, an approval requested and approved.
# (In its own database, so that the worker does not pick these runs up.)
. "$PG_AGENTS_ENV"
set -euo pipefail
db=pg_agents_demo_runs
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1' EXIT
q() { psql -XAtq -d "$db" -v ON_ERROR_STOP=1 -F ' | ' "$@"; }
q -c "CREATE EXTENSION pg_agents" >/dev/null

echo "Runs and delegation"
q >/dev/null <<'SQL'
INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, default_token_budget) VALUES
  (1, 'acme', 'alice', 'Incident lead', '[2]', 20000),
  (2, 'acme', 'alice', 'Researcher', '[3]', 5000),
  (3, 'acme', 'alice', 'Writer', '[1]', 2000);
SQL
lead=$(q -c "SELECT agent.start_run(1, 'alice', '{\"message\": \"Prepare the weekly incident digest\"}')")
echo "  alice starts a chat run of 'Incident lead': run $lead, $(q -c "SELECT status FROM agent.runs WHERE id = $lead")"
echo "  an executor claims it: $(q -c "SELECT format('run %s %s, attempt %s, leased until +%s', id, status, attempts, date_trunc('second', lease_until - now())) FROM agent.claim_runs(1)")"

res=$(q -c "SELECT agent.delegate($lead, 2, 'Collect last week''s incidents', '[{\"collection\": \"incidents\"}]', 8000)")
q -c "UPDATE agent.runs SET status = 'running' WHERE id = $res" >/dev/null
echo "  lead delegates to 'Researcher' with 8000 tokens: run $res (depth 1); lead reserves $(q -c "SELECT tokens_reserved FROM agent.runs WHERE id = $lead")"

out=$(q -c "SET pg_agents.max_delegation_depth = 1" -c "SELECT agent.try_delegate($res, 3, 'Write it up') ->> 'error'")
echo "  with max_delegation_depth = 1, Researcher -> Writer is refused: \"$out\""
wri=$(q -c "SELECT agent.try_delegate($res, 3, 'Write the digest', '[]', 3000) ->> 'child_run_id'")
q -c "UPDATE agent.runs SET status = 'running' WHERE id = $wri" >/dev/null
echo "  at the default depth (3) it is accepted: run $wri (depth 2, 3000 tokens)"
out=$(q -c "SELECT agent.try_delegate($wri, 1, 'Ask the lead') ->> 'error'")
echo "  Writer -> Incident lead is refused: \"$out\""

left=$(q -c "SELECT agent.add_usage($wri, 1500, 600, 'demo-model')")
echo "  Writer uses 2100 tokens ($left left); the usage rolls up:"
q -c "SELECT format('    run %s depth %s: tokens_total %s, reserved for children %s', id, depth, tokens_total, tokens_reserved)
        FROM agent.runs WHERE root_run_id = $lead ORDER BY depth"
q -c "SELECT agent.finish_run($wri, 'succeeded', '{\"text\": \"3 incidents, all resolved\"}')" >/dev/null
echo "  Writer succeeds; Researcher's delegate step: $(q -c "SELECT output - 'output' FROM agent.run_steps WHERE run_id = $res AND kind = 'delegate'")"
echo "  its unused 900 tokens return: Researcher reserves $(q -c "SELECT tokens_reserved FROM agent.runs WHERE id = $res")"
q -c "SELECT agent.finish_run($res, 'succeeded')" >/dev/null
echo "  audit: $(q -c "SELECT string_agg(action || '/' || status, ', ' ORDER BY id) FROM agent.audit_log WHERE action = 'run.delegate'")"

echo "Approval"
refused=$({ q -c "SELECT agent.request_approval($lead, 'send_email', '{\"to\": \"ops@acme.io\", \"api_key\": \"sk-live-0123456789abcdefghij\"}')" 2>&1 || true; } | sed -n 's/^ERROR: *//p')
echo "  a call carrying an API key cannot be approved (an approval stores what runs): $refused"
key=$(q -c "SELECT agent.request_approval($lead, 'send_email', '{\"to\": \"ops@acme.io\", \"subject\": \"Weekly digest\"}')")
echo "  the lead wants to send an email: run $lead $(q -c "SELECT status FROM agent.runs WHERE id = $lead"), key ${key:0:16}…"
echo "  stored input (exactly what will run): $(q -c "SELECT input FROM agent.approvals WHERE run_id = $lead")"
same=$(q -c "SELECT agent.approval_key('send_email', '{\"subject\": \"Weekly digest\", \"to\": \"ops@acme.io\"}') = '$key'")
echo "  same call, keys in another order -> same key: $same"
q -c "SELECT agent.approve('$key', 'alice')" >/dev/null
echo "  alice approves: run $lead is $(q -c "SELECT status FROM agent.runs WHERE id = $lead") again"
c1=$(q -c "SELECT agent.consume_approval($lead, 'send_email', '{\"to\": \"ops@acme.io\", \"subject\": \"Weekly digest\"}')")
c2=$(q -c "SELECT agent.consume_approval($lead, 'send_email', '{\"to\": \"ops@acme.io\", \"subject\": \"Weekly digest\"}')")
c3=$(q -c "SELECT agent.consume_approval($lead, 'send_email', '{\"to\": \"all@acme.io\", \"subject\": \"Weekly digest\"}')")
echo "  the executor may send it once: $c1, twice: $c2; another recipient: $c3"
