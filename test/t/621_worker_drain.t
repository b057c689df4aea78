#!/usr/bin/env bash
# SIGTERM drain under load (docs/operations.md, "Stopping the worker"): the
# worker stops claiming, lets the requests in flight finish (their replies
# and tools recorded as usual), requeues the runs it still holds with their
# conversation, and exits; the next worker finishes them.  Reconciled run by
# run: every run succeeds, no step is lost or duplicated (one tool step, two
# LLM steps, seq 1..n without a gap), the drained claim is not counted.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
a=$(mk_agent "drain621")
b=$(mk_agent "drain621b" '{}' none '[]' 10 w621b)   # a second workspace
worker_pid() { q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'"; }
wait_worker() {  # waits for a worker process other than $1
    local i p
    for i in $(seq 1 200); do
        p=$(worker_pid); [ -n "$p" ] && [ "$p" != "$1" ] && { echo "$p"; return 0; }
        sleep 0.05
    done
    return 1
}
setconf() { q "ALTER SYSTEM SET $1 = '$2'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.3; }
log="$PG_AGENTS_DIR/server.log"

# queue_batch TAG N LATENCY: N runs, each a tool call then a slow final answer
# (a call abandoned by a drain consumed that reply: the next one is fast)
queue_batch() {
    local tag=$1 n=$2 lat=$3 i ids=""
    for i in $(seq 1 "$n"); do
        llm_script "[[$tag-$i]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"x\"}}, {\"latency\": $lat, \"text\": \"final $tag-$i\"}, {\"text\": \"final $tag-$i\"}]"
    done
    for i in $(seq 1 "$n"); do
        ids="$ids $(start_run "$([ $((i % 2)) = 0 ] && echo "$a" || echo "$b")" "{\"prompt\": \"drain [[$tag-$i]]\"}")"
    done
    echo "$ids"
}
requests_of() {  # model calls received for runs of a batch
    llm_requests | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin) if "[[%s-" % sys.argv[1] in json.dumps(r["body"])))' "$1"
}
# reconcile TAG IDS...: every run succeeded, once per step
reconcile() {
    local tag=$1; shift
    local list; list=$(echo "$@" | tr ' ' ',')
    is "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($list) AND status = 'succeeded'")" "$#" "$tag: every run succeeded"
    is "$(q "SELECT count(*) FROM agent.runs r WHERE id IN ($list)
               AND r.output->>'text' = 'final ' || substring(r.input->>'prompt' from '\[\[(.*)\]\]')")" "$#" \
       "$tag: each with its own final answer"
    is "$(q "SELECT count(*) FROM agent.runs r WHERE id IN ($list)
               AND (SELECT count(*) FROM agent.run_steps s WHERE s.run_id = r.id AND s.kind = 'tool' AND s.name = 'search_resources') = 1")" "$#" \
       "$tag: the tool was executed exactly once per run"
    is "$(q "SELECT count(*) FROM agent.runs r WHERE id IN ($list)
               AND (SELECT count(*) FROM agent.run_steps s WHERE s.run_id = r.id AND s.kind = 'llm') = 2")" "$#" \
       "$tag: exactly two LLM steps per run (none lost, none duplicated)"
    is "$(q "SELECT count(*) FROM agent.runs r WHERE id IN ($list)
               AND (SELECT max(seq) = count(*) AND min(seq) = 1 FROM agent.run_steps s WHERE s.run_id = r.id)")" "$#" \
       "$tag: step numbers without a gap or a repeat"
    is "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($list) AND attempts = 1")" "$#" \
       "$tag: a drained claim is not counted as an attempt"
    is "$(q "SELECT count(*) FROM agent.run_state WHERE run_id IN ($list)")" "0" "$tag: no state left behind"
}

# 1. SIGTERM (pg_terminate_backend) while 8 runs are in flight: the requests
#    finish within pg_agents.drain_timeout
ids=$(queue_batch d1 24 1.5)
first=$(echo "$ids" | awk '{print $1}')
for i in $(seq 1 200); do
    [ "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($(echo $ids | tr ' ' ',')) AND status = 'running'")" -ge 8 ] && break
    sleep 0.05
