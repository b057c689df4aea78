#!/usr/bin/env bash
# The queue under a held snapshot (docs/runs.md, "The queue and long
# transactions"): an executor's cycle per run, as the worker's (claim_runs(10),
# then for each run two steps, add_usage and finish_run; one transaction per
# batch; 2 claimers) over N queued runs (10k; BENCH_SCALE=small: 2k), after
# P runs of earlier traffic (100k; small: 20k) were queued, claimed and
# finished, and VACUUM ran.  Measured
#   1. with nothing else open in the database, and
#   2. with a transaction left open in another session since before that
#      traffic (BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1): its xmin
#      keeps every dead row version of the queue (VACUUM removes nothing),
# each printing the rate, the rate of the last quarter of the runs against
# the first, the dead tuples of agent.runs, the share of HOT updates, the
# queue indexes' size, and the ratios held / free.  The same again with the
# runs spread over W workspaces (1,000; one agent each; the earlier traffic
# and the queued runs in turn across them, as when every tenant's digest
# falls due): the claim of several workspaces, as the worker's in a
# multi-tenant database, under the same held snapshot.  Its own database,
# so that the worker never competes.
. "$PG_AGENTS_ENV"
set -euo pipefail
db=pg_agents_bench_queue
holder_app=pg_agents_bench_queue_holder
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
holder_pid=
cleanup() {
    psql -XAtq -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '$holder_app'" >/dev/null 2>&1 || true
    [ -n "$holder_pid" ] && wait "$holder_pid" 2>/dev/null || true
    psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
}
trap cleanup EXIT
q() { psql -XAtq -d "$db" -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE EXTENSION pg_agents" >/dev/null

N=10000
P=100000
if [ "${BENCH_SCALE:-}" = small ]; then N=2000; P=20000; fi
BATCH=10
CLAIMERS=2
W=1000

q >/dev/null <<SQL
CREATE UNLOGGED TABLE done (claimer int, run_id bigint, at timestamptz DEFAULT clock_timestamp());
SQL

fill() {  # $1: one or many (W workspaces); earlier traffic: P runs queued, claimed, finished (bulk); VACUUM; then N queued
    local ws agent
    if [ "$1" = one ]; then
        ws="'ws'"; agent="1 + i % 4"
    else
        ws="'w' || lpad((1 + i % $W)::text, 4, '0')"; agent="1 + i % $W"
    fi
    q >/dev/null <<SQL
SET client_min_messages = warning;
TRUNCATE agent.runs CASCADE;
TRUNCATE done;
DELETE FROM agent.run_queue_marks WHERE workspace_id <> '';
UPDATE agent.run_queue_marks SET low_id = '-9223372036854775808', next_id = NULL, next_wait = NULL;
DELETE FROM agent.run_queue_returns;
DELETE FROM agent.agents;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap)
SELECT 1 + i % 4, 'ws', 'owner', 'agent ' || i, 100000000 FROM generate_series(0, 3) i WHERE '$1' = 'one'
UNION ALL
SELECT $agent, $ws, 'owner', 'agent ' || i, 100000000 FROM generate_series(0, $W - 1) i WHERE '$1' = 'many';
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT $ws, $agent, 'autonomous', 'api', 'queued', 0 FROM generate_series(1, $P) i;
UPDATE agent.runs SET status = 'running', attempts = 1, started_at = now(), lease_until = now() + interval '5 minutes';
UPDATE agent.runs SET status = 'succeeded', finished_at = now(), lease_until = NULL;
VACUUM ANALYZE agent.runs;
VACUUM ANALYZE agent.agents;
INSERT INTO agent.runs (workspace_id, agent_id, regime, origin, status, priority)
SELECT $ws, $agent, 'autonomous', 'api', 'queued', 0 FROM generate_series(1, $N) i;
ANALYZE agent.runs;
SQL
    # the queue mark where the claims of that traffic would have left it:
    # a candidate, then (its writers ended) the mark; of the one workspace,
    # or of the queue of all workspaces (workspace '', which the claim of
    # several workspaces keeps)
    if [ "$1" = one ]; then ws=ws; else ws=; fi
    q -c "SELECT agent._queue_advance('$ws', '{0}')" >/dev/null
    q -c "SELECT agent._queue_advance('$ws', '{0}')" >/dev/null
    sleep 0.5   # that session's counters are flushed as it exits: then start from zero
    q -c "SELECT pg_stat_reset()" >/dev/null
}
worker() {  # an executor: claim a batch, finish each run, commit
    q -c "DO \$\$
DECLARE k int; r record;
BEGIN
  LOOP
    k := 0;
    FOR r IN SELECT c.id FROM agent.claim_runs($BATCH) c LOOP
      INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status, tokens)
      VALUES (r.id, 1, 'llm', 'model-a', '{}', '{\"text\": \"thinking\"}', 'ok', 50),
             (r.id, 2, 'tool', 'search_resources', '{\"q\": \"x\"}', '{\"rows\": []}', 'ok', 0);
      PERFORM agent.add_usage(r.id, 40, 10, 'model-a');
      PERFORM agent.finish_run(r.id, 'succeeded', '{\"ok\": true}');
      INSERT INTO done (claimer, run_id) VALUES ($1, r.id);
      k := k + 1;
    END LOOP;
    COMMIT;
    EXIT WHEN k = 0;
  END LOOP;
