#!/usr/bin/env bash
# A hostile LLM endpoint (issue 36 #2, #3): the worker's peak memory and a
# bystander run's latency while it parses
#   - an Anthropic stream whose content_block_start names index 300000 (737 bytes),
#   - one OpenAI chunk listing N = 20,000 and 40,000 tool-call fragments
#     {"index": 0..N-1} (309 kB, 629 kB).
# For each: the worker's peak RSS is reset (/proc/<pid>/clear_refs, 5) and
# read back (VmHWM of /proc/<pid>/status) once the hostile run ended; the
# bystander is a trivial run of another workspace started right after the
# hostile one, its latency created_at -> finished_at.  Figures, not
# assertions (test/t/715_hostile_llm_streams.t asserts the outcomes).
#   make bench BENCH=hostile_streams
set -euo pipefail
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/fixtures/llm.sh"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

llm_start
cleanup() {
    llm_stop
    q "ALTER SYSTEM RESET pg_agents.llm_stream" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
}
trap cleanup EXIT
q "ALTER SYSTEM SET pg_agents.llm_stream = on" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5

agent() {  # NAME WORKSPACE [PROVIDER]
    q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope, hourly_run_cap)
       VALUES ('$2', 'bench', '$1', jsonb_build_object('llm_url', '$LLM_URL', 'llm_provider', '${3:-openai}'), 1000000)
       RETURNING id"
}
run() { q "SELECT agent._enqueue_run($1, 'autonomous', 'api', '{\"prompt\": \"$2\"}'::jsonb)"; }
wait_end() {
    local i
    for i in $(seq 1 6000); do
        case "$(q "SELECT status FROM agent.runs WHERE id = $1")" in
            succeeded|failed|budget_exceeded) return 0 ;;
        esac
        sleep 0.05
    done
    echo "run $1 did not end" >&2; return 1
}
ms() { q "SELECT round(extract(epoch FROM finished_at - created_at) * 1000) FROM agent.runs WHERE id = $1"; }
wpid() { q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'"; }
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

ho=$(agent bench_hostile_openai hostile)
ha=$(agent bench_hostile_anthropic hostile anthropic)
by=$(agent bench_bystander quiet)
llm_script "[[quiet]]" '[{"text": "all quiet", "repeat": true}]'
# warm up, and the bystander alone
for i in 1 2 3; do r=$(run "$by" "warm [[quiet]]"); wait_end "$r"; done
r=$(run "$by" "alone [[quiet]]"); wait_end "$r"
echo "bystander alone: $(ms "$r") ms"

ms_ev='{"type": "message_start", "message": {"id": "msg_b", "type": "message", "role": "assistant", "model": "scripted", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}'
llm_script "[[idx300000]]" "[{\"repeat\": true, \"sse\": [[\"message_start\", $ms_ev],
  [\"content_block_start\", {\"type\": \"content_block_start\", \"index\": 300000, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}],
  [\"content_block_delta\", {\"type\": \"content_block_delta\", \"index\": 300000, \"delta\": {\"type\": \"text_delta\", \"text\": \"hello\"}}],
  [\"content_block_stop\", {\"type\": \"content_block_stop\", \"index\": 300000}],
  [\"message_delta\", {\"type\": \"message_delta\", \"delta\": {\"stop_reason\": \"end_turn\", \"stop_sequence\": null}, \"usage\": {\"output_tokens\": 5}}],
  [\"message_stop\", {\"type\": \"message_stop\"}]]}]"
llm_script "[[frag20000]]" '[{"repeat": true, "sse_fragments": 20000}]'
llm_script "[[frag40000]]" '[{"repeat": true, "sse_fragments": 40000}]'

phase() {  # LABEL AGENT KEY
    local pid h r b base peak
    pid=$(wpid)
    echo 5 > "/proc/$pid/clear_refs" 2>/dev/null || true   # peak RSS reset (else: since the start)
    base=$(kb "$pid" VmRSS)
    h=$(run "$2" "hostile $3")
    b=$(run "$by" "meanwhile [[quiet]]")
    wait_end "$h"; wait_end "$b"
    peak=$(kb "$pid" VmHWM)
    printf '%-32s worker RSS %6d kB before, peak %7d kB | hostile run %-6s in %6s ms | bystander %6s ms\n' \
        "$1" "$base" "$peak" "$(q "SELECT status FROM agent.runs WHERE id = $h")" "$(ms "$h")" "$(ms "$b")"
}
phase "anthropic index 300000" "$ha" "[[idx300000]]"
phase "openai 20000 fragments" "$ho" "[[frag20000]]"
phase "openai 40000 fragments" "$ho" "[[frag40000]]"
