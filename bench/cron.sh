#!/usr/bin/env bash
# Cron benchmark: agent.tick over N schedule triggers with 1 % due, tick with
# nothing due, and agent.cron_next calls per second.
#   N = 100000 (BENCH_SCALE=small: 10000); target: tick with 1 % due <= 50 ms.
# Each tick is measured inside a rolled-back subtransaction, so every run
# sees the same state; figures are medians.  The benchmark ticks at "now + 1
# day" (its schedules are due then, not now): the worker, which ticks by itself
# at the real now, leaves them alone instead of queuing them under the
# benchmark's feet.
set -euo pipefail
. "$PG_AGENTS_ENV"
n=100000
[ "${BENCH_SCALE:-}" = small ] && n=10000
agents=$((n / 100))
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
# leave nothing behind in the worker's database (the runs its ticks queued
# would otherwise be claimed by the worker during the benchmarks after it)
trap 'q -c "DELETE FROM agent.agents WHERE workspace_id = '"'"'ws-bench-cron'"'"'" >/dev/null 2>&1' EXIT

q -v n="$n" -v agents="$agents" >/dev/null <<'SQL'
SET client_min_messages = warning;
DELETE FROM agent.agents WHERE workspace_id = 'ws-bench-cron';
INSERT INTO agent.agents (id, workspace_id, owner_id, name)
SELECT 4500000 + a, 'ws-bench-cron', 'u1', 'bench cron ' || a FROM generate_series(1, :agents) a;
-- schedules of several shapes and zones; 1 % of them (one per agent) due now
INSERT INTO agent.triggers (agent_id, kind, schedule, timezone, prompt)
SELECT 4500000 + 1 + (i % :agents), 'schedule',
       (ARRAY['0 9 * * 1-5', '*/15 * * * *', '30 2 * * *', '0 0 1 * *', '0 */4 * * *'])[1 + i % 5],
       (ARRAY['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo'])[1 + i % 4],
       'bench ' || i
  FROM generate_series(0, :n - 1) i;
-- not due at now + 1 day (nor now): two days later than computed
UPDATE agent.triggers t SET next_run_at = next_run_at + interval '2 days'
 WHERE t.agent_id BETWEEN 4500001 AND 4500000 + :agents;
UPDATE agent.triggers t SET next_run_at = now() + interval '1 day' - interval '1 minute'
 WHERE t.agent_id BETWEEN 4500001 AND 4500000 + :agents
   AND t.id IN (SELECT min(id) FROM agent.triggers WHERE agent_id BETWEEN 4500001 AND 4500000 + :agents
                GROUP BY agent_id);
VACUUM ANALYZE agent.triggers;
VACUUM ANALYZE agent.agents;
SQL

due=$(q -c "SELECT count(*) FROM agent.triggers WHERE enabled AND kind = 'schedule' AND next_run_at <= now() + interval '1 day'")
total=$(q -c "SELECT count(*) FROM agent.triggers WHERE kind = 'schedule'")

measure() {  # SQL returning an integer, repetitions -> "median_ms value"
    q -v stmt="$1" -v reps="$2" <<'SQL'
SET client_min_messages = warning;
SELECT set_config('bench.stmt', :'stmt', false), set_config('bench.reps', :'reps', false) \g /dev/null
CREATE TEMP TABLE IF NOT EXISTS bench_ms (ms float8, made bigint);
TRUNCATE bench_ms;
DO $$
DECLARE t0 timestamptz; m bigint; ms float8;
BEGIN
  FOR i IN 1 .. current_setting('bench.reps')::int LOOP
    BEGIN
      t0 := clock_timestamp();
      EXECUTE current_setting('bench.stmt') INTO m;
      ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
      RAISE EXCEPTION 'bench rollback';   -- undo it: every repetition sees the same state
    EXCEPTION WHEN raise_exception THEN
      INSERT INTO bench_ms VALUES (ms, m);
    END;
  END LOOP;
END $$;
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2) || ' ' || max(made) FROM bench_ms;
SQL
}

read -r due_ms due_runs < <(measure "SELECT agent.tick(now() + interval '1 day')" 7)
read -r idle_ms idle_runs < <(measure "SELECT agent.tick(now() - interval '1 day')" 21)
# the shared queue alone: the same runs queued straight through agent._enqueue_run
read -r enq_ms enq_runs < <(measure "SELECT count(agent._enqueue_run(t.agent_id, 'autonomous', 'schedule', jsonb_build_object('prompt', t.prompt), t.id, NULL, NULL, NULL)) FROM agent.triggers t WHERE t.enabled AND t.kind = 'schedule' AND t.next_run_at <= now() + interval '1 day'" 7)

cron_rate() {  # expr tz -> calls/s
    q -c "SELECT round(c / extract(epoch FROM d)) FROM (
            SELECT count(agent.cron_next('$1', '2024-01-01'::timestamptz + g * interval '7 minutes', '$2')) AS c,
                   clock_timestamp() - s AS d
              FROM (SELECT clock_timestamp() AS s) x, generate_series(1, 100000) g
             GROUP BY s) r"
}
r_simple=$(cron_rate '0 9 * * 1-5' 'UTC')
r_dst=$(cron_rate '30 2 * * *' 'America/New_York')
r_step=$(cron_rate '*/15 9-17 * * MON-FRI' 'Europe/Paris')
r_rare=$(cron_rate '0 0 29 2 *' 'UTC')

per_run=$(awk -v a="$due_ms" -v b="$idle_ms" -v r="$due_runs" 'BEGIN { if (r > 0) printf "%.1f", (a - b) * 1000 / r; else print "n/a" }')
verdict=$(awk -v a="$due_ms" 'BEGIN { print (a <= 50) ? "within" : "over" }')
echo "schedule triggers: $total, due: $due ($agents agents)"
echo "tick, 1 % due:   $due_ms ms median, $due_runs runs queued  (target <= 50 ms: $verdict, $(awk -v a="$due_ms" 'BEGIN { printf "%.2fx", a / 50 }') of it); ~$per_run us per queued run"
echo "tick, none due:  $idle_ms ms median"
echo "the same $enq_runs runs through agent._enqueue_run alone: $enq_ms ms median (tick / queue alone: $(awk -v a="$due_ms" -v b="$enq_ms" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'))"
echo "cron_next calls/s: $r_simple ('0 9 * * 1-5' UTC), $r_dst ('30 2 * * *' New York), $r_step ('*/15 9-17 * * MON-FRI' Paris), $r_rare ('0 0 29 2 *' UTC)"
[ -n "${BENCH_KEEP:-}" ] || q -c "DELETE FROM agent.agents WHERE workspace_id = 'ws-bench-cron'" >/dev/null
