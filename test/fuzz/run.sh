#!/usr/bin/env bash
# Runs every fuzz harness test/fuzz/*.sh with the same argument (make test
# passes `short`).  Each area keeps its harness in its own file.
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
mode=${1:-short}
fails=0
for h in "$dir"/*.sh; do
    [ "$(basename "$h")" = run.sh ] && continue
    echo "-- $(basename "$h") $mode"
    if bash "$h" "$mode"; then echo "ok: $(basename "$h")"; else echo "FAILED: $(basename "$h")"; fails=$((fails+1)); fi
done
[ $fails -eq 0 ]
