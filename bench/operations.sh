#!/usr/bin/env bash
# Operations benchmark (docs/operations.md): agent.run_stats over a year of
# history, N runs of 100 agents in 10 workspaces (2 LLM steps each, a retry
# every 20th run), queued evenly over 365 days; agent.queue_status with a
# thousand active runs; agent.worker_status.  Each figure is the median of 5
# calls in one session after a warm-up call (JIT off), beside the plain SQL
# over agent.runs a DBA would write for the same day.
#   N = 1000000 (BENCH_SCALE=small: 100000).
set -euo pipefail
. "$PG_AGENTS_ENV"
n=1000000
[ "${BENCH_SCALE:-}" = small ] && n=100000
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }

t0=$(date +%s)
q -v n="$n" >/dev/null <<'SQL'
SET client_min_messages = warning;
-- the agents' endpoints must be allowed ones (pg_agents.llm_url_allowlist)
SET pg_agents.llm_url_allowlist = 'https://llm0.example.com/v1, https://llm1.example.com/v1';
-- the worker claims nothing meanwhile (the agents name unreachable endpoints)
SELECT agent.pause_worker('bench/operations.sh');
DELETE FROM agent.agents WHERE workspace_id LIKE 'ws-bench-ops-%';
INSERT INTO agent.agents (id, workspace_id, owner_id, name, model, scope)
SELECT 8900000 + a, 'ws-bench-ops-' || (a % 10), 'bench-owner', 'bench ops ' || a, 'model-' || (a % 3),
       jsonb_build_object('llm_url', 'https://llm' || (a % 2) || '.example.com/v1')
  FROM generate_series(1, 100) a;
-- bulk load without the per-row triggers (the rows carry their workspace)
SET session_replication_role = replica;
INSERT INTO agent.runs (id, workspace_id, agent_id, root_run_id, regime, origin, requested_by, status, model,
                        tokens_in, tokens_out, tokens_total, attempts, error, created_at, started_at, finished_at)
SELECT 890000000 + i, 'ws-bench-ops-' || ((1 + i % 100) % 10), 8900001 + i % 100, 890000000 + i, 'autonomous', 'event',
       'bench-owner', s.status, 'model-' || ((1 + i % 100) % 3), 100 + i % 50, 20 + i % 7, 120 + i % 57, 1,
       CASE s.status WHEN 'failed' THEN 'LLM endpoint returned HTTP 503: overloaded' END,
       c.at, c.at + (i % 13) * interval '100 ms', c.at + (i % 13) * interval '100 ms' + (1 + i % 29) * interval '250 ms'
  FROM generate_series(:n, 1, -1) i
 CROSS JOIN LATERAL (SELECT now() - i * (interval '365 days' / :n) - interval '2 minutes' AS at) c
 CROSS JOIN LATERAL (SELECT (ARRAY['succeeded', 'succeeded', 'succeeded', 'succeeded', 'failed', 'succeeded',
                                   'budget_exceeded', 'succeeded', 'cancelled', 'succeeded'])[1 + (i / 7) % 10] AS status) s;
INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, status, tokens, started_at, finished_at)
SELECT r.workspace_id, r.id, k.seq, k.kind, r.model, k.status, 60, r.started_at,
       r.started_at + (k.seq * 100 + r.id % 97) * interval '1 ms'
  FROM agent.runs r
 CROSS JOIN LATERAL (VALUES (1, 'llm', 'ok'), (2, CASE WHEN r.id % 20 = 0 THEN 'error' ELSE 'llm' END,
                             CASE WHEN r.id % 20 = 0 THEN 'retry' ELSE 'ok' END), (3, 'llm', 'ok')) k(seq, kind, status)
 WHERE r.agent_id BETWEEN 8900001 AND 8900100 AND (k.seq < 3 OR r.id % 20 = 0);
-- a thousand active runs for the queue
INSERT INTO agent.runs (id, workspace_id, agent_id, root_run_id, regime, origin, status, priority, created_at, started_at)
SELECT 899000000 + i, 'ws-bench-ops-' || ((1 + i % 100) % 10), 8900001 + i % 100, 899000000 + i, 'autonomous', 'event',
       (ARRAY['queued', 'queued', 'running', 'waiting_approval'])[1 + i % 4], (i % 2) * 10,
       now() - i * interval '1 second', CASE WHEN i % 4 = 2 THEN now() END
  FROM generate_series(1, 1000) i;
