#!/usr/bin/env bash
# Run every fuzz harness script (test/fuzz/*.sh) with the same argument:
#   test/fuzz/run.sh short      a short run of each (what make test runs)
#   test/fuzz/run.sh long       a long run of each
#   test/fuzz/run.sh --libfuzzer SECONDS
#                               only the libFuzzer harnesses (the scripts
#                               marked "# kind: libfuzzer"), each for that
#                               many seconds (make fuzz FUZZ_SECONDS=...)
# Fails when any of them fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
only_libfuzzer=
if [ "${1:-}" = --libfuzzer ]; then
    only_libfuzzer=1
    shift
fi
arg=${1:-short}
failed=()
for s in "$here"/*.sh; do
    [ "$(basename "$s")" = run.sh ] && continue
    if [ -n "$only_libfuzzer" ] && ! grep -q '^# kind: libfuzzer$' "$s"; then
        continue
    fi
    echo "-- $(basename "$s") $arg"
    bash "$s" "$arg" || failed+=("$(basename "$s")")
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: failed: ${failed[*]}" >&2
    exit 1
fi
