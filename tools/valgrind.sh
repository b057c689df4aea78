#!/usr/bin/env bash
# make valgrind: the pg_regress and pgTAP suites against a server that runs
# under valgrind memcheck (tools/cluster.sh with PG_AGENTS_VALGRIND), with
# the suppressions of test/valgrind.supp.  Then every memcheck error whose
# stack has a pg_agents frame is printed (and written to valgrind.out); the
# run fails on one, or on a failed suite.
#
# TESTS="pattern" runs only matching files, as in make test.  Slow: every
# backend runs under valgrind (the whole of both suites takes long; see
# docs/hacking.md).  A Debian build of PostgreSQL is not built with
# USE_VALGRIND, so memcheck does not see inside palloc's memory contexts:
# it finds uninitialised values, bad system call arguments and errors in
# malloc'd memory (libcurl, jansson, our own), not a use of a pfree'd chunk.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
command -v valgrind >/dev/null || { echo "pg_agents: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
PG_CONFIG=${PG_CONFIG:-$(tools/pg_version.sh pg_config)} ||
    { echo "pg_agents: no PostgreSQL server development files found (run make deps)" >&2; exit 1; }
export PG_CONFIG
filter=${TESTS:-}
echo "pg_agents: valgrind $(valgrind --version | sed 's/^valgrind-//') on $("$PG_CONFIG" --version)"

export PG_AGENTS_VALGRIND="$here/test/valgrind.supp"
start=$(date +%s)
envfile=$(tools/cluster.sh start) || { echo "pg_agents: could not start the test cluster under valgrind" >&2; exit 1; }
dir=$(dirname "$envfile")
# shellcheck disable=SC1090
. "$envfile"
stopped=
cleanup() {
    [ -n "$stopped" ] && return 0
    stopped=1
    tools/cluster.sh stop "$dir"
}
trap cleanup EXIT

pick() {
    local f
    for f in "$@"; do
        if [ -z "$filter" ] || [[ "$(basename "$f")" == *$filter* ]]; then echo "$f"; fi
    done
}
rc=0
regress_tests=$(pick test/sql/*.sql | xargs -r -n1 basename | sed 's/\.sql$//' | sort)
if [ -n "$regress_tests" ]; then
    echo "== pg_regress"
    rm -rf results regression.diffs regression.out
    # shellcheck disable=SC2086
    "$($PG_CONFIG --pkglibdir)/pgxs/src/test/regress/pg_regress" --inputdir=test --outputdir=. \
        --bindir="$PG_AGENTS_BINDIR" --host="$PGHOST" --port="$PGPORT" --user=postgres \
        --use-existing --dbname="$PG_AGENTS_REGRESS_DB" $regress_tests || rc=1
fi
pgtap_files=$(pick test/pgtap/*.sql)
if [ -n "$pgtap_files" ]; then
    echo "== pgTAP"
    # shellcheck disable=SC2086
    pg_prove --host "$PGHOST" --port "$PGPORT" --username postgres --dbname "$PG_AGENTS_REGRESS_DB" $pgtap_files || rc=1
fi

# a fast stop, so that every process ends and its log is complete
if [ "$(id -u)" -eq 0 ]; then
    (cd / && runuser -u postgres -- "$PG_AGENTS_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w -t 600 stop >/dev/null)
else
    "$PG_AGENTS_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w -t 600 stop >/dev/null
fi

# Each error of a log is a block of "==pid== " lines ended by an empty one;
# keep the blocks with a frame in pg_agents.so.
python3 - "$dir/valgrind" >valgrind.out <<'PY'
import glob, os, re, sys
ours, others, files = [], 0, 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.log"))):
    files += 1
    block = []
    for line in open(path, errors="replace"):
        text = re.sub(r"^==\d+== ?", "", line.rstrip("\n"))
        if text.strip():
            block.append(text)
            continue
        if block:
            if any("pg_agents.so" in l for l in block):
                ours.append((os.path.basename(path), block))
            elif not block[0].startswith(("HEAP SUMMARY", "LEAK SUMMARY", "ERROR SUMMARY")):
                others += 1
        block = []
    if block and any("pg_agents.so" in l for l in block):
        ours.append((os.path.basename(path), block))
print(f"valgrind: {files} process logs, {len(ours)} errors with a pg_agents frame, {others} elsewhere (PostgreSQL, libraries: not ours)")
for name, block in ours:
    print(f"--- {name}")
    print("\n".join(block))
sys.exit(1 if ours else 0)
PY
found=$?
cat valgrind.out | head -400
[ $found -eq 0 ] || rc=1
echo "pg_agents: make valgrind took $(( ($(date +%s) - start) / 60 )) min"
exit $rc
