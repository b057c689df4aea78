#!/usr/bin/env bash
# Run bookkeeping benchmark (docs/runs.md):
#   1. claim_runs throughput: 4 concurrent claimers on N queued runs (100k;
#      BENCH_SCALE=small: 10k), batches of 10, one transaction per batch;
#      every claim is checked (no run claimed twice) and compared with one
#      claimer on a quarter of the runs.
#   2. delegation at depth 5: agent.delegate creating depth-5 children, and
#      agent.add_usage rolling up through 5 ancestors vs on a root run; one
#      transaction per call, as an executor does.
# Runs in its own database so that the worker never competes for the runs.
. "$PG_AGENTS_ENV"
set -euo pipefail
db=pg_agents_bench_runs
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1' EXIT
q() { psql -XAtq -d "$db" -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE EXTENSION pg_agents" >/dev/null

N=100000
if [ "${BENCH_SCALE:-}" = small ]; then N=10000; fi
BATCH=10

fill() {  # queue $1 runs
    q >/dev/null <<SQL
SET client_min_messages = warning;
TRUNCATE agent.runs CASCADE;
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'ws', 1, CASE WHEN i % 4 = 0 THEN 'manual' ELSE 'autonomous' END, 'api', 'queued',
       CASE WHEN i % 4 = 0 THEN 10 ELSE 0 END
  FROM generate_series(1, $1) i;
TRUNCATE claims;
VACUUM ANALYZE agent.runs;
SQL
}
claimer() {
    q -c "DO \$\$
DECLARE k int;
BEGIN
  LOOP
    INSERT INTO claims SELECT $1, c.id FROM agent.claim_runs($BATCH) c;
    GET DIAGNOSTICS k = ROW_COUNT;
    COMMIT;
    EXIT WHEN k = 0;
  END LOOP;
END \$\$" >/dev/null
}
now_ms() { date +%s%3N; }

q >/dev/null <<SQL
INSERT INTO agent.agents (id, workspace_id, owner_id, name, delegation, hourly_run_cap, default_token_budget)
SELECT i, 'ws', 'owner', 'agent ' || i, jsonb_build_array(i + 1), 100000000, 1000000000 FROM generate_series(1, 7) i;
CREATE UNLOGGED TABLE claims (claimer int, run_id bigint);
SQL

# 1. claim throughput
fill $((N / 4))
t0=$(now_ms); claimer 1; t1=$(now_ms)
one=$(( (N / 4) * 1000 / (t1 - t0 + 1) ))

fill $N
t0=$(now_ms)
for c in 1 2 3 4; do claimer $c & done
wait
t1=$(now_ms)
four=$(( N * 1000 / (t1 - t0 + 1) ))
read -r claimed distinct twice <<<"$(q -F' ' -c "SELECT count(*), count(DISTINCT run_id), count(*) - count(DISTINCT run_id) FROM claims")"
per=$(q -c "SELECT string_agg(n::text, '/' ORDER BY claimer) FROM (SELECT claimer, count(*) n FROM claims GROUP BY claimer) s")
attempts=$(q -c "SELECT count(*) FILTER (WHERE attempts <> 1 OR status <> 'running') FROM agent.runs")
echo "claim_runs($BATCH), 4 concurrent claimers on $N queued runs: $four runs/s ($(( t1 - t0 )) ms)"
echo "  claimed $claimed, distinct $distinct, claimed twice: $twice, runs not claimed exactly once: $attempts; per claimer $per"
echo "  1 claimer on $((N / 4)) runs: $one runs/s; 4 claimers / 1 claimer: $(awk -v a="$four" -v b="$one" 'BEGIN { printf "%.2fx", a / b }') (2 shared cores)"
if [ "$twice" != 0 ] || [ "$distinct" != "$N" ] || [ "$attempts" != 0 ]; then
    echo "  FAILED: some run was claimed twice or never" >&2; exit 1
fi

# 2. delegation and roll-up at depth 5
M=2000
if [ "${BENCH_SCALE:-}" = small ]; then M=500; fi
q <<SQL
SET pg_agents.max_delegation_depth = 5;
SET pg_agents.audit_enabled = on;
SET client_min_messages = warning;
TRUNCATE agent.runs CASCADE;
RESET client_min_messages;
DO \$\$
DECLARE
  v_run  bigint;
  v_root bigint;
  v_leaf bigint;
  v_d4   bigint;
  t      timestamptz;
  us_deleg numeric; us_leaf numeric; us_root numeric;
  i int;
BEGIN
  v_root := agent.start_run(1, 'owner', '{}', 'manual', 'api');
  UPDATE agent.runs SET status = 'running', token_budget = 1000000000000 WHERE id = v_root;
  v_run := v_root;
  FOR i IN 2..6 LOOP
    v_run := agent.delegate(v_run, i, 'level ' || (i - 1), '[]', 100000000 * (7 - i));
    UPDATE agent.runs SET status = 'running' WHERE id = v_run;
    IF i = 5 THEN v_d4 := v_run; END IF;
  END LOOP;
  COMMIT;
  v_leaf := v_run;
  -- delegate from depth 4: children at depth 5 (queued, 10 tokens reserved each)
  t := clock_timestamp();
  FOR i IN 1..$M LOOP
    PERFORM agent.delegate(v_d4, 6, 'sub task', '[]', 10);
    COMMIT;
  END LOOP;
  us_deleg := extract(epoch FROM clock_timestamp() - t) * 1e6 / $M;
  t := clock_timestamp();
  FOR i IN 1..$M LOOP
    PERFORM agent.add_usage(v_leaf, 10, 5);
    COMMIT;
  END LOOP;
  us_leaf := extract(epoch FROM clock_timestamp() - t) * 1e6 / $M;
  t := clock_timestamp();
  FOR i IN 1..$M LOOP
    PERFORM agent.add_usage(v_root, 10, 5);
    COMMIT;
  END LOOP;
  us_root := extract(epoch FROM clock_timestamp() - t) * 1e6 / $M;
  IF (SELECT tokens_total FROM agent.runs WHERE id = v_root) <> 2 * $M * 15 THEN
    RAISE EXCEPTION 'roll-up mismatch';
  END IF;
  RAISE NOTICE 'delegate to depth 5: % us/call (checks, child run, reservation, step, audit)', round(us_deleg);
  RAISE NOTICE 'add_usage at depth 5 (rolls up through 5 ancestors): % us/call; on a root run: % us/call; ratio %x',
    round(us_leaf), round(us_root), round(us_leaf / us_root, 2);
  RAISE NOTICE 'root tokens_total = % = % calls x 15 tokens at both ends (checked)',
    (SELECT tokens_total FROM agent.runs WHERE id = v_root), 2 * $M;
END
\$\$;
SQL
