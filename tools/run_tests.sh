#!/usr/bin/env bash
# make test: start a throwaway cluster, then run every test suite against it:
#   1. pg_regress  (test/sql, expected/; results/)    exact outputs
#   2. pgTAP       (test/pgtap/*.sql, via pg_prove)     behaviour matrices
#   2b. isolation  (test/isolation/specs/*.spec, via pg_isolation_regress;
#                   expected in test/isolation/expected/, results in
#                   output_iso/)                        interleavings
#   3. integration (test/t/*.t, via prove)             worker, faults, peers
#   4. fuzzing     (test/fuzz, a short run)
#   5. the soak    (tools/soak.sh, SOAK_MINUTES=5; 0 leaves it out)
# Any failure fails the run, and so does a process that the run started and
# that is still there at its end.  Set PG_AGENTS_KEEP=1 to keep the temp
# cluster, TESTS="pattern" to run only matching files (e.g. TESTS=audit).
# The PostgreSQL version is the one tools/pg_version.sh finds (PG_MAJOR=17 or
# PG_CONFIG=... to choose).
# PG_AGENTS_VALGRIND=SUPPRESSIONS (make valgrind): the server runs under
# valgrind memcheck (tools/cluster.sh), only suites 1 and 2 run, and then
# tools/valgrind_report.py prints the errors with a pg_agents frame (into
# valgrind.out too); one of them fails the run.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
PG_CONFIG=${PG_CONFIG:-$(tools/pg_version.sh pg_config)} ||
    { echo "pg_agents: no PostgreSQL server development files found (run make deps)" >&2; exit 1; }
export PG_CONFIG
filter=${TESTS:-}
valgrind=${PG_AGENTS_VALGRIND:-}
echo "pg_agents: $("$PG_CONFIG" --version) ($PG_CONFIG)"
if [ -n "$valgrind" ]; then
    command -v valgrind >/dev/null || { echo "pg_agents: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
    echo "pg_agents: under valgrind $(valgrind --version | sed 's/^valgrind-//'), suppressions $valgrind"
    SOAK_MINUTES=0
fi
started=$(date +%s)

# Every process of this run carries this mark in its environment: what still
# has it after the cluster is stopped outlived the run.
PG_AGENTS_RUN_MARK="pg_agents_run_$$_${RANDOM}${RANDOM}"
export PG_AGENTS_RUN_MARK
leftovers() {  # pids of other processes with this run's mark
    local p pid
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] && continue
        grep -q -z -x "PG_AGENTS_RUN_MARK=$PG_AGENTS_RUN_MARK" "$p/environ" 2>/dev/null || continue
        if [ -n "${PG_AGENTS_KEEP:-}" ] && [ "$(cat "$p/comm" 2>/dev/null)" = postgres ]; then continue; fi
        echo "$pid"
    done
}

envfile=$(tools/cluster.sh start) || { echo "pg_agents: could not start the test cluster" >&2; exit 1; }
dir=$(dirname "$envfile")
# shellcheck disable=SC1090
. "$envfile"
stopped=
cleanup() {
    [ -n "$stopped" ] && return 0
    stopped=1
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
        rm -rf results regression.diffs regression.out
        "$pgxs_dir/src/test/regress/pg_regress" --inputdir=test --outputdir=. \
            --bindir="$PG_AGENTS_BINDIR" --host="$PGHOST" --port="$PGPORT" --user=postgres \
            --use-existing --dbname="$PG_AGENTS_REGRESS_DB" $regress_tests
        local rc=$?
        if [ $rc -ne 0 ] && [ -f regression.diffs ]; then head -c 20000 regression.diffs; fi
        return $rc
    }
    suite "pg_regress" run_regress
fi

