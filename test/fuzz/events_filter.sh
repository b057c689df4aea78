#!/usr/bin/env bash
# Fuzz harness: the trigger filter evaluator, through SQL (random filters and
# payloads; no crash, no hang, invariants hold).  `short` = 3000 cases (make
# test), a number = that many cases, anything else (long) = 100000.  Uses the cluster of $PG_AGENTS_ENV when set,
# else starts a throwaway one.  FUZZ_SEED=n replays a run.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cases=100000
[ "${1:-}" = short ] && cases=3000
[[ "${1:-}" =~ ^[0-9]+$ ]] && cases=$1
own=""
if [ -z "${PG_AGENTS_ENV:-}" ]; then
    PG_AGENTS_ENV=$("$here/tools/cluster.sh" start) || exit 1
    own=$(dirname "$PG_AGENTS_ENV")
fi
# shellcheck disable=SC1090
. "$PG_AGENTS_ENV"
python3 "$here/test/fuzz/events_filter_fuzz.py" "$cases" ${FUZZ_SEED:-}
rc=$?
[ -n "$own" ] && "$here/tools/cluster.sh" stop "$own"
exit $rc
