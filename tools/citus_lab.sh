#!/usr/bin/env bash
# The Citus lab of docs/scaling.md, rerunnable by anyone:
#
#   tools/citus_lab.sh CITUS_SOURCE_DIR
#
# CITUS_SOURCE_DIR is a Citus 13.x source tree the user provides (nothing is
# fetched or vendored; see docs/scaling.md, "The lab"). The script
#   1. builds Citus from a copy of that tree (make -j2), checking its build
#      dependencies first and saying what is missing;
#   2. installs PostgreSQL (a private copy of the system's), Citus and
#      pg_agents into a private tree under a temporary directory: the system
#      PostgreSQL is not touched;
#   3. starts a coordinator and two workers on 127.0.0.1 (free ports, data
#      directories under the temporary directory);
#   4. runs every SQL block of docs/scaling.md in order, in one psql session
#      on the coordinator, and compares each block's output with the one the
#      page shows (its closing `-- ` lines);
#   5. runs the checks of issue 35 (identity on every node or an error) and a
#      throughput figure;
#   6. stops the servers and removes the temporary directory (on any exit).
#
# Settings (environment):
#   CITUS_LAB_BUILD=DIR   build Citus in DIR and keep it (a second run reuses
#                         the build when the source is unchanged); default: in
#                         the temporary directory, removed at the end
#   CITUS_LAB_KEEP=1      keep the temporary directory (logs, data)
#   PG_CONFIG=...         the PostgreSQL to use (default: tools/pg_version.sh)
#   CITUS_LAB_EVENTS=N    events of the throughput figure (default 2000)
#   CITUS_LAB_ONLY=pat    source only the tools/citus_lab.d/*.sh files matching
#
# Exit status 0 when every step passed. It prints one line per step.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-}
if [ -z "$src" ] || [ ! -f "$src/configure" ] || [ ! -d "$src/src/backend/distributed" ]; then
    echo "usage: $0 CITUS_SOURCE_DIR   (a Citus source tree: see docs/scaling.md, \"The lab\")" >&2
    exit 2
fi
src=$(cd "$src" && pwd)
PG_CONFIG=${PG_CONFIG:-$("$here/tools/pg_version.sh" pg_config)} ||
    { echo "citus_lab: no PostgreSQL server development files found (run make deps)" >&2; exit 1; }
SYS_BINDIR=$($PG_CONFIG --bindir)
SYS_PKGLIBDIR=$($PG_CONFIG --pkglibdir)
SYS_SHAREDIR=$($PG_CONFIG --sharedir)
SYS_INCLUDEDIR=$($PG_CONFIG --includedir-server)

lab=$(mktemp -d /tmp/citus_lab.XXXXXX)
chmod 755 "$lab"
build=${CITUS_LAB_BUILD:-$lab/build}
mkdir -p "$build"; build=$(cd "$build" && pwd)
root="$lab/install"
bindir="$root$SYS_BINDIR"
datadirs=()

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}
cleanup() {
    local d
    for d in "${datadirs[@]}"; do
        as_pg "$bindir/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
    done
    if [ -n "${CITUS_LAB_KEEP:-}" ]; then echo "citus_lab: kept $lab"; else rm -rf "$lab"; fi
}
trap cleanup EXIT

failures=0
step() { printf '%-7s %s\n' "$1" "$2"; [ "$1" = ok ] || failures=$((failures + 1)); }
die() { echo "citus_lab: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }

# ---------------------------------------------------------------- 1. build
missing=()
for tool in make gcc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ -f "$SYS_INCLUDEDIR/postgres.h" ] || missing+=("PostgreSQL server headers (postgresql-server-dev-$($PG_CONFIG --version | sed 's/[^0-9]*\([0-9]*\).*/\1/'))")
has_header() { echo "#include <$1>" | gcc -E -x c - >/dev/null 2>&1; }
has_header curl/curl.h || missing+=("libcurl headers (libcurl4-openssl-dev)")
has_header lz4.h || missing+=("lz4 headers (liblz4-dev)")
has_header zstd.h || missing+=("zstd headers (libzstd-dev)")
if $PG_CONFIG --configure | grep -q with-gssapi; then
    has_header gssapi/gssapi.h || missing+=("GSSAPI headers, which PostgreSQL's server headers include (libkrb5-dev)")