END \$\$" >/dev/null
}
now_ms() { date +%s%3N; }

measure() {  # $1: one or many -> "rate first_quarter_rate last_quarter_rate removed kept hot_pct queue_idx_kB claim_buffers claim_ms"
    fill "$1"
    # one claim of 10 in one session before the executors start (after a
    # first one that plans it; both rolled back): the buffers it touches do not depend on the machine's load
    local probe
    probe=$(q -c "BEGIN" -c "SELECT count(*) FROM agent.claim_runs($BATCH)" -c "ROLLBACK" -c "BEGIN" -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY ON) SELECT count(*) FROM agent.claim_runs($BATCH)" -c "ROLLBACK" |
            awk '/Buffers: shared/ && !b { for (i = 1; i <= NF; i++) if ($i ~ /^hit=/) { sub("hit=", "", $i); b = $i } }
                 /Execution Time/ { t = $3 } END { printf "%s %s", b ? b : 0, t }')
    local t0 t1
    t0=$(now_ms)
    for c in $(seq 1 $CLAIMERS); do worker "$c" & done
    wait
    t1=$(now_ms)
    local n
    n=$(q -c "SELECT count(DISTINCT run_id) FROM done")
    if [ "$n" != "$N" ] || [ "$(q -c "SELECT count(*) FROM agent.runs WHERE status <> 'succeeded'")" != 0 ]; then
        echo "  FAILED: $n of $N runs finished" >&2; exit 1
    fi
    # the quarters by completion order
    local quarters
    quarters=$(q -F' ' -c "WITH o AS (SELECT at, ntile(4) OVER (ORDER BY at) AS qt FROM done),
                                 s AS (SELECT qt, count(*) / greatest(extract(epoch FROM max(at) - min(at)), 0.001) AS rate FROM o GROUP BY qt)
                            SELECT round((SELECT rate FROM s WHERE qt = 1)), round((SELECT rate FROM s WHERE qt = 4))")
    sleep 0.5
    local hot idx dead
    hot=$(q -c "SELECT round(100.0 * n_tup_hot_upd / greatest(n_tup_upd, 1)) FROM pg_stat_user_tables WHERE relid = 'agent.runs'::regclass")
    idx=$(q -c "SELECT (pg_relation_size('agent.runs_queue_idx') + pg_relation_size('agent.runs_queue_ws_idx')) / 1024")
    # what VACUUM finds: row versions dead but kept for an open snapshot
    # (the earlier traffic's included), against those it removed
    dead=$(q -c "VACUUM (VERBOSE) agent.runs" 2>&1 | sed -n 's/.*tuples: \([0-9]*\) removed, [0-9]* remain, \([0-9]*\) are dead but not yet removable.*/\1 \2/p' | head -1)
    echo "$(( N * 1000 / (t1 - t0 + 1) )) $quarters $dead $hot $idx $probe"
}

report() {  # $1: label; then the 9 figures of measure
    local label=$1; shift
    local rate=$1 q1=$2 q4=$3 removed=$4 dead=$5 hot=$6 idx=$7 buf=$8 ms=$9
    printf "  %-19s %6d runs/s (first quarter %6d, last %6d: %.2fx), dead versions VACUUM removed %7d, kept %7d, HOT updates %3d %%, queue indexes %6d kB\n" \
        "$label:" "$rate" "$q1" "$q4" "$(awk -v a="$q4" -v b="$q1" 'BEGIN { printf "%.2f", a / (b ? b : 1) }')" "$removed" "$dead" "$hot" "$idx"
    printf "                      one claim of %d before them: %6d buffers, %6.2f ms\n" "$BATCH" "$buf" "$ms"
}
ratios() {  # $1: label; held rate, free rate, held kept, free kept, held buffers, free buffers
    awk -v l="$1" -v a="$2" -v b="$3" -v c="$4" -v d="$5" -v e="$6" -v f="$7" 'BEGIN {
  printf "  %sone claim, held / free: %.2fx buffers\n", l, e / (f ? f : 1)
  printf "  %sheld / free: %.2fx rate (target >= 0.8x: %s); dead row versions VACUUM had to keep: %d held, %d free (a published SKIP LOCKED queue under a 10-minute transaction: 0.65x rate, 14x dead tuples)\n",
         l, a / b, (a / b >= 0.8) ? "within" : "below", c, d }'
}

