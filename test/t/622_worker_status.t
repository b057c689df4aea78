#!/usr/bin/env bash
# The status views during a mixed workload, against figures computed from
# the tables and from the worker itself (docs/operations.md, "Monitoring"),
# and the run log of pg_agents.log_runs: its line format, field by field
# against the run's row, errors only / all, nothing of a rolled-back finish,
# no content.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
errf=$(mktemp)   # stderr of the refused calls; removed at the end
llm_start
setconf() { q "ALTER SYSTEM SET $1 = '$2'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.3; }
worker_pid() { q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'"; }
log="$PG_AGENTS_DIR/server.log"
a=$(mk_agent "status622")
b=$(mk_agent "status622b" '{}' all '[]' 10 w622)        # every tool call waits for approval
psql -XAtq -c "SET client_min_messages = warning; DROP ROLE IF EXISTS s622_app; DROP ROLE IF EXISTS s622_nobody;
               CREATE ROLE s622_app IN ROLE agents_app; CREATE ROLE s622_nobody" >/dev/null
idle=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name) VALUES ('w622', 'owner6', 'idle622') RETURNING id")  # no endpoint: never claimed

# 1. worker_status: the worker's own figures
wpid=$(worker_pid)
is "$(q "SELECT pid = $wpid AND database = current_database() AND state = 'running' FROM agent.worker_status")" "t" \
   "agent.worker_status: pid, database, state of the running worker"
ok "$(q "SELECT last_tick > now() - interval '5 seconds' AND started_at <= now() FROM agent.worker_status")" "it ticks"
r0=$(q "SELECT restarts FROM agent.worker_status")

# the last error of the worker: a unit of work that fails (a trigger refuses
# the run's steps) fails its run, is shown redacted, and the worker lives on
q "CREATE FUNCTION public.boom622() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
     IF NEW.name = 'boom622b' THEN RAISE EXCEPTION 'boom622b refused'; END IF;
     IF NEW.name = 'boom622' THEN RAISE EXCEPTION 'boom622 refused, Authorization: Bearer sk-live-0123456789abcdefghijklmnopqrstuvwxyz'; END IF;
     RETURN NEW; END \$\$;
   CREATE TRIGGER boom622 BEFORE INSERT ON agent.run_steps FOR EACH ROW EXECUTE FUNCTION public.boom622()" >/dev/null
plain=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name, model, scope)
          VALUES ('w6', 'owner6', 'boom622b', 'boom622b', jsonb_build_object('llm_url', '$LLM_URL')) RETURNING id")
llm_script "[[s622-boomb]]" '[{"text": "never recorded"}]'
pr=$(start_run "$plain" '{"prompt": "boom [[s622-boomb]]"}')
is "$(wait_status "$pr" "failed" 30)" "failed" "a unit of work that fails fails its run"
ok "$(q "SELECT last_error LIKE '% failed: SQLSTATE P0001' FROM agent.worker_status")" "agent.worker_status shows the last error: what failed and its SQLSTATE"
ok "$(q "SELECT last_error NOT LIKE '%boom622b%' FROM agent.worker_status")" "never the message, which may quote a workspace's content (issue 30; the server log has it)"
is "$(worker_pid)" "$wpid" "the worker lives on"
boom=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name, model, scope)
          VALUES ('w6', 'owner6', 'boom622', 'boom622', jsonb_build_object('llm_url', '$LLM_URL')) RETURNING id")
llm_script "[[s622-boom]]" '[{"text": "never recorded"}]'
br=$(start_run "$boom" '{"prompt": "boom [[s622-boom]]"}')
is "$(wait_status "$br" "failed" 30)" "failed" "another one"
ok "$(q "SELECT error LIKE 'internal error of the worker: boom622 refused%' FROM agent.runs WHERE id = $br")" "with the error"
ok "$(q "SELECT last_error LIKE '% failed: SQLSTATE P0001' AND last_error NOT LIKE '%sk-live%' AND last_error NOT LIKE '%boom622%'
                  AND last_error_at > now() - interval '1 minute'
           FROM agent.worker_status")" "agent.worker_status shows the last error, without its message, and when"
