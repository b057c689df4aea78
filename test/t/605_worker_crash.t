#!/usr/bin/env bash
# Worker crash: kill -9 of the worker mid-run, and a server restart mid-run;
# the run is reclaimed and completes (or fails cleanly past max attempts).
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
a=$(mk_agent "crash605")

wait_request() {  # waits until the scripted server received a request for KEY
    local i
    for i in $(seq 1 200); do
        llm_requests | grep -qF "$1" && return 0
        sleep 0.05
    done
    return 1
}
worker_pid() { q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'"; }

# 1. kill -9 of the worker while its LLM call is in flight
llm_script "[[c605a]]" '[{"latency": 3, "text": "lost answer"}, {"text": "after the crash"}]'
r=$(start_run "$a" '{"prompt": "survive [[c605a]]"}')
wait_request "[[c605a]]"
is "$(q "SELECT status FROM agent.runs WHERE id = $r")" "running" "the run is running when the worker dies"
old=$(worker_pid)
kill -9 "$old"
# the postmaster reinitialises after a crashed child; wait until it serves again
for i in $(seq 1 200); do psql -XAtqc "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the run completes after the crash"
is "$(q "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "after the crash" "with the answer of the retried call"
is "$(q "SELECT attempts FROM agent.runs WHERE id = $r")" "2" "claimed twice"
ok "$([ "$(worker_pid)" != "$old" ] && echo 0 || echo 1)" "a new worker process took over"

# 2. a restart of the server while a tool-using run waits on the model
llm_script "[[c605b]]" '[{"tool": "search_resources", "input": {"query": "x"}}, {"latency": 3, "text": "lost"}, {"text": "after restart"}]'
r=$(start_run "$a" '{"prompt": "survive a restart [[c605b]]"}')
for i in $(seq 1 200); do [ "$(llm_requests | grep -oF '[[c605b]]' | wc -l)" -ge 4 ] && break; sleep 0.05; done
"$PG_AGENTS_SRC/tools/cluster.sh" restart "$PG_AGENTS_DIR"
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the run completes after a restart"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND name = 'search_resources'")" "1" \
   "the tool executed before the restart is not executed again (state saved with its effects)"

# 3. past max attempts the run fails cleanly
q "ALTER SYSTEM SET pg_agents.max_attempts = 1" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
llm_script "[[c605c]]" '[{"latency": 3, "text": "lost"}, {"text": "never"}]'
r=$(start_run "$a" '{"prompt": "die [[c605c]]"}')
wait_request "[[c605c]]"
kill -9 "$(worker_pid)"
for i in $(seq 1 200); do psql -XAtqc "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
is "$(wait_status "$r" "succeeded|failed" 60)" "failed" "past max attempts the run fails"
ok "$(q "SELECT error LIKE 'the worker stopped during this run 1 times%' FROM agent.runs WHERE id = $r")" "with a clear error"
q "ALTER SYSTEM RESET pg_agents.max_attempts" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
done_testing