RESET session_replication_role;
SQL
q -c "VACUUM ANALYZE agent.runs" -c "VACUUM ANALYZE agent.run_steps" >/dev/null
t1=$(date +%s)
# run_stats' rollup (docs/operations.md): the runs were loaded with their
# past created_at, so it is folded again from scratch, as the ticks would
# (7 days a fold; the worker's ticks fold too meanwhile)
r0=$(date +%s%N)
q -c "SELECT agent.reset_run_rollup()" >/dev/null
for i in $(seq 1 200); do
    [ "$(q -c "SELECT agent._run_rollup_fold()" -c "SELECT coalesce(watermark >= date_trunc('day', now(), 'UTC'), false) FROM agent.run_rollup_state" | tail -1)" = t ] && break
    sleep 0.1
done
r1=$(date +%s%N)

median() {  # label sql — one session, median of 5 after a warm-up
    local t
    t=$(q -c "SET jit = off" -c "$2" -c '\timing on' -c "$2" -c "$2" -c "$2" -c "$2" -c "$2" \
          | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sort -n | sed -n 3p)
    printf '  %-62s %10.2f ms\n' "$1" "$t"
}
runs=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id BETWEEN 8900001 AND 8900100")
steps=$(q -c "SELECT count(*) FROM agent.run_steps")
day=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id BETWEEN 8900001 AND 8900100 AND created_at >= now() - interval '1 day'")
echo "operations bench: $runs runs over 365 days ($day in the last day), $steps steps, 100 agents, 10 workspaces (loaded in $((t1 - t0)) s)"
printf '  %-62s %10.2f ms\n' "rollup folded from scratch (365 days)" "$(( (r1 - r0) / 1000 ))e-3"
echo "  rollup: $(q -c "SELECT count(*) FILTER (WHERE NOT month) || ' day rows, ' || count(*) FILTER (WHERE month) || ' month rows' FROM agent.run_rollup"), watermark $(q -c "SELECT watermark FROM agent.run_rollup_state")"
t=$(q -c "BEGIN" -c "UPDATE agent.run_rollup_state SET watermark = watermark - interval '24 hours'" -c '\timing on' \
      -c "SELECT agent._run_rollup_fold()" -c "COMMIT" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | head -1)
printf '  %-62s %10.2f ms\n' "one day folded (what a tick does after midnight)" "$t"
median "run_stats(), the last day (the default)" "SELECT count(*) FROM agent.run_stats()"
median "plain SQL: runs by agent and model, p50/p95, the last day" \
  "SELECT count(*) FROM (SELECT agent_id, model, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY finished_at - started_at), percentile_cont(0.95) WITHIN GROUP (ORDER BY finished_at - started_at) FROM agent.runs WHERE created_at >= now() - interval '1 day' GROUP BY 1, 2) x"
median "run_stats(now() - interval '7 days')" "SELECT count(*) FROM agent.run_stats(now() - interval '7 days')"
median "run_stats(now() - interval '30 days')" "SELECT count(*) FROM agent.run_stats(now() - interval '30 days')"
median "run_stats(now() - interval '1 year'), every run" "SELECT count(*) FROM agent.run_stats(now() - interval '1 year')"
q >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP ROLE IF EXISTS bench_ops_reader;
CREATE ROLE bench_ops_reader IN ROLE agents_reader;
SELECT agent.bind_reader('bench_ops_reader', 'ws-bench-ops-1');
SQL
median "run_stats(), the last day, as a reader bound to one workspace" \
  "SET ROLE bench_ops_reader; SET pg_agents.workspace = 'ws-bench-ops-1'; SELECT count(*) FROM agent.run_stats(); RESET ROLE"
median "queue_status (1000 active runs)" "SELECT count(*) FROM agent.queue_status"
median "worker_status" "SELECT count(*) FROM agent.worker_status"
q >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT agent.unbind_reader('bench_ops_reader', 'ws-bench-ops-1');
DROP ROLE bench_ops_reader;
SET session_replication_role = replica;
DELETE FROM agent.run_steps WHERE workspace_id LIKE 'ws-bench-ops-%';
DELETE FROM agent.runs WHERE workspace_id LIKE 'ws-bench-ops-%';
RESET session_replication_role;
DELETE FROM agent.agents WHERE workspace_id LIKE 'ws-bench-ops-%';
SELECT agent.resume_worker();
SQL
