#!/usr/bin/env bash
# The claim across many workspaces (docs/runs.md, "Fair claiming"): the cost
# of agent.claim_runs(16), as the worker calls it (a session bound to no
# workspace), with 3 runs queued in each of W workspaces (the morning when
# every tenant's daily digest falls due), W = 100, 1,000, 10,000 and 100,000
# (BENCH_SCALE=small: up to 10,000).  Each claim is its own transaction and
# its runs are finished before the next, as a worker's would be; the median
# and p90 of 30 claims.  Beside it, fairness at the claim: workspace A with
# 10,000 queued runs and 16 running, then a lone run of workspace B queued
# last; the place of B's run in the next claim (1: served first) and that
# claim's time; and the claim's time when A's backlog is ahead of the
# largest W's heads.  Its own
# database, so that the worker never competes.
. "$PG_AGENTS_ENV"
set -euo pipefail
db=pg_agents_bench_claim
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
cleanup() { psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true; }
trap cleanup EXIT
q() { psql -XAtq -d "$db" -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE EXTENSION pg_agents" >/dev/null

sizes="100 1000 10000 100000"
if [ "${BENCH_SCALE:-}" = small ]; then sizes="100 1000 10000"; fi
CLAIMS=30

q >/dev/null <<'SQL'
CREATE UNLOGGED TABLE claim_ms (ms float8);
CREATE PROCEDURE bench_claims(k int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
  FOR i IN 1 .. k LOOP
    t0 := clock_timestamp();
    PERFORM count(*) FROM agent.claim_runs(16);
    INSERT INTO claim_ms VALUES (extract(epoch FROM clock_timestamp() - t0) * 1000);
    UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL WHERE status = 'running';
    COMMIT;
  END LOOP;
END $$;
SQL

fill() {  # W workspaces, one agent each, 3 runs queued each (workspace by workspace)
    q >/dev/null <<SQL
SET client_min_messages = warning;
TRUNCATE agent.runs CASCADE;
DELETE FROM agent.run_queue_marks WHERE workspace_id <> '';
UPDATE agent.run_queue_marks SET low_id = '-9223372036854775808', next_id = NULL, next_wait = NULL;
DELETE FROM agent.run_queue_returns;
DELETE FROM agent.agents;
TRUNCATE claim_ms;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap)
SELECT i, 'ws' || i, 'owner', 'agent ' || i, 100000000 FROM generate_series(1, $1) i;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap)
VALUES (1000001, 'bench_a', 'owner', 'agent a', 100000000), (1000002, 'bench_b', 'owner', 'agent b', 100000000);
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'ws' || i, i, 'autonomous', 'api', 'queued', 0 FROM generate_series(1, $1) i, generate_series(1, 3) j ORDER BY i, j;
VACUUM ANALYZE agent.runs;
VACUUM ANALYZE agent.agents;
SQL
}

fairness() {  # $1: label; A's backlog (16 running, 10,000 queued), then B's lone run, then one claim
    q >/dev/null <<SQL
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority, attempts, started_at, lease_until)
SELECT 'bench_a', 1000001, 'autonomous', 'api', 'running', 0, 1, now(), now() + interval '5 minutes' FROM generate_series(1, 16);
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT 'bench_a', 1000001, 'autonomous', 'api', 'queued', 0 FROM generate_series(1, 10000);
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
VALUES ('bench_b', 1000002, 'autonomous', 'api', 'queued', 0);
ANALYZE agent.runs;
SQL
    read -r pos ms < <(q -F' ' <<'SQL' | tail -1
BEGIN;
-- (a claim first, rolled back: the session's first call plans the function)
SAVEPOINT warm;
SELECT count(*) FROM agent.claim_runs(16);
ROLLBACK TO warm;
CREATE TEMP TABLE got ON COMMIT DROP AS SELECT 0 AS ord, 0::float8 AS ms WHERE false;
DO $$
DECLARE t0 timestamptz := clock_timestamp(); v_pos int;
BEGIN
  SELECT min(c.ord) INTO v_pos FROM (SELECT r.workspace_id, row_number() OVER () AS ord FROM agent.claim_runs(16) r) c
   WHERE c.workspace_id = 'bench_b';
  INSERT INTO got VALUES (coalesce(v_pos, 0), extract(epoch FROM clock_timestamp() - t0) * 1000);
END $$;
SELECT ord, round(ms::numeric, 2) FROM got;
ROLLBACK;
SQL
)
    printf "  fairness: a lone run of B queued after A's 10,000 (A 16 running)%s: claimed in place %s of 16 (0: not claimed), claim %7.2f ms\n" "$1" "$pos" "$ms"
}

fill 0
fairness ""

for w in $sizes; do
    fill "$w"
    q -c "CALL bench_claims($CLAIMS)" >/dev/null
    read -r med p90 < <(q -F' ' -c "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
                                           round(percentile_cont(0.9) WITHIN GROUP (ORDER BY ms)::numeric, 2) FROM claim_ms")
    printf "  claim_runs(16), %6d workspaces with 3 queued runs each: median %7.2f ms, p90 %7.2f ms\n" "$w" "$med" "$p90"
done
# a backlog of one workspace ahead of all the others' heads, at the largest size
fairness ", $w workspaces' runs queued before them (older heads go first)"
