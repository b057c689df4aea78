#!/usr/bin/env bash
# Run by tools/deb.sh test inside a fresh minimal Debian root, as root:
#   deb_smoke.sh MAJOR PATH/TO/postgresql-MAJOR-pg-agents_*.deb
# What docs/install.md tells an administrator, checked step by step: apt-get
# install of the package, a system cluster (pg_createcluster), the library in
# shared_preload_libraries, CREATE EXTENSION, ALTER EXTENSION ... UPDATE, an
# agent run end to end against the scripted LLM server (the worker of the
# system cluster calls it), then DROP EXTENSION and apt-get purge.
# Prints TAP; exits 1 when a step fails.
set -uo pipefail
major=${1:?usage: deb_smoke.sh MAJOR DEB}
deb=${2:?usage: deb_smoke.sh MAJOR DEB}
here=$(cd "$(dirname "$0")" && pwd)
cluster=agents
db=agents_smoke
n=0; failed=0; nfail=0
ok() {  # status description
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; nfail=$((nfail + 1)); fi
}
is() {  # got expected description
    n=$((n + 1))
    if [ "$1" == "$2" ]; then echo "ok $n - $3"
    else echo "not ok $n - $3"; echo "#   got:      '$1'"; echo "#   expected: '$2'"; failed=1; nfail=$((nfail + 1)); fi
}
bail() { echo "Bail out! $*"; echo "deb: $((n - nfail)) passed, $((nfail + 1)) failed"; exit 1; }
log=$(mktemp "${TMPDIR:-/tmp}/pg_agents_deb_apt.XXXXXX")   # the whole output of apt and the cluster tools
llm_pid=
finish() {
    [ -n "$llm_pid" ] && kill "$llm_pid" 2>/dev/null
    # the cluster goes with the test (a root that is kept can run it again)
    command -v pg_dropcluster >/dev/null 2>&1 && pg_dropcluster --stop "$major" "$cluster" >/dev/null 2>&1
    rm -f /usr/sbin/policy-rc.d
}
trap finish EXIT

# 1. the package, from the mirror and the file
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d   # no service starts in a root
apt-get update -qq >"$log" 2>&1 || bail "apt-get update failed: $(tail -3 "$log")"
apt-get install -y -q "$deb" python3 >>"$log" 2>&1
rc=$?
ok $rc "apt-get install ./$(basename "$deb") (with its dependencies from the mirror)"
[ $rc -eq 0 ] || { tail -20 "$log" | sed 's/^/# /'; bail "the package did not install"; }
for p in "postgresql-$major" libcurl4 libjansson4 "postgresql-$major-cron"; do
    # (libcurl4 is libcurl4t64 since Debian 13)
    st=$(dpkg-query -W -f='${Status}\n' "$p" "${p}t64" 2>/dev/null)
    [[ "$st" == *"install ok installed"* ]]
    ok $? "$p installed with it (Depends: postgresql-$major, libcurl, libjansson; Recommends: postgresql-$major-cron)"
done
libdir=$("/usr/lib/postgresql/$major/bin/pg_config" --pkglibdir 2>/dev/null || echo "/usr/lib/postgresql/$major/lib")
[ -f "$libdir/pg_agents.so" ] && [ -f "/usr/share/postgresql/$major/extension/pg_agents.control" ]
ok $? "pg_agents.so in $libdir, pg_agents.control in /usr/share/postgresql/$major/extension"

# 2. a system cluster with the library preloaded
pg_dropcluster --stop "$major" "$cluster" >/dev/null 2>&1   # left by an interrupted run
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
pg_createcluster "$major" "$cluster" -p "$port" >/dev/null 2>>"$log"
ok $? "pg_createcluster $major $cluster"
pg_conftool -s "$major" "$cluster" set listen_addresses ""   # the socket in /var/run/postgresql only
pg_conftool -s "$major" "$cluster" set shared_preload_libraries pg_agents
pg_conftool -s "$major" "$cluster" set pg_agents.database "$db"
pg_ctlcluster "$major" "$cluster" start >>"$log" 2>&1
ok $? "pg_ctlcluster $major $cluster start (shared_preload_libraries = 'pg_agents')"
psql_() { runuser -u postgres -- psql -X -A -t -q -p "$port" -v ON_ERROR_STOP=1 "$@" 2>&1; }
psql_ -d postgres -c "CREATE DATABASE $db" >/dev/null
is "$(psql_ -d "$db" -c "SHOW shared_preload_libraries")" "pg_agents" "the library is preloaded"