is "$(worker_pid)" "$wpid" "the worker still lives on"
q "DROP TRIGGER boom622 ON agent.run_steps; DROP FUNCTION public.boom622(); DELETE FROM agent.agents WHERE name IN ('boom622', 'boom622b')" >/dev/null

# 2. a mixed workload: two slow calls take both slots, more runs wait in the
#    queue, one run waits for an approval, one for nobody (no endpoint)
setconf pg_agents.max_concurrent_runs 2
llm_script "[[s622-appr]]" '[{"tool": "search_resources", "input": {"query": "q"}}]'
appr=$(start_run "$b" '{"prompt": "approve me [[s622-appr]]"}')
wait_status "$appr" "waiting_approval" 30 >/dev/null
llm_script "[[s622-fail]]" '[{"status": 400}]'
fail=$(start_run "$a" '{"prompt": "fail [[s622-fail]]"}')
wait_status "$fail" "failed" 30 >/dev/null
llm_script "[[s622-slow1]]" '[{"latency": 4, "text": "slow"}]'
llm_script "[[s622-slow2]]" '[{"latency": 4, "text": "slow"}]'
s1=$(start_run "$a" '{"prompt": "slow [[s622-slow1]]"}' manual)
s2=$(start_run "$a" '{"prompt": "slow [[s622-slow2]]"}')
for i in $(seq 1 200); do [ "$(llm_requests | grep -c 's622-slow')" -ge 1 ] && \
    [ "$(llm_requests | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin) if "s622-slow" in json.dumps(r["body"])))')" -ge 2 ] && break; sleep 0.05; done
for i in 1 2 3; do start_run "$a" "{\"prompt\": \"later [[s622-q$i]]\"}" >/dev/null; done
q "SELECT agent._enqueue_run($idle, 'autonomous', 'api', '{}'::jsonb)" >/dev/null
is "$(q "SELECT slots_in_use || '/' || max_concurrent_runs || ' llm=' || llm_requests_in_flight FROM agent.worker_status")" \
   "2/2 llm=2" "agent.worker_status: both slots in use, two LLM requests in flight"

# the views and the tables in one snapshot
cmp_queue="
  WITH direct AS (
    SELECT workspace_id, priority,
           count(*) FILTER (WHERE status = 'queued') AS queued, count(*) FILTER (WHERE status = 'running') AS running,
           count(*) FILTER (WHERE status = 'waiting_approval') AS wa, count(*) FILTER (WHERE status = 'waiting_input') AS wi,
           count(*) FILTER (WHERE status = 'waiting_children') AS wc,
           min(created_at) FILTER (WHERE status = 'queued') AS oldest,
           count(*) FILTER (WHERE started_at >= now() - interval '1 minute') AS started,
           count(*) FILTER (WHERE finished_at >= now() - interval '1 minute') AS finished
      FROM agent.runs
     WHERE status IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')
        OR started_at >= now() - interval '1 minute' OR finished_at >= now() - interval '1 minute'
     GROUP BY 1, 2)
  SELECT count(*) FROM direct d FULL JOIN agent.queue_status v USING (workspace_id, priority)
   WHERE (d.queued, d.running, d.wa, d.wi, d.wc, d.oldest, d.started, d.finished)
         IS DISTINCT FROM (v.queued, v.running, v.waiting_approval, v.waiting_input, v.waiting_children,
                           v.oldest_queued_at, v.started_last_minute, v.finished_last_minute)"
is "$(psql -XAtq -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "$cmp_queue" -c "COMMIT")" "0" \
   "agent.queue_status equals the figures computed from agent.runs (mixed workload, one snapshot)"
is "$(q "SELECT sum(queued) || ' ' || sum(running) || ' ' || sum(waiting_approval) FROM agent.queue_status WHERE workspace_id = 'w622'")" \
   "1 0 1" "w622: the idle run queued, one run waiting for approval"
