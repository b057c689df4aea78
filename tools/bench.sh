#!/usr/bin/env bash
# make bench: a throwaway cluster, then every benchmark in bench/*.sh, each
# printing its figures and ratios measured side by side in this one run.
# BENCH=pattern runs only matching benchmarks; BENCH_SCALE=small shrinks the
# data sets for a quick look.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
envfile=$(tools/cluster.sh start)
dir=$(dirname "$envfile")
trap 'tools/cluster.sh stop "$dir"' EXIT
. "$envfile"
export PG_AGENTS_ENV="$envfile"
for b in bench/*.sh; do
    [ -e "$b" ] || continue
    if [ -n "${BENCH:-}" ] && [[ "$(basename "$b")" != *$BENCH* ]]; then continue; fi
    echo "== $(basename "$b" .sh)"
    bash "$b"
done
