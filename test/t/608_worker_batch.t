#!/usr/bin/env bash
# Worker: final answers are recorded in batches (agent._worker_finish_replies,
# one transaction for several runs).  When a batch fails, each reply is
# recorded alone: the run at fault fails with a clear error, the others
# succeed with exactly one llm step each, and no run is lost.  Budget and
# trigger bookkeeping come out as for a run recorded alone.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
log="$PG_AGENTS_DIR/server.log"
lines_before=$(wc -l < "$log")

a=$(mk_agent "batch608")
llm_script "[[b608ok]]" '[{"text": "fine", "latency": 0.3, "repeat": true}]'
llm_script "[[b608bad]]" '[{"text": "odd reply", "latency": 0.3}]'
# a fault injected where the batch records the steps: the llm step of the
# reply "odd reply" cannot be inserted (a negative token count did this
# before issue 36; the worker now refuses such usage before any batch)
q "CREATE OR REPLACE FUNCTION public.t608_fault() RETURNS trigger LANGUAGE plpgsql AS \$\$
   BEGIN
     IF NEW.kind = 'llm' AND NEW.output::text LIKE '%odd reply%' THEN
       RAISE EXCEPTION 'scripted fault of test 608';
     END IF;
     RETURN NEW;
   END \$\$;
   CREATE TRIGGER t608_fault BEFORE INSERT ON agent.run_steps FOR EACH ROW EXECUTE FUNCTION public.t608_fault()" >/dev/null
trap 'q "DROP TRIGGER IF EXISTS t608_fault ON agent.run_steps; DROP FUNCTION IF EXISTS public.t608_fault()" >/dev/null; llm_stop' EXIT

# six runs queued together, their replies come back together: one of them
# cannot be recorded, which fails the batch it is in
ids=$(q "SELECT string_agg(agent._enqueue_run($a, 'autonomous', 'api',
                 jsonb_build_object('prompt', CASE WHEN i = 4 THEN 'go [[b608bad]]' ELSE 'go [[b608ok]]' END))::text, ' '
                 ORDER BY i)
         FROM generate_series(1, 6) i")
read -r -a run <<<"$ids"
bad=${run[3]}
for r in "${run[@]}"; do
    wait_status "$r" "succeeded|failed" 30 >/dev/null
done
is "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a AND status = 'succeeded' AND id <> $bad")" "5" \
   "the other runs succeed"
is "$(q "SELECT count(*) FROM agent.run_steps s JOIN agent.runs r ON r.id = s.run_id
          WHERE r.agent_id = $a AND r.id <> $bad AND s.kind = 'llm'")" "5" "with one llm step each (none recorded twice)"
is "$(q "SELECT string_agg(DISTINCT output->>'text', ',') FROM agent.runs WHERE agent_id = $a AND id <> $bad")" "fine" \
   "and their answer"
is "$(q "SELECT status || ': ' || error FROM agent.runs WHERE id = $bad")" \
   "failed: internal error of the worker: scripted fault of test 608" "the run at fault fails with a clear error"
is "$(q "SELECT count(*) FROM agent.run_state s JOIN agent.runs r ON r.id = s.run_id WHERE r.agent_id = $a")" "0" \
   "no state left behind"
ok "$(tail -n +"$lines_before" "$log" | grep -q 'recording LLM replies failed: scripted fault of test 608'; echo $?)" \
   "the batch failed as a whole (server log), then each reply was recorded alone"
q "DROP TRIGGER t608_fault ON agent.run_steps; DROP FUNCTION public.t608_fault()" >/dev/null

# a batch of several runs: budget and trigger bookkeeping
t=$(q "INSERT INTO agent.triggers (workspace_id, agent_id, kind, prompt) VALUES ('w6', $a, 'api', 'go [[b608ok]]') RETURNING id")
ids=$(q "SELECT string_agg(agent._enqueue_run($a, 'autonomous', 'api', '{}'::jsonb, $t, NULL, NULL,
                                              CASE WHEN i = 2 THEN 12 END)::text, ' ' ORDER BY i)
         FROM generate_series(1, 3) i")
read -r -a run <<<"$ids"
for r in "${run[@]}"; do
    wait_status "$r" "succeeded|failed|budget_exceeded" 30 >/dev/null
done
is "$(q "SELECT string_agg(status, ',' ORDER BY id) FROM agent.runs WHERE id IN (${run[0]}, ${run[1]}, ${run[2]})")" \
   "succeeded,budget_exceeded,succeeded" "a run over its budget ends budget_exceeded, the others succeed"
is "$(q "SELECT error FROM agent.runs WHERE id = ${run[1]}")" "token budget of 12 exhausted (15 used)" "with its usage"
# a final answer over the agent's default_token_budget (the run has none of its own)
d=$(mk_agent "defbud608")
q "UPDATE agent.agents SET default_token_budget = 12 WHERE id = $d" >/dev/null
llm_script "[[b608def]]" '[{"text": "over the default"}]'
r=$(q "SELECT agent._enqueue_run($d, 'autonomous', 'api', '{\"prompt\": \"[[b608def]]\"}'::jsonb)")
is "$(wait_status "$r" "succeeded|failed|budget_exceeded" 30)" "budget_exceeded" "a final answer over the agent's default_token_budget ends budget_exceeded"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" "token budget of 12 exhausted (15 used)" "with the default budget"
# (the runs may end in one batch or in several: the last one to end, by id within a batch)
is "$(q "SELECT last_status FROM agent.triggers WHERE id = $t")" \
   "$(q "SELECT status FROM agent.runs WHERE trigger_id = $t ORDER BY finished_at DESC, id DESC LIMIT 1")" \
   "the trigger keeps the status of the run that ended last"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE action = 'run.finish' AND target_id IN ('${run[0]}', '${run[1]}', '${run[2]}')")" "3" \
   "one run.finish audit row per run"
is "$(q "SELECT string_agg(current_step || '|' || preview, ',') FROM (SELECT DISTINCT current_step, preview FROM agent.runs
          WHERE id IN (${run[0]}, ${run[2]})) x")" "llm:default|fine" "live progress: the latest step and its preview"
done_testing