done
old=$(worker_pid)
q "SELECT pg_terminate_backend($old)" >/dev/null
for i in $(seq 1 100); do grep -q "pg_agents worker: drained:" "$log" && break; sleep 0.1; done
ok "$(grep -q "pg_agents worker: draining: " "$log" && echo 0)" "the worker logs its drain"
drained=$(grep -o "drained: [0-9]* of [0-9]* runs held" "$log" | tail -n 1)
ok "$([ -n "$drained" ] && echo 0)" "and its end ($drained)"
requeued=$(echo "$drained" | awk '{print $2}')
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'run.requeue' AND target_id::bigint IN ($(echo $ids | tr ' ' ','))")" \
   "$requeued" "each requeued run is audited"
new=$(wait_worker "$old")
ok "$([ -n "$new" ] && echo 0)" "a new worker starts after the drain (pg_terminate_backend restarts it)"
for r in $ids; do wait_status "$r" "succeeded|failed" 60 >/dev/null; done
reconcile d1 $ids
is "$(requests_of d1)" "48" "requests in flight were allowed to finish: no model call was made twice"

# 2. a drain past its time-out: requests still in flight are abandoned, their
#    runs requeued from the last saved conversation; the call is made again
setconf pg_agents.drain_timeout 300ms
ids=$(queue_batch d2 8 4)
for i in $(seq 1 200); do
    [ "$(llm_requests | grep -oF 'final d2' | wc -l)" -ge 0 ] && \
    [ "$(q "SELECT count(*) FROM agent.run_steps WHERE kind = 'tool' AND run_id IN ($(echo $ids | tr ' ' ','))")" -ge 8 ] && break
    sleep 0.05
done
sleep 0.3
old=$(worker_pid)
marks=$(grep -c "pg_agents worker: drained:" "$log")
q "SELECT pg_terminate_backend($old)" >/dev/null
for i in $(seq 1 100); do [ "$(grep -c "pg_agents worker: drained:" "$log")" -gt "$marks" ] && break; sleep 0.1; done
is "$(grep "pg_agents worker: drained:" "$log" | tail -n 1 | grep -o "drained: [0-9]* of [0-9]*")" "drained: 8 of 8" \
   "past pg_agents.drain_timeout every run held goes back to the queue"
is "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($(echo $ids | tr ' ' ',')) AND status = 'queued'")" "8" "they are queued"
new=$(wait_worker "$old")
for r in $ids; do wait_status "$r" "succeeded|failed" 60 >/dev/null; done
reconcile d2 $ids
is "$(requests_of d2)" "24" "the 8 abandoned calls were made again (and recorded once)"
setconf pg_agents.drain_timeout 10s

# 3. a fast shutdown (pg_ctl restart -m fast) drains the same way
ids=$(queue_batch d3 12 1)
for i in $(seq 1 600); do   # up to 30 s: a loaded machine starts them slowly
    [ "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($(echo $ids | tr ' ' ',')) AND status = 'running'")" -ge 8 ] && break
    sleep 0.05
done
marks=$(grep -c "pg_agents worker: drained:" "$log")
"$PG_AGENTS_SRC/tools/cluster.sh" restart "$PG_AGENTS_DIR"
ok "$([ "$(grep -c "pg_agents worker: drained:" "$log")" -gt "$marks" ] && echo 0)" "a fast shutdown drains the worker" ||
    { echo "# running before the restart: $(q "SELECT count(*) FROM agent.runs WHERE id IN ($(echo $ids | tr ' ' ',')) AND status = 'running'")"; tail -5 "$log" | sed 's/^/# /'; }
for r in $ids; do wait_status "$r" "succeeded|failed" 60 >/dev/null; done
reconcile d3 $ids
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'run.reclaim' AND target_id::bigint IN ($(echo $ids | tr ' ' ','))")" "0" \
   "no run had to be reclaimed after the restart"
done_testing