is "$(q "SELECT sum(queued) || ' ' || sum(running) FROM agent.queue_status WHERE workspace_id = 'w6'")" "3 2" \
   "w6: three queued behind two running"
is "$(psql -XAtq -c "SET ROLE s622_app" -c "SET pg_agents.workspace = 'w622'" \
          -c "SELECT string_agg(DISTINCT workspace_id, ' ') || ':' || sum(queued) || ':' || sum(waiting_approval) FROM agent.queue_status")" "w622:1:1" \
   "the application sees its session's workspace only"
psql -XAtq -c "SET ROLE s622_nobody" -c "SET pg_agents.workspace = 'w622'" -c "SELECT count(*) FROM agent.queue_status" 2>"$errf" >/dev/null
ok "$(grep -q "permission denied for view queue_status" "$errf" && echo 0)" "a role with no grant reads no queue status"
psql -XAtq -c "SET ROLE s622_app" -c "SELECT count(*) FROM agent.worker_status" 2>"$errf" >/dev/null
ok "$(grep -q "permission denied for view worker_status" "$errf" && echo 0)" "nor does the application read the worker status"

for r in $s1 $s2; do wait_status "$r" "succeeded" 30 >/dev/null; done
# the percentiles are run_stats' histogram quantiles (agent._hist_quantile,
# docs/operations.md), computed here from the rows themselves
cmp_stats="
  WITH direct AS (
    SELECT r.agent_id, coalesce(r.model, '-') AS model, count(*) AS runs, sum((r.status = 'succeeded')::int) AS ok,
           sum((r.status = 'failed')::int) AS failed,
           agent._hist_quantile(agent._hist(date_part('epoch', r.finished_at - r.started_at) * 1000), 0.95) AS d95,
           max(extract(epoch FROM r.started_at - r.created_at) * 1000) AS qmax,
           sum(r.tokens_in) AS tin, sum(r.tokens_out) AS tout
      FROM agent.runs r WHERE r.created_at >= now() - interval '1 hour' GROUP BY 1, 2),
  steps AS (
    SELECT r.agent_id, coalesce(r.model, '-') AS model,
           agent._hist_quantile(agent._hist(date_part('epoch', s.finished_at - s.started_at) * 1000)
                                 FILTER (WHERE s.kind = 'llm'), 0.5) AS l50,
           sum((s.kind = 'error' AND s.status = 'retry')::int) AS retries
      FROM agent.runs r JOIN agent.run_steps s ON s.run_id = r.id
     WHERE r.created_at >= now() - interval '1 hour' GROUP BY 1, 2),
  v AS (SELECT agent_id, coalesce(model, '-') AS model, sum(runs) runs, sum(succeeded) ok, sum(failed) failed, max(duration_p95_ms) d95,
               max(queue_max_ms) qmax, sum(tokens_in) tin, sum(tokens_out) tout, max(llm_p50_ms) l50,
               sum(retries) retries
          FROM agent.run_stats(now() - interval '1 hour') GROUP BY 1, 2)
  SELECT count(*) FROM direct d LEFT JOIN steps s USING (agent_id, model) FULL JOIN v USING (agent_id, model)
   WHERE (d.runs, d.ok, d.failed, round(d.d95::numeric, 3), round(d.qmax::numeric, 3), d.tin, d.tout,
          round(s.l50::numeric, 3), coalesce(s.retries, 0))
         IS DISTINCT FROM (v.runs, v.ok, v.failed, round(v.d95::numeric, 3), round(v.qmax::numeric, 3), v.tin, v.tout,
                           round(v.l50::numeric, 3), v.retries)"
is "$(psql -XAtq -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "$cmp_stats" -c "COMMIT")" "0" \
   "agent.run_stats equals the figures computed from agent.runs and agent.run_steps"
