#!/usr/bin/env bash
# Worker: fair claiming through the real worker.  A workspace that queues
# many runs does not make a lone run of another workspace wait behind them;
# no run is claimed twice; pg_agents.max_runs_per_workspace holds for the
# worker's runs (at no moment more than the cap of one workspace running).
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "ALTER SYSTEM SET pg_agents.max_concurrent_runs = 4" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
trap 'llm_stop; q "ALTER SYSTEM RESET pg_agents.max_concurrent_runs" >/dev/null; q "ALTER SYSTEM RESET pg_agents.max_runs_per_workspace" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null' EXIT
sleep 0.3

a=$(mk_agent "busy609" '{}' none '[]' 10 w609a owner609)
b=$(mk_agent "lone609" '{}' none '[]' 10 w609b owner609)
q "UPDATE agent.agents SET hourly_run_cap = 100000 WHERE id = $a" >/dev/null
llm_script "[[f609a]]" '[{"text": "busy", "latency": 0.3, "repeat": true}]'
llm_script "[[f609b]]" '[{"text": "lone", "latency": 0.15, "repeat": true}]'

# 1. 60 runs of workspace a queued in one transaction, then one run of b
q "SELECT count(agent._enqueue_run($a, 'autonomous', 'api', '{\"prompt\": \"go [[f609a]]\"}'::jsonb)) FROM generate_series(1, 60)" >/dev/null
rb=$(start_run "$b" '{"prompt": "go [[f609b]]"}')
is "$(wait_status "$rb" "succeeded|failed" 60)" "succeeded" "the lone run of workspace b succeeds"
ahead=$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a AND started_at < (SELECT started_at FROM agent.runs WHERE id = $rb)")
left=$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a AND (started_at IS NULL OR started_at >= (SELECT started_at FROM agent.runs WHERE id = $rb))")
diag "runs of workspace a started before b's: $ahead (of 60), after it: $left"
# the worker holds 4 runs at once: b's run is claimed at the first claim
# after it was queued (a first-come queue would start all 60 first)
ok "$([ "$ahead" -le 12 ] && echo 0 || echo 1)" "b's run is not queued behind workspace a's 60 runs (at most three claims of a before it)"
for i in $(seq 1 1200); do
    [ "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a AND status IN ('succeeded', 'failed')")" -ge 60 ] && break
    sleep 0.05
done
is "$(q "SELECT count(*) FILTER (WHERE status = 'succeeded') || '/' || count(*) FILTER (WHERE attempts = 1) FROM agent.runs WHERE agent_id IN ($a, $b)")" \
   "61/61" "every run succeeds, claimed once"
is "$(q "SELECT count(*) FROM agent.run_steps s JOIN agent.runs r ON r.id = s.run_id WHERE r.agent_id IN ($a, $b) AND s.kind = 'llm'")" \
   "61" "one llm step per run (none run twice)"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'run.claim' AND target_id IN (SELECT id::text FROM agent.runs WHERE agent_id IN ($a, $b))")" \
   "61" "one run.claim audit row per run"

# 2. the cap: 2 runs of a workspace at once, the worker's 4 slots shared
q "ALTER SYSTEM SET pg_agents.max_runs_per_workspace = 2" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.3
t0=$(q "SELECT max(id) FROM agent.runs")
q "SELECT count(agent._enqueue_run($a, 'autonomous', 'api', '{\"prompt\": \"go [[f609a]]\"}'::jsonb)) FROM generate_series(1, 12)" >/dev/null
q "SELECT count(agent._enqueue_run($b, 'autonomous', 'api', '{\"prompt\": \"go [[f609b]]\"}'::jsonb)) FROM generate_series(1, 6)" >/dev/null
for i in $(seq 1 1200); do
    [ "$(q "SELECT count(*) FROM agent.runs WHERE id > $t0 AND status IN ('succeeded', 'failed')")" -ge 18 ] && break
    sleep 0.05
done
is "$(q "SELECT count(*) FROM agent.runs WHERE id > $t0 AND status = 'succeeded' AND attempts = 1")" "18" \
   "with the cap, every run succeeds, claimed once"
# The worker records ends and claims in separate transactions, one after the
# other: a run was running during the claim of another when it started
# (now() of its claim) no later than that claim and ended (now() of its
# batch) after it.  The most runs of one workspace running at one claim:
is "$(q "SELECT string_agg(workspace_id || ':' || m, ' ' ORDER BY workspace_id) FROM (
           SELECT x.workspace_id, max((SELECT count(*) FROM agent.runs y
                                        WHERE y.id > $t0 AND y.workspace_id = x.workspace_id
                                          AND y.started_at <= x.started_at AND y.finished_at > x.started_at)) AS m
             FROM agent.runs x WHERE x.id > $t0 GROUP BY x.workspace_id) s")" \
   "w609a:2 w609b:2" "never more than 2 runs of a workspace running at once, and the cap is reached"
done_testing
