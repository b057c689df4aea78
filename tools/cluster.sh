#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for pg_agents tests, demo and benchmarks (the
# version tools/pg_version.sh finds: PG_MAJOR=17 or PG_CONFIG=... to choose).
#
#   tools/cluster.sh start [DIR]   build, install into DIR (a private copy of
#                                  the PostgreSQL installation, so that several
#                                  checkouts never share one pg_agents.so),
#                                  initdb, start, create the database; prints
#                                  the path of an env file to source
#   tools/cluster.sh stop DIR      stop the server and remove DIR
#   tools/cluster.sh restart DIR   restart the server (crash/recovery tests)
#
# The cluster listens on 127.0.0.1 on a free port, with
# shared_preload_libraries = 'pg_agents,pg_cron'.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-$("$here/tools/pg_version.sh" pg_config)} ||
    { echo "pg_agents: no PostgreSQL server development files found (run make deps)" >&2; exit 1; }
SYS_BINDIR=$($PG_CONFIG --bindir)
SYS_PKGLIBDIR=$($PG_CONFIG --pkglibdir)
SYS_SHAREDIR=$($PG_CONFIG --sharedir)
# Two databases: the worker's (integration tests, demo, bench) and one for
# pg_regress and pgTAP, where no worker claims runs behind the tests' back
# and where pg_cron lives.
DBNAME=${PG_AGENTS_DB:-pg_agents_test}
REGRESS_DB=pg_agents_regress

# as root, the postgres user runs the server tools, from / (it may not be
# allowed into the caller's current directory)
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

cmd=${1:-}
case "$cmd" in
start)
    dir=${2:-$(mktemp -d /tmp/pg_agents.XXXXXX)}
    mkdir -p "$dir"; chmod 755 "$dir"; dir=$(cd "$dir" && pwd)
    root="$dir/install"
    # 1. a private installation: our files installed with DESTDIR, the rest of
    #    PostgreSQL (and pg_cron, pgTAP) linked in; PostgreSQL finds its share
    #    and lib directories relative to its own binaries.
    make -s -C "$here" install DESTDIR="$root" PG_CONFIG="$PG_CONFIG" >"$dir/install.log" 2>&1 \
        || { cat "$dir/install.log" >&2; exit 1; }
    mkdir -p "$root$SYS_BINDIR" "$root$SYS_PKGLIBDIR" "$root$SYS_SHAREDIR"
    cp -a "$SYS_BINDIR/." "$root$SYS_BINDIR/"
    cp -rsn "$SYS_PKGLIBDIR/." "$root$SYS_PKGLIBDIR/"
    cp -rsn "$SYS_SHAREDIR/." "$root$SYS_SHAREDIR/"
    bindir="$root$SYS_BINDIR"
    port=${PG_AGENTS_PORT:-$(free_port)}
    data="$dir/data"
    if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$dir"; fi
    as_pg "$bindir/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    cat >>"$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
shared_preload_libraries = 'pg_agents,pg_cron'
cron.database_name = '$REGRESS_DB'
pg_agents.database = '$DBNAME'
max_worker_processes = 32
max_connections = 200
fsync = off
synchronous_commit = on   # with fsync off, commits still survive a killed backend (crash tests)
full_page_writes = off
log_line_prefix = '%m [%p] %q%a '
log_min_messages = warning
timezone = 'UTC'
track_commit_timestamp = on   # bench/worker.sh measures pickup from the queueing commit
CONF
    if [ -n "${PG_AGENTS_EXTRA_CONF:-}" ]; then printf '%s\n' "$PG_AGENTS_EXTRA_CONF" >>"$data/postgresql.conf"; fi
    # PG_AGENTS_VALGRIND=SUPPRESSIONS (make valgrind, tools/run_tests.sh): from
    # here on the server runs under valgrind memcheck, one log per process in
    # $dir/valgrind/ (initdb ran without it)
    start_timeout=60
    if [ -n "${PG_AGENTS_VALGRIND:-}" ]; then
        mkdir -p "$dir/valgrind"
        mv "$bindir/postgres" "$bindir/postgres.bin"
        cat >"$bindir/postgres" <<WRAP
#!/bin/sh
exec valgrind --quiet --tool=memcheck --error-limit=no --num-callers=40 --leak-check=no --fullpath-after= \\
    --suppressions='$PG_AGENTS_VALGRIND' --log-file='$dir/valgrind/%p.log' '$bindir/postgres.bin' "\$@"
WRAP
        chmod 755 "$bindir/postgres"
        if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$dir/valgrind"; fi
        start_timeout=600
    fi
    as_pg "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t "$start_timeout" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    for db in "$DBNAME" "$REGRESS_DB"; do
        "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"
    done
    "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d "$REGRESS_DB" -v ON_ERROR_STOP=1 \
        -c "CREATE EXTENSION pg_cron; CREATE EXTENSION pgtap; CREATE EXTENSION pg_agents;" >/dev/null
    "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d "$DBNAME" -v ON_ERROR_STOP=1 \
        -c "CREATE EXTENSION pgtap; CREATE EXTENSION pg_agents;" >/dev/null
    cat >"$dir/env" <<ENV
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=$DBNAME
export PG_AGENTS_REGRESS_DB=$REGRESS_DB
export PG_AGENTS_DIR='$dir' PG_AGENTS_BINDIR='$bindir' PGDATA='$data'
export PG_AGENTS_SRC='$here'
export PATH='$bindir':\$PATH
ENV
    echo "$dir/env"
    ;;
stop)
    dir=$2
    [ -d "$dir/data" ] && as_pg "$dir/install$SYS_BINDIR/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    [ -n "${PG_AGENTS_KEEP:-}" ] || rm -rf "$dir"
    ;;
restart)
    dir=$2
    as_pg "$dir/install$SYS_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >/dev/null
    ;;
*)
    echo "usage: $0 start [DIR] | stop DIR | restart DIR" >&2; exit 2 ;;
esac
