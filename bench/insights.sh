#!/usr/bin/env bash
# Activity and insights benchmark: one agent with N runs (4 steps each) among
# 10 agents; agent.activity (first page, and a filtered page) and
# agent.insights over 30 days, each against the plain SQL a DBA would write.
#   N = 100000 (BENCH_SCALE=small: 10000).  Figures are medians of 5 calls in one
#   session after a warm-up call (JIT off).
set -euo pipefail
. "$PG_AGENTS_ENV"
n=100000
[ "${BENCH_SCALE:-}" = small ] && n=10000
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }

setup=$(q -v n="$n" <<'SQL'
SET client_min_messages = warning;
DELETE FROM agent.agents WHERE workspace_id = 'ws-bench-ins';
INSERT INTO agent.agents (id, workspace_id, owner_id, name)
SELECT 8800000 + a, 'ws-bench-ins', 'bench-owner', 'bench insights ' || a FROM generate_series(1, 10) a;
INSERT INTO agent.access (agent_id, resource_type, resource_id)
SELECT 8800001, 'page', 'bp' || g FROM generate_series(1, 50) g;
INSERT INTO agent.runs (id, agent_id, root_run_id, regime, origin, requested_by, status, model,
                        tokens_in, tokens_out, tokens_total, created_at, started_at, finished_at)
SELECT 88000000 + i, 8800001 + (i % 10), 88000000 + i, 'autonomous', 'event', 'bench-owner',
       (ARRAY['succeeded', 'succeeded', 'succeeded', 'failed', 'cancelled'])[1 + (i / 10) % 5],
       (ARRAY['model-a', 'model-b'])[1 + (i / 10) % 2], 100 + i % 50, 20 + i % 7, 120 + i % 57,
       now() - (i * interval '26 seconds'), now() - (i * interval '26 seconds') + interval '1 second',
       now() - (i * interval '26 seconds') + interval '9 seconds'
  FROM generate_series(1, :n * 10) i;
SELECT clock_timestamp() AS t0 \gset
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status, tokens)
SELECT r.id, s, (ARRAY['llm', 'read', 'tool', 'llm'])[s], (ARRAY['model-a', 'read_resource', 'search_resources', 'model-a'])[s],
       CASE WHEN s = 2 THEN jsonb_build_object('resource_type', 'page', 'resource_id', 'bp' || (r.id % 60)) ELSE '{}' END,
       CASE WHEN s = 2 THEN jsonb_build_object('resource_type', 'page', 'resource_id', 'bp' || (r.id % 60)) ELSE '{}' END,
       'ok', CASE WHEN s IN (1, 4) THEN 60 ELSE 0 END
  FROM agent.runs r, generate_series(1, 4) s
 WHERE r.agent_id = 8800001;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000) AS steps_ms \gset
-- as many rows once more without the progress trigger (rolled back): what
-- the statement trigger adds to a bulk load of steps
BEGIN;
ALTER TABLE agent.run_steps DISABLE TRIGGER run_steps_progress_insert;
SELECT clock_timestamp() AS t1 \gset
INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status, tokens)
SELECT r.id, 4 + s, 'llm', 'model-a', '{}', '{}', 'ok', 0
  FROM agent.runs r, generate_series(1, 4) s
 WHERE r.agent_id = 8800001;
SELECT round(extract(epoch FROM clock_timestamp() - :'t1'::timestamptz) * 1000) AS plain_ms \gset
ROLLBACK;
ANALYZE agent.runs; ANALYZE agent.run_steps;
\echo :steps_ms :plain_ms
SQL
)
read -r steps_ms plain_ms <<<"$(tail -1 <<<"$setup")"

median() {  # label sql — one session (plans cached, as with a pooled connection), median of 5 after a warm-up
    local t
    t=$(q -c "SET jit = off" -c "$2" -c '\timing on' -c "$2" -c "$2" -c "$2" -c "$2" -c "$2" \
          | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sort -n | sed -n 3p)
    printf '  %-58s %9.2f ms\n' "$1" "$t"
}
runs=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 8800001")
echo "insights bench: $runs runs of the agent (of $(q -c "SELECT count(*) FROM agent.runs WHERE agent_id BETWEEN 8800001 AND 8800010")), 4 steps each"
printf '  %-58s %9d ms (without the progress trigger %d ms: %.2fx)\n' "$(( runs * 4 )) steps in one INSERT (live progress of each run)" \
  "$steps_ms" "$plain_ms" "$(awk -v a="$steps_ms" -v b="$plain_ms" 'BEGIN { printf "%.2f", a / (b ? b : 1) }')"
median "activity, first page (50 runs, steps aggregated)" \
  "SELECT count(*) FROM agent.activity(8800001, 'bench-owner')"
median "plain SQL: last 50 runs of the agent" \
  "SELECT count(*) FROM (SELECT * FROM agent.runs WHERE agent_id = 8800001 ORDER BY created_at DESC LIMIT 50) x"
median "activity, failed runs of the last day" \
  "SELECT count(*) FROM agent.activity(8800001, 'bench-owner', 'failed', since => now() - interval '1 day')"
median "insights, last 30 days (all sections)" \
  "SELECT count(*) FROM agent.insights(8800001, 'bench-owner', now() - interval '30 days')"
median "plain SQL: runs by status over the same 30 days" \
  "SELECT count(*) FROM (SELECT status, count(*) FROM agent.runs WHERE agent_id = 8800001 AND created_at >= now() - interval '30 days' GROUP BY 1) x"
median "view agent.insights, one agent" \
  "SELECT count(*) FROM agent.insights WHERE agent_id = 8800001"
q -c "DELETE FROM agent.agents WHERE workspace_id = 'ws-bench-ins'" >/dev/null
