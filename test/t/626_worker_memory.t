#!/usr/bin/env bash
# Worker: what a pass of the loop allocates outside a transaction is freed
# with the pass.  The loop once ran in TopMemoryContext after its first
# readiness check (PgAgentsWorkerReady left the commit's TopMemoryContext
# current), and each run left its reply's text and stop reason there: some
# 56 bytes a run, never freed.  Here the worker's TopMemoryContext (its own
# blocks, not its children) is read with pg_log_backend_memory_contexts
# after a warm-up and after 300 more runs of two workspaces: it may not have
# grown by more than 4 kB (the leak made it 16 kB or more).  Only a
# superuser may make the worker dump its memory contexts.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
log="$PG_AGENTS_DIR/server.log"

# TopMemoryContext's used bytes of the worker, from the server log
top_used() {
    local pid=$1 from i line
    from=$(wc -c < "$log")
    q "SELECT pg_log_backend_memory_contexts($pid)" >/dev/null
    for i in $(seq 1 200); do
        line=$(tail -c +"$((from + 1))" "$log" | grep -a "\[$pid\] LOG: .*TopMemoryContext: " | head -1)
        if [ -n "$line" ]; then
            sed -E 's/.* ([0-9]+) used.*/\1/' <<<"$line"
            return 0
        fi
        sleep 0.05
    done
    echo "none"
    return 1
}

# N runs of each agent, queued together; prints how many succeeded
runs() {
    local n=$1 ids r ok=0
    ids=$(q "SELECT string_agg(agent._enqueue_run(a, 'autonomous', 'api',
                     jsonb_build_object('prompt', 'go [[m626]] ' || i))::text, ' ')
             FROM generate_series(1, $n) i, (VALUES ($a), ($b)) v(a)")
    for r in $ids; do
        [ "$(wait_status "$r" "succeeded|failed|budget_exceeded|cancelled" 60)" = succeeded ] && ok=$((ok + 1))
    done
    echo "$ok"
}

a=$(mk_agent "mem626a")
b=$(mk_agent "mem626b" '{}' none '[]' 10 w7 owner7)
q "UPDATE agent.agents SET hourly_run_cap = 100000 WHERE id IN ($a, $b)" >/dev/null
llm_script "[[m626]]" '[{"text": "a final answer of some length, kept in the reply", "repeat": true}]'
pid=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'")
ok "$([ -n "$pid" ]; echo $?)" "the worker runs"

# a role with no grants and the application role cannot make the worker dump its contexts
q "DROP ROLE IF EXISTS m626_nogrant; CREATE ROLE m626_nogrant" >/dev/null
for role in m626_nogrant agents_app; do
    out=$(psql -XAtq -c "SET ROLE $role; SELECT pg_log_backend_memory_contexts($pid)" 2>&1)
    ok "$(grep -q 'permission denied' <<<"$out"; echo $?)" "$role may not dump the worker's memory contexts"
done

is "$(runs 50)" "100" "warm-up: 100 runs of two workspaces succeed"
before=$(top_used "$pid")
is "$(runs 150)" "300" "300 more runs succeed"
after=$(top_used "$pid")
is "$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'")" "$pid" "the same worker ran them"
diag "worker TopMemoryContext used: $before bytes after the warm-up, $after after 300 more runs"
ok "$([[ "$before" =~ ^[0-9]+$ && "$after" =~ ^[0-9]+$ ]] && [ $((after - before)) -le 4096 ]; echo $?)" \
   "the worker's TopMemoryContext did not grow with the runs ($before -> $after bytes)"
q "DROP ROLE m626_nogrant" >/dev/null
done_testing