is "$(q "SELECT string_agg(DISTINCT provider || '@' || coalesce(endpoint_host, '-'), ',')
           FROM agent.run_stats(now() - interval '1 hour') WHERE agent_id IN ($a, $b, $idle)")" "openai@-,openai@127.0.0.1" \
   "provider and endpoint host of the agents' scope (host only; none for an agent without an endpoint)"
is "$(q "SELECT error_code FROM agent.run_metrics WHERE run_id = $fail")" "llm_http_400" "the failed run's error code"
setconf pg_agents.max_concurrent_runs 8

# 3. restarts and crash resets are counted (and kept over a crash reset)
q "SELECT pg_terminate_backend($wpid)" >/dev/null
for i in $(seq 1 200); do p=$(worker_pid); [ -n "$p" ] && [ "$p" != "$wpid" ] && break; sleep 0.05; done
for i in $(seq 1 100); do [ "$(q "SELECT state FROM agent.worker_status")" = running ] && break; sleep 0.05; done
is "$(q "SELECT restarts FROM agent.worker_status")" "$((r0 + 1))" "a restart of the worker is counted"
z0=$(q "SELECT shmem_resets FROM agent.worker_status")
kill -9 "$(worker_pid)"
for i in $(seq 1 200); do psql -XAtqc "SELECT 1" >/dev/null 2>&1 && [ -n "$(worker_pid)" ] && break; sleep 0.1; done
for i in $(seq 1 100); do [ "$(q "SELECT state FROM agent.worker_status")" = running ] && break; sleep 0.05; done
is "$(q "SELECT restarts || ' ' || shmem_resets FROM agent.worker_status")" "$((r0 + 2)) $((z0 + 1))" \
   "a crash is counted, and the count of restarts survives the reset of shared memory"

# 4. the run log
line_of() { grep -a "pg_agents run: run_id=$1 " "$log"; }
fmt='^.* LOG:  pg_agents run: run_id=([0-9]+) workspace=([^ ]+|"[^"]*") agent_id=([0-9]+) origin=([a-z]+) trigger_id=([0-9]+|-) status=([a-z_]+) duration_ms=([0-9]+|-) queue_ms=([0-9]+|-) tokens_in=([0-9]+) tokens_out=([0-9]+) tokens_total=([0-9]+) attempts=([0-9]+) error_code=([a-z0-9_]+|-)$'
ok "$([ -z "$(line_of "$fail")" ] && echo 0)" "off by default: no line"
setconf pg_agents.log_runs errors
llm_script "[[s622-l1]]" '[{"text": "fine zebra-622-content"}]'
llm_script "[[s622-l2]]" '[{"status": 503, "repeat": true}]'
l1=$(start_run "$a" '{"prompt": "log me [[s622-l1]] zebra-622-content"}')
l2=$(start_run "$a" '{"prompt": "log me [[s622-l2]] zebra-622-content"}')
wait_status "$l1" succeeded 30 >/dev/null; wait_status "$l2" failed 60 >/dev/null
sleep 0.3
ok "$([ -z "$(line_of "$l1")" ] && echo 0)" "errors: a succeeded run is not logged"
is "$(line_of "$l2" | wc -l)" "1" "errors: a failed run is logged once"
ok "$(line_of "$l2" | grep -Eq "$fmt" && echo 0)" "the line has the documented format"
want=$(q "SELECT format('run_id=%s workspace=%s agent_id=%s origin=%s trigger_id=- status=%s duration_ms=%s queue_ms=%s tokens_in=%s tokens_out=%s tokens_total=%s attempts=%s error_code=%s',
                        id, workspace_id, agent_id, origin, status,
                        floor(extract(epoch FROM finished_at - started_at) * 1000)::bigint,
                        floor(extract(epoch FROM started_at - created_at) * 1000)::bigint,
                        tokens_in, tokens_out, tokens_total, attempts, agent.run_error_code(error))
            FROM agent.runs WHERE id = $l2")