fi
has_header libpq-fe.h || [ -f "$($PG_CONFIG --includedir)/libpq-fe.h" ] || missing+=("libpq headers (libpq-dev)")
if [ ${#missing[@]} -gt 0 ]; then
    printf 'citus_lab: missing build dependencies of Citus:\n' >&2
    printf '  %s\n' "${missing[@]}" >&2
    echo "  (Debian: apt-get install libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libpq-dev postgresql-server-dev-N)" >&2
    exit 1
fi

stamp="$(cd "$src" && find . -type f -newer "$src/configure" -o -name configure | wc -l) $(du -s "$src" | cut -f1) $($PG_CONFIG --version)"
t0=$(now_ms)
if [ -f "$build/src/src/backend/distributed/citus.so" ] && [ "$(cat "$build/stamp" 2>/dev/null)" = "built $stamp" ]; then
    step ok "build: reused the Citus build in $build"
else
    if [ "$(cat "$build/stamp" 2>/dev/null)" != "copied $stamp" ]; then
        rm -rf "$build/src"; mkdir -p "$build/src"
        cp -a "$src/." "$build/src/"
        # Citus 13.2.2 defines its own have_createdb_privilege() for PostgreSQL
        # < 16, which PostgreSQL 15.18 and later export too: drop the copy
        compat="$build/src/src/include/pg_version_compat.h"
        if grep -q 'have_createdb_privilege' "$SYS_INCLUDEDIR/commands/dbcommands.h" 2>/dev/null &&
           grep -q '^have_createdb_privilege(void)' "$compat" 2>/dev/null; then
            python3 - "$compat" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n', '', s, count=1, flags=re.S)
if '#include "commands/dbcommands.h"' not in s:
    s = s.replace('#include "catalog/pg_authid.h"', '#include "catalog/pg_authid.h"\n#include "commands/dbcommands.h"', 1)
open(p, 'w').write(s)
PY
            echo "citus_lab: note: removed Citus's own have_createdb_privilege() from the copy's src/include/pg_version_compat.h ($($PG_CONFIG --version) exports it)"
        fi
        (cd "$build/src" && ./configure PG_CONFIG="$PG_CONFIG" >"$build/configure.log" 2>&1) ||
            { tail -20 "$build/configure.log" >&2; die "Citus's configure failed (log: $build/configure.log)"; }
        echo "copied $stamp" >"$build/stamp"
    fi
    (cd "$build/src" && make -j2 with_llvm=no >"$build/make.log" 2>&1) ||
        { grep -m 20 -E 'error' "$build/make.log" >&2 || true; die "the Citus build failed (log: $build/make.log)"; }
    echo "built $stamp" >"$build/stamp"
    step ok "build: Citus $(sed -n "s/^default_version = '\\(.*\\)'/\\1/p" "$build/src/src/backend/distributed/citus.control") built in $(( ($(now_ms) - t0) / 1000 )) s"
fi
[ -n "${CITUS_LAB_BUILD_ONLY:-}" ] && exit 0

# ---------------------------------------------------------------- 2. install
t0=$(now_ms)
make -s -C "$here" install DESTDIR="$root" PG_CONFIG="$PG_CONFIG" >"$lab/install.log" 2>&1 ||
    { tail -20 "$lab/install.log" >&2; die "installing pg_agents failed"; }
make -s -C "$build/src" install with_llvm=no DESTDIR="$root" >>"$lab/install.log" 2>&1 ||
    { tail -20 "$lab/install.log" >&2; die "installing Citus failed"; }
mkdir -p "$root$SYS_BINDIR" "$root$SYS_PKGLIBDIR" "$root$SYS_SHAREDIR"
cp -a "$SYS_BINDIR/." "$root$SYS_BINDIR/"
cp -rsn "$SYS_PKGLIBDIR/." "$root$SYS_PKGLIBDIR/"
cp -rsn "$SYS_SHAREDIR/." "$root$SYS_SHAREDIR/"
[ -f "$root$SYS_PKGLIBDIR/citus.so" ] && [ -f "$root$SYS_PKGLIBDIR/pg_agents.so" ] || die "the private installation lacks citus.so or pg_agents.so"
step ok "install: PostgreSQL, Citus and pg_agents in $root ($(( ($(now_ms) - t0) / 1000 )) s)"

# ---------------------------------------------------------------- 3. cluster
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
preload=citus,pg_agents
[ -f "$root$SYS_PKGLIBDIR/pg_cron.so" ] && preload=citus,pg_agents,pg_cron
DB=lab
ports=()
if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$lab"; fi
t0=$(now_ms)
for n in coordinator worker1 worker2; do
    port=$(free_port); ports+=("$port")
    d="$lab/$n"
    as_pg "$bindir/initdb" -D "$d" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$lab/initdb-$n.log" 2>&1 ||
        { cat "$lab/initdb-$n.log" >&2; die "initdb of the $n failed"; }
    cat >>"$d/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$lab'
shared_preload_libraries = '$preload'
max_prepared_transactions = 100
wal_level = logical
pg_agents.database = 'postgres'    # the lab's doc blocks run in "$DB": no worker claims their runs
max_worker_processes = 32
max_connections = 200
fsync = off
full_page_writes = off
log_line_prefix = '%m [%p] %q%a '
timezone = 'UTC'
CONF
    as_pg "$bindir/pg_ctl" -D "$d" -l "$lab/$n.log" -w -t 60 start >/dev/null ||
        { tail -20 "$lab/$n.log" >&2; die "the $n did not start"; }
    datadirs+=("$d")
    "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DB"
    "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d "$DB" -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION citus' >/dev/null
done
cport=${ports[0]}
"$bindir/psql" -X -q -At -h 127.0.0.1 -p "$cport" -U postgres -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT citus_set_coordinator_host('127.0.0.1', $cport);
SELECT citus_add_node('127.0.0.1', ${ports[1]});
SELECT citus_add_node('127.0.0.1', ${ports[2]});
SQL
step ok "cluster: coordinator :$cport, workers :${ports[1]} :${ports[2]} ($(( ($(now_ms) - t0) / 1000 )) s)"

psqlc() { "$bindir/psql" -X -At -q -h 127.0.0.1 -p "$cport" -U "${LAB_USER:-postgres}" -d "$DB" "$@"; }
as_app() { LAB_USER=app psqlc "$@"; }

# ---------------------------------------------------------------- 4. the doc
# Every <!-- e2e: NAME --> block of docs/scaling.md, in order, in one psql
# session; a block's expected output is its closing run of "-- " lines (a
# line "-- X: words" expects X).
python3 - "$here/docs/scaling.md" "$lab/doc.sql" "$lab/doc.expected" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r'<!-- e2e: (\S+) -->\n```sql\n(.*?)```', text, re.S)
sql, expected = [], {}
for name, body in blocks:
    lines = body.rstrip('\n').split('\n')
    exp = []
    while lines and lines[-1].startswith('--'):
        exp.insert(0, lines.pop()[2:].strip())
    expected[name] = exp
    sql.append("\\echo '@@block %s'\n%s\n\\echo '@@end %s'\n" % (name, '\n'.join(lines), name))
open(sys.argv[2], 'w').write('\\set ON_ERROR_STOP 1\n' + ''.join(sql))
json.dump([[n, expected[n]] for n, _ in blocks], open(sys.argv[3], 'w'))
PY
t0=$(now_ms)
set +e
psqlc -f "$lab/doc.sql" >"$lab/doc.out" 2>"$lab/doc.err"
doc_rc=$?
set -e
doc_ms=$(( $(now_ms) - t0 ))
python3 - "$lab/doc.expected" "$lab/doc.out" "$lab/doc.err" "$doc_rc" "$doc_ms" >"$lab/doc.report" <<'PY'
import json, sys
blocks = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read().split('\n')
err = open(sys.argv[3]).read().strip()
got, cur = {}, None
for line in out:
    if line.startswith('@@block '):
        cur = line[8:]; got[cur] = []
    elif line.startswith('@@end '):
        cur = None
    elif cur is not None:
        got[cur].append(line)
passed = 0
for name, exp in blocks:
    if name not in got:
        print('FAIL    doc block %s: not run' % name); continue
    lines = got[name]
    if not exp:
        ok = True    # no output shown on the page: only that it ran
        ended = ('@@end ' + name) in out
        ok = ended
    else:
        ok = len(lines) == len(exp) and all(g == e or e.startswith(g + ':') for g, e in zip(lines, exp))
        ok = ok and ('@@end ' + name) in out
    if ok:
        passed += 1
        print('ok      doc block %s' % name)
    else:
        print('FAIL    doc block %s: expected %r, got %r' % (name, exp, lines))
print('SUMMARY %d/%d doc blocks passed in %.1f s%s' % (passed, len(blocks), int(sys.argv[5]) / 1000.0,
      '' if sys.argv[4] == '0' else '; psql stopped: ' + err.split('\n')[-1]))
PY
while IFS= read -r line; do
    case "$line" in
        ok*) echo "$line" ;;
        FAIL*) echo "$line"; failures=$((failures + 1)) ;;
        SUMMARY*) echo "${line#SUMMARY }" ;;
    esac
