#!/usr/bin/env bash
# make test: start a throwaway cluster, then run every test suite against it:
#   1. pg_regress  (test/sql, test/expected)          exact outputs
#   2. pgTAP       (test/pgtap/*.sql, via pg_prove)     behaviour matrices
#   3. integration (test/t/*.t, via prove)             worker, faults, peers
#   4. fuzzing     (test/fuzz, a short run)
# Any failure fails the run.  Set PG_AGENTS_KEEP=1 to keep the temp cluster,
# TESTS="pattern" to run only matching files (e.g. TESTS=audit).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
filter=${TESTS:-}

envfile=$(tools/cluster.sh start) || { echo "pg_agents: could not start the test cluster" >&2; exit 1; }
dir=$(dirname "$envfile")
# shellcheck disable=SC1090
. "$envfile"
cleanup() {
    if [ -n "${PG_AGENTS_KEEP:-}" ]; then echo "pg_agents: kept test cluster in $dir (source $envfile)"; fi
    tools/cluster.sh stop "$dir"
}
trap cleanup EXIT

passed=0; failed=0; failures=()
suite() {  # name, command...
    local name=$1; shift
    echo "== $name"
    if "$@"; then passed=$((passed+1)); else failed=$((failed+1)); failures+=("$name"); fi
}

pick() {  # list files matching the optional filter
    local f
    for f in "$@"; do
        [ -e "$f" ] || continue
        if [ -z "$filter" ] || [[ "$(basename "$f")" == *$filter* ]]; then echo "$f"; fi
    done
}

# 1. pg_regress
regress_tests=$(pick test/sql/*.sql | xargs -r -n1 basename | sed 's/\.sql$//' | sort)
if [ -n "$regress_tests" ]; then
    pgxs_dir="$($PG_CONFIG --pkglibdir)/pgxs"
    run_regress() {
        rm -rf test/results test/regression.diffs test/regression.out
        "$pgxs_dir/src/test/regress/pg_regress" --inputdir=test --outputdir=test \
            --bindir="$PG_AGENTS_BINDIR" --host="$PGHOST" --port="$PGPORT" --user=postgres \
            --use-existing --dbname="$PG_AGENTS_REGRESS_DB" $regress_tests
        local rc=$?
        if [ $rc -ne 0 ] && [ -f test/regression.diffs ]; then head -c 20000 test/regression.diffs; fi
        return $rc
    }
    suite "pg_regress" run_regress
fi

# 2. pgTAP
pgtap_files=$(pick test/pgtap/*.sql)
if [ -n "$pgtap_files" ]; then
    suite "pgTAP" pg_prove --host "$PGHOST" --port "$PGPORT" --username postgres --dbname "$PG_AGENTS_REGRESS_DB" $pgtap_files
fi

# 3. integration tests (executables that print TAP)
it_files=$(pick test/t/*.t)
if [ -n "$it_files" ]; then
    export PG_AGENTS_ENV="$envfile"
    suite "integration" prove ${PROVE_FLAGS:-} --exec '' $it_files
fi

# 4. fuzzers: a short run each (longer by hand: see test/fuzz/README.md)
if [ -x test/fuzz/run.sh ] && { [ -z "$filter" ] || [[ fuzz == *$filter* ]]; }; then
    suite "fuzz" test/fuzz/run.sh short
fi

echo
if [ $failed -ne 0 ]; then echo "failed suites: ${failures[*]}"; fi
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