# 2. pgTAP
pgtap_files=$(pick test/pgtap/*.sql)
if [ -n "$pgtap_files" ]; then
    suite "pgTAP" pg_prove --host "$PGHOST" --port "$PGPORT" --username postgres --dbname "$PG_AGENTS_REGRESS_DB" $pgtap_files
fi

# 2b. isolation specs: interleavings of sessions, step by step (lock waits
# seen by isolationtester, no sleeps), in their own database made fresh with
# the extension (the worker serves another one, so it claims nothing here)
iso_tests=$(pick test/isolation/specs/*.spec | xargs -r -n1 basename | sed 's/\.spec$//' | sort)
if [ -n "$iso_tests" ]; then
    pgxs_dir="$($PG_CONFIG --pkglibdir)/pgxs"
    run_isolation() {
        rm -rf output_iso
        "$pgxs_dir/src/test/isolation/pg_isolation_regress" --inputdir=test/isolation --outputdir=output_iso \
            --bindir="$PG_AGENTS_BINDIR" --host="$PGHOST" --port="$PGPORT" --user=postgres \
            --dbname=pg_agents_isolation --load-extension=pg_agents $iso_tests
        local rc=$?
        if [ $rc -ne 0 ] && [ -f output_iso/regression.diffs ]; then head -c 20000 output_iso/regression.diffs; fi
        return $rc
    }
    suite "isolation" run_isolation
fi

# 3. integration tests (executables that print TAP)
it_files=$([ -n "$valgrind" ] || pick test/t/*.t)
if [ -n "$it_files" ]; then
    export PG_AGENTS_ENV="$envfile"
    # the MCP peers from npm: tried once for the whole run, said in one line
    # (the tests that need them skip with the same reason)
    if grep -l -q -E 'mcp_peers|MCP_PEERS' $it_files 2>/dev/null; then
        if why=$(PG_AGENTS_DIR=$dir test/fixtures/mcp_peers.sh install 2>&1); then
            echo "pg_agents: MCP peers from npm: ready (Node 22: $("$(test/fixtures/mcp_peers.sh node22)/node" --version))"
        else
            echo "pg_agents: MCP peers from npm: the tests that need them skip: ${why//$'\n'/ }"
        fi
    fi
    suite "integration" prove --exec '' --failures --comments ${PROVE_FLAGS:-} $it_files
fi

# 4. fuzzers: a short run each (longer by hand: see test/fuzz/README.md)
if [ -z "$valgrind" ] && [ -x test/fuzz/run.sh ] && { [ -z "$filter" ] || [[ fuzz == *$filter* ]]; }; then
    suite "fuzz" test/fuzz/run.sh short
fi

# 5. the soak: a simulated week in SOAK_MINUTES (default 5) against its own
# cluster, reconciled (docs/soak.md); SOAK_MINUTES=0 leaves it out
if [ "${SOAK_MINUTES:-5}" != 0 ] && { [ -z "$filter" ] || [[ soak == *$filter* ]]; }; then
    suite "soak" env SOAK_MINUTES="${SOAK_MINUTES:-5}" tools/soak.sh
fi

# under valgrind: a fast stop, so that every process ends and its log is
# complete, then the report
if [ -n "$valgrind" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        (cd / && runuser -u postgres -- "$PG_AGENTS_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w -t 600 stop >/dev/null)
    else
        "$PG_AGENTS_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w -t 600 stop >/dev/null
    fi
    suite "valgrind" bash -c 'tools/valgrind_report.py "$1" "$2" >valgrind.out; rc=$?; head -c 30000 valgrind.out; exit $rc' _ \
        "$dir/valgrind" "$here/src/"
    echo "pg_agents: the run under valgrind took $(( ($(date +%s) - started) / 60 )) min"
fi

# 6. nothing outlives the run
cleanup
left=$(leftovers)
if [ -n "$left" ]; then
    echo "== processes left running by the tests (ended now):"
    for pid in $left; do echo "   $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"; done
    kill $left 2>/dev/null; sleep 1; kill -9 $left 2>/dev/null
    failed=$((failed+1)); failures+=("leftover-processes")
fi

echo
if [ $failed -ne 0 ]; then echo "failed suites: ${failures[*]}"; fi
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
