#!/usr/bin/env bash
# The exporter file monitoring/pg_agents_queries.yaml against Debian's own
# prometheus-postgres-exporter (docs/monitoring.md): the exporter, connected
# as a login role that holds pg_monitor and nothing else, on 127.0.0.1 with
# that file; /metrics scraped; every metric the file declares is there
# without a query error, the values move when a run is queued and finished,
# and no workspace id, agent name or error text ever reaches a label or a
# value.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
yaml="$here/monitoring/pg_agents_queries.yaml"
exporter=$(command -v prometheus-postgres-exporter || true)
[ -n "$exporter" ] || skip_all "prometheus-postgres-exporter is not installed (tools/deps.sh installs it)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pg_agents_627.XXXXXX")
epid=
cleanup() { [ -n "$epid" ] && kill "$epid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

ws=w627secretws
psql -XAtq -c "SET client_min_messages = warning; DROP ROLE IF EXISTS prom627; CREATE ROLE prom627 LOGIN IN ROLE pg_monitor" >/dev/null
# an agent without an endpoint: the worker never claims its runs
idle=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name) VALUES ('$ws', 'owner627', 'name627secret') RETURNING id")

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
DATA_SOURCE_NAME="postgresql://prom627@127.0.0.1:$PGPORT/$PGDATABASE?sslmode=disable" \
    "$exporter" --web.listen-address="127.0.0.1:$port" --extend.query-path="$yaml" \
        --disable-settings-metrics >"$tmp/exporter.log" 2>&1 &
epid=$!
scrape() { curl -sf --max-time 10 "http://127.0.0.1:$port/metrics" >"$tmp/metrics" && cat "$tmp/metrics"; }
up=0
for _ in $(seq 1 100); do
    if curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" >/dev/null 2>&1; then up=1; break; fi
    sleep 0.1
done
is "$up" "1" "the exporter serves /metrics on 127.0.0.1 with the pg_agents file"
scrape >/dev/null; diag "$(grep '^pg_agents_worker_up' "$tmp/metrics")"
[ "$up" = 1 ] || { diag "$(tail -20 "$tmp/exporter.log")"; done_testing; exit 1; }

# value of one sample: metric{labels} -> number (empty when absent)
# (the exporter adds a label naming the server: left out here)
val() {
    awk -v m="$1" '{ k = $1; gsub(/,?server="[^"]*"/, "", k); sub(/\{,/, "{", k); sub(/\{\}$/, "", k)
                     if (k == m) print $2 }' "$tmp/metrics"
}

# the metrics the file declares: namespace_column of every non-LABEL column
declared=$(awk '/^pg_agents_[a-z_]*:/ { ns = substr($1, 1, length($1) - 1) }
                /^    - [a-z_]*:/ { col = $2; sub(/:$/, "", col) }
                /usage: "(GAUGE|COUNTER)"/ { print ns "_" col }' "$yaml" | sort -u)
ok "$([ "$(echo "$declared" | wc -l)" -ge 25 ] && echo t)" "the file declares the worker, queue, run, provider and MCP metrics ($(echo "$declared" | wc -l))"

scrape >/dev/null
missing=""
for m in $declared; do
    case $m in
        pg_agents_provider_*|pg_agents_run_errors_recent_runs) ;;   # one series per provider / error code: may be none
        *) grep -q "^$m[{ ]" "$tmp/metrics" || missing="$missing $m" ;;
    esac
done
is "$missing" "" "every declared metric is exported (none dropped by a failing query)"
is "$(awk '$1 ~ /^pg_exporter_user_queries_load_error/ && $2 != 0' "$tmp/metrics")" "" "the exporter loaded the file without an error"
is "$(grep -ci 'error.*pg_agents\|pg_agents.*error' "$tmp/exporter.log")" "0" "no query of the file fails as pg_monitor"
is "$(val pg_agents_worker_up)" "1" "pg_agents_worker_up is 1 while the worker runs"
is "$(val pg_agents_worker_slots)" "$(q "SELECT max_concurrent_runs FROM agent.worker_status")" "pg_agents_worker_slots is max_concurrent_runs"
is "$(val pg_agents_mcp_servers)" "$(q "SELECT count(*) FROM agent.mcp_servers")" "pg_agents_mcp_servers counts agent.mcp_servers"
ok "$([ -n "$(val 'pg_agents_run_duration_seconds_bucket{le="+Inf"}')" ] && echo t)" "the latency histogram has its +Inf bucket"

