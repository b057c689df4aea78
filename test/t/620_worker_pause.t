#!/usr/bin/env bash
# agent.pause_worker() / agent.resume_worker() (docs/operations.md, "Pausing
# all agent work"): no new claims while paused, the run in flight finishes,
# the state is visible in agent.worker_status, survives a server restart,
# is audited, and is for superusers only; nothing is lost or duplicated.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
errf=$(mktemp)   # stderr of the refused calls; removed at the end
llm_start
a=$(mk_agent "pause620")
b=$(mk_agent "pause620b" '{}' none '[]' 10 w620b)   # a second workspace
psql -XAtq -c "SET client_min_messages = warning; DROP ROLE IF EXISTS p620_app; DROP ROLE IF EXISTS p620_nobody;
               CREATE ROLE p620_app IN ROLE agents_app; CREATE ROLE p620_nobody" >/dev/null

first_audit=$(q "SELECT coalesce(max(id), 0) FROM agent.audit_log")

# 1. a run in flight when the pause comes finishes; new runs stay queued
llm_script "[[p620-slow]]" '[{"latency": 2, "text": "slow done"}]'
slow=$(start_run "$a" '{"prompt": "slow [[p620-slow]]"}')
for i in $(seq 1 200); do llm_requests | grep -qF "[[p620-slow]]" && break; sleep 0.05; done
is "$(q "SELECT agent.pause_worker('p620 maintenance')")" "t" "pause_worker pauses (true: it was not paused)"
is "$(q "SELECT agent.pause_worker('again')")" "f" "pausing again says it was paused already"
is "$(q "SELECT state || ',' || paused || ',' || pause_reason FROM agent.worker_status")" "paused,true,again" \
   "agent.worker_status shows the pause and its reason"
ids=""
for i in 1 2 3 4 5; do
    llm_script "[[p620-$i]]" "[{\"text\": \"answer $i\"}]"
    ids="$ids $(start_run "$([ $i -le 3 ] && echo "$a" || echo "$b")" "{\"prompt\": \"queued [[p620-$i]]\"}")"
done
list=$(echo $ids | tr ' ' ',')
is "$(wait_status "$slow" "succeeded|failed" 30)" "succeeded" "the run in flight finished while paused"
sleep 2.5
is "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($list) AND status = 'queued'")" "5" \
   "no run was claimed while paused (2.5 s, two ticks)"
is "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($list) AND started_at IS NOT NULL")" "0" "none was even started"
is "$(q "SELECT string_agg(workspace_id || ':' || n, ' ' ORDER BY workspace_id)
           FROM (SELECT workspace_id, sum(queued) AS n FROM agent.queue_status
                  WHERE workspace_id IN ('w6', 'w620b') GROUP BY 1) x")" "w6:3 w620b:2" "agent.queue_status counts them, per workspace"
is "$(psql -XAtq -c "SET ROLE p620_app" -c "SET pg_agents.workspace = 'w620b'" \
          -c "SELECT string_agg(workspace_id || ':' || n, ' ') FROM (SELECT workspace_id, sum(queued) AS n FROM agent.queue_status GROUP BY 1) x")" "w620b:2" \
   "the application sees the queue of its session's workspace only"

# 2. the pause survives a restart of the server
"$PG_AGENTS_SRC/tools/cluster.sh" restart "$PG_AGENTS_DIR"
for i in $(seq 1 200); do [ "$(q "SELECT state FROM agent.worker_status")" = "paused" ] && break; sleep 0.05; done
is "$(q "SELECT state FROM agent.worker_status")" "paused" "after a restart the new worker is paused"
sleep 2.5
is "$(q "SELECT count(*) FROM agent.runs WHERE id IN ($list) AND status = 'queued'")" "5" "and claims nothing"

# 3. who may pause: superusers only
psql -XAtq -c "SET ROLE p620_app; SET pg_agents.workspace = 'w6'; SELECT agent.resume_worker()" 2>"$errf" >/dev/null
ok "$(grep -q "permission denied for function resume_worker" "$errf" && echo 0)" "the application may not resume the worker"
psql -XAtq -c "SET ROLE p620_nobody; SELECT agent.pause_worker()" 2>"$errf" >/dev/null
ok "$(grep -q "permission denied for function pause_worker" "$errf" && echo 0)" "a role with no grant may not pause it"
psql -XAtq -c "SET ROLE p620_nobody; SELECT * FROM agent.worker_status" 2>"$errf" >/dev/null
ok "$(grep -q "permission denied for view worker_status" "$errf" && echo 0)" "nor read agent.worker_status"
is "$(q "SELECT state FROM agent.worker_status")" "paused" "still paused"

# 4. resume: every queued run is claimed and done once
is "$(q "SELECT agent.resume_worker()")" "t" "resume_worker resumes (true: it was paused)"
is "$(q "SELECT state || ',' || paused FROM agent.worker_status")" "running,false" "agent.worker_status shows it running"
for r in $ids; do wait_status "$r" "succeeded|failed" 30 >/dev/null; done
is "$(q "SELECT count(*) FROM agent.runs r WHERE id IN ($list) AND status = 'succeeded' AND attempts = 1
           AND (SELECT count(*) FROM agent.run_steps s WHERE s.run_id = r.id AND s.kind = 'llm') = 1
           AND r.output->>'text' = 'answer ' || substring(r.input->>'prompt' from '\[\[p620-(.*)\]\]')")" "5" \
   "each queued run ran once, with its own answer"

# 5. audited, with the database user
is "$(q "SELECT string_agg(action || ':' || db_user || ':' || coalesce(inputs->>'reason', '-'), ' ' ORDER BY id)
           FROM agent.audit_log WHERE action IN ('worker.pause', 'worker.resume') AND id > $first_audit")" \
   "worker.pause:postgres:p620 maintenance worker.pause:postgres:again worker.resume:postgres:-" \
   "pause and resume are audited"
# 6. pausing in another database than the worker's does not pause the worker
psql -XAtq -d "$PG_AGENTS_REGRESS_DB" -c "SELECT agent.pause_worker('wrong database')" 2>"$errf" >/dev/null
ok "$(grep -q "the pg_agents worker works in database \"$PGDATABASE\", not in this one" "$errf" && echo 0)" \
   "pause_worker in another database warns that the worker works elsewhere"
is "$(q "SELECT state || ',' || paused FROM agent.worker_status")" "running,false" "and the worker is not paused"
llm_script "[[p620-other]]" '[{"text": "still working"}]'
r=$(start_run "$b" '{"prompt": "go [[p620-other]]"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "it still claims runs"
psql -XAtq -d "$PG_AGENTS_REGRESS_DB" -c "SELECT agent.resume_worker()" >/dev/null 2>&1
psql -XAtq -c "DROP ROLE p620_app; DROP ROLE p620_nobody" >/dev/null
rm -f "$errf"
done_testing
