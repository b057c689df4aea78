#!/usr/bin/env bash
# make soak: a throwaway cluster (the worker's own tick off: the soak is the
# only ticker), the scripted LLM server, then tools/soak.py: a simulated week
# in SOAK_MINUTES (default 5) of wall time under faults, and its
# reconciliation report.  Exit status 0 only with zero discrepancies.
# docs/soak.md describes the design and how to read the report.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export SOAK_MINUTES=${SOAK_MINUTES:-5}
export PG_AGENTS_EXTRA_CONF="pg_agents.worker_tick = off
log_min_messages = warning"
envfile=$(tools/cluster.sh start)
dir=$(dirname "$envfile")
. "$envfile"
export PG_AGENTS_ENV="$envfile"
. test/fixtures/llm.sh
mcppid=
cleanup() {
    llm_stop
    [ -z "$mcppid" ] || { kill "$mcppid" 2>/dev/null; wait "$mcppid" 2>/dev/null || true; }
    tools/cluster.sh stop "$dir"
}
llm_start
trap cleanup EXIT
# pg_agents' own MCP server: /mcp (echo, fail = isError, boom = JSON-RPC error), /slow/mcp (3 s per answer)
python3 test/fixtures/mcp_server.py --port-file "$dir/mcp.port" >/dev/null 2>&1 & mcppid=$!
for _ in $(seq 1 100); do [ -s "$dir/mcp.port" ] && break; sleep 0.05; done
export MCP_PORT=$(cat "$dir/mcp.port")
echo "soak: cluster $dir, LLM server $LLM_URL, SOAK_MINUTES=$SOAK_MINUTES"
python3 tools/soak.py