# values move: a queued run, then the same run failed
q0=$(val 'pg_agents_queue_queued{priority="0"}')
f0=$(val 'pg_agents_runs_recent_finished{status="failed"}')
h0=$(val 'pg_agents_run_duration_seconds_bucket{le="+Inf"}')
w0=$(val 'pg_agents_queue_workspaces_queued{priority="0"}')
r=$(q "SELECT agent._enqueue_run($idle, 'autonomous', 'api', '{\"prompt\": \"p627\"}'::jsonb, NULL, 'owner627')")
scrape >/dev/null
is "$(val 'pg_agents_queue_queued{priority="0"}')" "$((${q0%.*} + 1))" "a queued run: pg_agents_queue_queued{priority=\"0\"} + 1"
is "$(val 'pg_agents_queue_workspaces_queued{priority="0"}')" "$((${w0%.*} + 1))" "its workspace counts in workspaces_queued"
q "UPDATE agent.runs SET status = 'running', started_at = now() - interval '2 seconds', attempts = 1
    WHERE workspace_id = '$ws' AND id = $r" >/dev/null
q "SELECT agent.finish_run($r, 'failed', NULL, 'boom627 the error text of the run')" >/dev/null
scrape >/dev/null
is "$(val 'pg_agents_queue_queued{priority="0"}')" "${q0%.*}" "finished: the queue is back"
is "$(val 'pg_agents_runs_recent_finished{status="failed"}')" "$((${f0%.*} + 1))" "pg_agents_runs_recent_finished{status=\"failed\"} + 1"
is "$(val 'pg_agents_run_duration_seconds_bucket{le="+Inf"}')" "$((${h0%.*} + 1))" "the run lands in the histogram's +Inf bucket"
is "$(val 'pg_agents_run_duration_seconds_bucket{le="1"}')" "$(q "SELECT count(*) FROM agent.runs WHERE finished_at >= now() - interval '5 minutes' AND finished_at - started_at <= interval '1 second'")" \
   "the 1-second bucket counts exactly the runs of the last 5 minutes that took at most a second"
ok "$(grep -q '^pg_agents_run_errors_recent_runs{' "$tmp/metrics" && echo t)" "the failure is counted by error code"

# ids and counts only
lacks "$(cat "$tmp/metrics")" "$ws" "no workspace id in the metrics"
lacks "$(cat "$tmp/metrics")" "name627secret" "no agent name"
lacks "$(cat "$tmp/metrics")" "boom627" "no error text"
# the exporter role reads nothing else of schema agent
is "$(PGUSER=prom627 psql -XAtq -c "SELECT count(*) FROM agent.runs" 2>&1 | grep -c 'permission denied')" "1" "the exporter's pg_monitor role cannot read agent.runs"

# the Grafana dashboard: valid JSON whose queries name only exported metrics
dash="$here/monitoring/grafana_dashboard.json"
bad=$(python3 - "$dash" "$yaml" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
names = set()
ns = None
for line in open(sys.argv[2]):
    m = re.match(r'^(pg_agents_[a-z_]+):', line)
    if m: ns = m.group(1); continue
    m = re.match(r'^    - ([a-z_]+):', line)
    if m: col = m.group(1); continue
    m = re.search(r'usage: "(GAUGE|COUNTER)"', line)
    if m: names.add(ns + "_" + col)
exprs = []
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "expr" and isinstance(v, str): exprs.append(v)
            walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(d)
if not exprs: print("no queries")
for e in exprs:
    for n in re.findall(r'\bpg_agents_[a-z_]+', e):
        if n not in names: print(n)
PY
)
is "$bad" "" "the Grafana dashboard is valid JSON and queries only metrics the file exports"
alerts="$here/monitoring/alerts.yml"
abad=$(for n in $(grep -v '^#' "$alerts" | grep -o 'pg_agents_[a-z_]*' | sort -u); do echo "$declared" | grep -qx "$n" || echo "$n"; done)
is "$abad" "" "the alert rules name only exported metrics"
done_testing