read -r f1 < <(measure one | tr ' ' ,)
read -r fm < <(measure many | tr ' ' ,)

# a transaction left open elsewhere in the database, holding its snapshot
# (and so the xmin horizon) for the whole measurement
PGAPPNAME=$holder_app psql -XAtq -d "$db" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT 1" -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
holder_pid=$!
for _ in $(seq 1 50); do
    [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$holder_app' AND backend_xmin IS NOT NULL")" = 1 ] && break
    sleep 0.1
done
read -r h1 < <(measure one | tr ' ' ,)
read -r hm < <(measure many | tr ' ' ,)
psql -XAtq -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '$holder_app'" >/dev/null
wait "$holder_pid" 2>/dev/null || true
holder_pid=

IFS=, read -r free_rate free_q1 free_q4 free_removed free_dead free_hot free_idx free_buf free_ms <<< "$f1"
IFS=, read -r held_rate held_q1 held_q4 held_removed held_dead held_hot held_idx held_buf held_ms <<< "$h1"
IFS=, read -r mfree_rate mfree_q1 mfree_q4 mfree_removed mfree_dead mfree_hot mfree_idx mfree_buf mfree_ms <<< "$fm"
IFS=, read -r mheld_rate mheld_q1 mheld_q4 mheld_removed mheld_dead mheld_hot mheld_idx mheld_buf mheld_ms <<< "$hm"

echo "executor cycle (claim_runs($BATCH); per run 2 steps, add_usage, finish_run; $CLAIMERS claimers) over $N queued runs, after $P runs of earlier traffic and VACUUM:"
echo " one workspace:"
report "nothing else open" $free_rate $free_q1 $free_q4 $free_removed $free_dead $free_hot $free_idx $free_buf $free_ms
report "snapshot held open" $held_rate $held_q1 $held_q4 $held_removed $held_dead $held_hot $held_idx $held_buf $held_ms
ratios "" "$held_rate" "$free_rate" "$held_dead" "$free_dead" "$held_buf" "$free_buf"
echo " $W workspaces (the claim of several workspaces, as the worker's in a multi-tenant database):"
report "nothing else open" $mfree_rate $mfree_q1 $mfree_q4 $mfree_removed $mfree_dead $mfree_hot $mfree_idx $mfree_buf $mfree_ms
report "snapshot held open" $mheld_rate $mheld_q1 $mheld_q4 $mheld_removed $mheld_dead $mheld_hot $mheld_idx $mheld_buf $mheld_ms
ratios "$W workspaces, " "$mheld_rate" "$mfree_rate" "$mheld_dead" "$mfree_dead" "$mheld_buf" "$mfree_buf"
