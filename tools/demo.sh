#!/usr/bin/env bash
# make demo: a throwaway cluster, then a real agent end to end (demo/*.sh in
# order; each prints what happened in a few readable lines).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
envfile=$(tools/cluster.sh start)
dir=$(dirname "$envfile")
trap 'tools/cluster.sh stop "$dir"' EXIT
. "$envfile"
export PG_AGENTS_ENV="$envfile"
for step in demo/*.sh; do
    bash "$step"
done