done <"$lab/doc.report"
[ "$doc_rc" -eq 0 ] || { echo "--- psql errors:"; tail -5 "$lab/doc.err"; }

# ---------------------------------------------------------------- 5. checks
# (they run after the doc's blocks, on its workspaces, agents and tables)
check() {  # check NAME EXPECTED SQL... : the output of the SQL (psql -At) is EXPECTED
    local name=$1 expected=$2 got; shift 2
    got=$("$@" 2>&1) || true
    if [ "$got" = "$expected" ]; then step ok "$name"; else step FAIL "$name: expected [$expected], got [$got]"; fi
}
check_error() {  # check_error NAME PATTERN SQL...: the SQL fails with an error matching PATTERN
    local name=$1 pattern=$2 got rc; shift 2
    set +e; got=$("$@" 2>&1); rc=$?; set -e
    if [ $rc -ne 0 ] && printf '%s' "$got" | grep -Eq "$pattern"; then step ok "$name"
    else step FAIL "$name: expected an error matching /$pattern/, got (rc $rc) [$got]"; fi
}

# Issue 35, item 3: identity on every node or an error.  The audit trigger
# of public.tickets fires on the worker that holds the row.
check_error "identity: set_config('pg_agents.actor') then an audited write on a worker is refused" \
    'pg_agents.actor is not set on the node that holds this row' \
    as_app -v ON_ERROR_STOP=1 -c "BEGIN" \
        -c "SET LOCAL pg_agents.workspace = 'acme'" \
        -c "SELECT set_config('pg_agents.actor', 'user:alice', true)" \
        -c "INSERT INTO public.tickets VALUES (101, 'acme', 'alice', 'set_config')" -c "COMMIT"
