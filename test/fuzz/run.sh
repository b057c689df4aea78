#!/usr/bin/env bash
# Run every fuzz harness script (test/fuzz/*.sh) with the same argument:
#   test/fuzz/run.sh short      a short run of each (what make test runs)
#   test/fuzz/run.sh long       a long run of each
# Fails when any of them fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
arg=${1:-short}
failed=()
for s in "$here"/*.sh; do
    [ "$(basename "$s")" = run.sh ] && continue
    echo "-- $(basename "$s") $arg"
    bash "$s" "$arg" || failed+=("$(basename "$s")")
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: failed: ${failed[*]}" >&2
    exit 1
fi