is "$(line_of "$l2" | sed 's/^.* LOG:  pg_agents run: //')" "$want" "each field is the run's (error code llm_http_503)"
ok "$(! grep -a "pg_agents run: " "$log" | grep -q "zebra-622\|scripted status" && echo 0)" "no content: neither the prompt, the answer nor the error text"

setconf pg_agents.log_runs all
llm_script "[[s622-l3]]" '[{"text": "fine"}]'
l3=$(start_run "$a" '{"prompt": "log me [[s622-l3]]"}')
wait_status "$l3" succeeded 30 >/dev/null; sleep 0.3
ok "$(line_of "$l3" | grep -Eq "$fmt" && line_of "$l3" | grep -q "status=succeeded .* error_code=-$" && echo 0)" \
   "all: a succeeded run is logged (error_code -)"

# a finish that rolls back logs nothing; one in a rolled-back savepoint neither
# (the worker is paused meanwhile: it would claim and fail these runs, whose
# agent has no endpoint)
q "SELECT agent.pause_worker('622: runs ended by hand')" >/dev/null
i1=$(q "SELECT agent._enqueue_run($idle, 'autonomous', 'api', '{}'::jsonb)")
i2=$(q "SELECT agent._enqueue_run($idle, 'autonomous', 'api', '{}'::jsonb)")
q "BEGIN; SELECT agent.finish_run($i1, 'cancelled'); ROLLBACK;" >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 -c "BEGIN" -c "SAVEPOINT s" -c "SELECT agent.finish_run($i1, 'cancelled')" \
     -c "ROLLBACK TO SAVEPOINT s" -c "SAVEPOINT t" -c "SELECT agent.finish_run($i2, 'failed', NULL, 'LLM request timed out after 1 ms')" \
     -c "RELEASE SAVEPOINT t" -c "COMMIT" >/dev/null
sleep 0.2
ok "$([ -z "$(line_of "$i1")" ] && echo 0)" "a rolled-back finish (transaction or savepoint) is not logged"
ok "$(line_of "$i2" | grep -Eq "$fmt" && line_of "$i2" | grep -q "status=failed duration_ms=- queue_ms=- .* error_code=llm_timeout$" && echo 0)" \
   "a finish in a released savepoint is logged at commit (never started: duration -)"
ok "$(! grep -a -A1 "pg_agents run: run_id=$i2 " "$log" | grep -q "STATEMENT:" && echo 0)" \
   "without the statement that ended the run (no STATEMENT line)"
# a workspace id cannot break the line or forge a field
q "INSERT INTO agent.agents (workspace_id, owner_id, name) VALUES (E'w x\"1\nstatus=succeeded', 'o', 'odd622')" >/dev/null
odd=$(q "SELECT agent._enqueue_run((SELECT id FROM agent.agents WHERE name = 'odd622'), 'autonomous', 'api', '{}'::jsonb)")
q "SELECT agent.finish_run($odd, 'expired')" >/dev/null; sleep 0.2
is "$(line_of "$odd" | grep -o 'workspace=.* agent_id')" 'workspace="w x\"1\x0astatus=succeeded" agent_id' \
   "an odd workspace id is quoted and escaped on one line"
# budget_exceeded at creation (hourly cap) is logged too
capped=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name, hourly_run_cap) VALUES ('w622', 'o', 'cap622', 0) RETURNING id")
c1=$(q "SELECT agent._enqueue_run($capped, 'autonomous', 'api', '{}'::jsonb)"); sleep 0.2
ok "$(line_of "$c1" | grep -q "status=budget_exceeded .* error_code=hourly_cap$" && echo 0)" "a run capped at creation is logged (hourly_cap)"
q "SELECT agent.resume_worker()" >/dev/null
setconf pg_agents.log_runs off
q "DELETE FROM agent.agents WHERE name IN ('odd622', 'cap622', 'idle622')" >/dev/null
psql -XAtq -c "DROP ROLE s622_app; DROP ROLE s622_nobody" >/dev/null
rm -f "$errf"
done_testing