check_error "identity: a session-level SET then an autocommit audited write is refused" \
    'pg_agents.actor is not set on the node that holds this row' \
    as_app -v ON_ERROR_STOP=1 -c "SET pg_agents.actor = 'user:alice'" \
        -c "INSERT INTO public.tickets VALUES (102, 'initech', 'peter', 'session SET')"
check "identity: no audit row (and no ticket) from the refused writes" "0|0" \
    psqlc -c "SELECT (SELECT count(*) FROM agent.audit_log WHERE target_type = 'ticket' AND target_id IN ('[\"101\",\"acme\"]', '[\"102\",\"initech\"]')),
                     (SELECT count(*) FROM public.tickets WHERE id IN (101, 102))"
check "identity: agent.set_identity() reaches the worker (actor bob, surface cli)" "acme|human|bob|cli" \
    as_app -v ON_ERROR_STOP=1 -c "BEGIN" \
        -c "SELECT FROM agent.set_identity('user:bob', 'acme', NULL, 'cli')" \
        -c "INSERT INTO public.tickets VALUES (103, 'acme', 'bob', 'set_identity')" -c "COMMIT" \
        -c "\\c - postgres" \
        -c "SELECT workspace_id, actor_kind, actor_id, surface FROM agent.audit_log WHERE target_type = 'ticket' AND target_id = '[\"103\",\"acme\"]'"
check "identity: SET LOCAL pg_agents.actor = 'agent:…' reaches the worker" "initech|agent" \
    as_app -v ON_ERROR_STOP=1 -c "BEGIN" \
        -c "SET LOCAL pg_agents.workspace = 'initech'" -c "SET LOCAL pg_agents.actor = 'agent:7'" \
        -c "INSERT INTO public.tickets VALUES (104, 'initech', 'peter', 'agent')" -c "COMMIT" \
        -c "\\c - postgres" \
        -c "SELECT workspace_id, actor_kind FROM agent.audit_log WHERE target_type = 'ticket' AND target_id = '[\"104\",\"initech\"]'"