# 3. the extension: the previous version, then ALTER EXTENSION ... UPDATE
prev=$(ls "/usr/share/postgresql/$major/extension/" | sed -n 's/^pg_agents--\([0-9.]*\)--[0-9.]*\.sql$/\1/p' | sort -V | tail -1)
current=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "/usr/share/postgresql/$major/extension/pg_agents.control")
if [ -n "$prev" ]; then
    is "$(psql_ -d "$db" -c "CREATE EXTENSION pg_agents VERSION '$prev'" -c "ALTER EXTENSION pg_agents UPDATE" \
           -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_agents'")" "$current" \
       "CREATE EXTENSION pg_agents VERSION '$prev'; ALTER EXTENSION pg_agents UPDATE: at $current"
    psql_ -d "$db" -c "DROP EXTENSION pg_agents CASCADE" >/dev/null
fi
is "$(psql_ -d "$db" -c "CREATE EXTENSION pg_agents" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_agents'")" \
   "$current" "CREATE EXTENSION pg_agents"

# 4. an agent end to end: the worker of this cluster calls the scripted LLM server
fixtures=$here; [ -f "$fixtures/llm.sh" ] || fixtures="$here/../test/fixtures"   # beside it, or in a checkout
. "$fixtures/llm.sh"
llm_start
llm_pid=$LLM_PID
trap finish EXIT   # (llm_start set its own)
llm_script "" '[{"text": "Valve B is open."}]'
a=$(psql_ -d "$db" -c "SELECT agent.create_agent('deb-smoke', 'alice', 'Smoke test',
        jsonb_build_object('instructions', 'Answer briefly.', 'approval_mode', 'none'))")
# the DBA's endpoint (the key rules of docs/worker.md: an agent's own URL
# needs pg_agents.llm_url_allowlist)
psql_ -d postgres -c "ALTER SYSTEM SET pg_agents.llm_url = '$LLM_URL'" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 50); do [ "$(psql_ -d "$db" -c "SHOW pg_agents.llm_url")" = "$LLM_URL" ] && break; sleep 0.1; done
sleep 0.5   # the worker reloads its settings at its next loop
r=$(psql_ -d "$db" -c "SELECT agent.start_run($a, 'alice', '{\"prompt\": \"Is valve B open?\"}', 'autonomous', 'api')")
st=
for _ in $(seq 1 600); do
    st=$(psql_ -d "$db" -c "SELECT status FROM agent.runs WHERE id = $r")
    case "$st" in succeeded|failed|budget_exceeded|cancelled) break ;; esac
    sleep 0.1
done
is "$st" succeeded "run $r of agent $a: picked up by the worker and finished"
is "$(psql_ -d "$db" -c "SELECT output->>'text' FROM agent.runs WHERE id = $r")" "Valve B is open." \
   "its answer is the LLM server's"
is "$(llm_requests | python3 -c 'import json,sys; print(sum("Is valve B open?" in json.dumps(r) for r in json.load(sys.stdin)))')" 1 \
   "the LLM server received the prompt once"
llm_stop; llm_pid=

# 5. uninstall: DROP EXTENSION, the library out of shared_preload_libraries, apt-get purge
psql_ -d "$db" -c "DROP EXTENSION pg_agents CASCADE" >/dev/null
ok $? "DROP EXTENSION pg_agents"
pg_conftool -s "$major" "$cluster" remove shared_preload_libraries
pg_ctlcluster "$major" "$cluster" restart >>"$log" 2>&1
ok $? "the cluster restarts without the library"
apt-get purge -y -q "postgresql-$major-pg-agents" >>"$log" 2>&1
ok $? "apt-get purge postgresql-$major-pg-agents"
[ ! -e "$libdir/pg_agents.so" ] && [ ! -e "/usr/share/postgresql/$major/extension/pg_agents.control" ]
ok $? "its files are gone"
pg_dropcluster --stop "$major" "$cluster" >>"$log" 2>&1
ok $? "pg_dropcluster --stop $major $cluster"
echo "1..$n"
echo "deb: $((n - nfail)) passed, $nfail failed"
exit $failed