# Issue 35, item 2: an API call in the application's transaction that wrote
# rows of the same workspace: fire_event dispatches through the distributed
# function agent._fire_event_in (docs/scaling.md, step 2) and queues its run
# in that transaction (tools/citus_lab.d/20_transactional.sh checks more)
check "transactional call (issue 35 item 2): INSERT then fire_event in one transaction queues the run" "1" \
    as_app -v ON_ERROR_STOP=1 -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" \
    -c "SET LOCAL pg_agents.actor = 'user:alice'" \
    -c "INSERT INTO public.tickets VALUES (105, 'acme', 'alice', 'transactional')" \
    -c "SELECT count(*) FROM agent.fire_event('ticket.created', 'collection', 'public.tickets', '{\"row_id\": \"105\"}', 'user:alice', 'tickets:105')" \
    -c "COMMIT"

# ---------------------------------------------------------------- 5b. more checks
# tools/citus_lab.d/*.sh, in name order, are sourced here: each adds its own
# checks and figures (check, check_error, step) on the doc's cluster, with
# psqlc/as_app (the coordinator), ports (coordinator, worker1, worker2),
# bindir, DB, lab and here.  CITUS_LAB_ONLY=pattern sources only the files
# whose name contains it.
for f in "$here"/tools/citus_lab.d/*.sh; do
    [ -e "$f" ] || continue
    if [ -n "${CITUS_LAB_ONLY:-}" ] && [[ "$(basename "$f")" != *$CITUS_LAB_ONLY* ]]; then continue; fi
    . "$f"
done

# ---------------------------------------------------------------- 6. figures
# fire_event through the coordinator, one transaction each, alternating the
# two workspaces (on the two workers); one client
events=${CITUS_LAB_EVENTS:-2000}
python3 - "$events" >"$lab/fire.sql" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    w = ('acme', 'alice') if i % 2 == 0 else ('initech', 'peter')
    print("BEGIN;\nSET LOCAL pg_agents.workspace = '%s';\n"
          "SELECT count(*) FROM agent.fire_event('ticket.created', 'collection', 'public.tickets', "
          "'{\"row_id\": \"%d\"}', 'user:%s', 'lab:fire:%d');\nCOMMIT;" % (w[0], 1000 + i, w[1], i))
PY
before=$(psqlc -c "SELECT count(*) FROM agent.runs")
t0=$(now_ms)
LAB_USER=app psqlc -v ON_ERROR_STOP=1 -f "$lab/fire.sql" >/dev/null 2>"$lab/fire.err" ||
    { step FAIL "figure: fire_event: $(tail -1 "$lab/fire.err")"; }
fire_ms=$(( $(now_ms) - t0 ))
after=$(psqlc -c "SELECT count(*) FROM agent.runs")
if [ $((after - before)) -eq "$events" ]; then
    step ok "figure: $events fire_event transactions (each queues one run) in $fire_ms ms: $(( events * 1000 / (fire_ms > 0 ? fire_ms : 1) )) events/s, one client through the coordinator"
else
    step FAIL "figure: $events events queued $((after - before)) runs"
fi
# decisions: can_access through the coordinator, in one statement
n=2000
initech_agent=$(psqlc -c "SELECT min(id) FROM agent.agents WHERE workspace_id = 'initech'")
t0=$(now_ms)
got=$(LAB_USER=app psqlc -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'initech'" \
    -c "SELECT count(*) FILTER (WHERE agent.can_access($initech_agent, 'page', 'tps-report', 'edit')) FROM generate_series(1, $n)" -c "COMMIT" 2>&1)
dec_ms=$(( $(now_ms) - t0 ))
step ok "figure: $n can_access decisions in one statement in $dec_ms ms ($(( dec_ms * 1000 / n )) us each; answer counted true: $got)"

# ---------------------------------------------------------------- end
if [ "$failures" -eq 0 ]; then echo "citus_lab: all steps passed"; exit 0; fi
echo "citus_lab: $failures step(s) failed (logs: rerun with CITUS_LAB_KEEP=1)"
exit 1
