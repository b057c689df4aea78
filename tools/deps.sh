#!/usr/bin/env bash
# Install what pg_agents needs to build and test, when it is missing.
# Idempotent and quiet when everything is already there.
#
# The PostgreSQL major version is the one installed (tools/pg_version.sh),
# PG_MAJOR=17 to choose, else Debian's default on this release (15 on
# Debian 12, 17 on Debian 13, 18 on forky).  The packages (README.md lists
# them too):
#   postgresql-N postgresql-server-dev-N postgresql-N-cron postgresql-N-pgtap
#   libtap-parser-sourcehandler-pgtap-perl (pg_prove)
#   libcurl4-openssl-dev libjansson-dev libxml2-dev build-essential
#                                           (libxml2: web_fetch's HTML to text)
#   prometheus-postgres-exporter            (the exporter test of docs/monitoring.md)
#   curl ca-certificates procps
#   clang libclang-rt-dev                   (libFuzzer, for test/fuzz)
#   python3                                 (the tests' LLM and MCP servers; when missing)
#   nodejs npm                              (npm installs the MCP peers, which run on
#                                            the Node 22 it brings; when npm is missing)
#   postgresql-N-pgvector                   (semantic search; only where this release's
#                                            apt sources have it: 17 and 18, not 15)
# `tools/deps.sh --deb` (make deb) also installs what building the Debian
# package needs: debhelper, postgresql-server-dev-all (pg_buildext), dpkg-dev.
# apt-get's output goes to a log; a progress line says how far it is.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
updated=
apt_update() {
    [ -n "$updated" ] && return 0
    $SUDO apt-get update -qq >/dev/null 2>&1 || $SUDO apt-get update -qq
    updated=1
}

major=$("$here/tools/pg_version.sh" major) || major=
if [ -z "$major" ]; then
    command -v apt-get >/dev/null 2>&1 || { echo "pg_agents: no PostgreSQL found and no apt-get: set PG_MAJOR and install PostgreSQL's server development files" >&2; exit 1; }
    if [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then
        echo "pg_agents: not root and no sudo: run 'make deps' as root" >&2; exit 1
    fi
    apt_update
    major=$("$here/tools/pg_version.sh" major --apt) ||
        { echo "pg_agents: this release's apt sources offer no PostgreSQL (no package 'postgresql'); set PG_MAJOR" >&2; exit 1; }
fi

pkgs=(postgresql-$major postgresql-server-dev-$major postgresql-$major-cron postgresql-$major-pgtap
      libtap-parser-sourcehandler-pgtap-perl libcurl4-openssl-dev libjansson-dev libssl-dev
      libxml2-dev prometheus-postgres-exporter pkg-config
      build-essential curl ca-certificates procps
      clang libclang-rt-dev)
command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
if [ "${1:-}" = --deb ]; then pkgs+=(debhelper postgresql-server-dev-all dpkg-dev); fi
if [ "${1:-}" = --valgrind ]; then pkgs+=(valgrind); fi

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

# pgvector is optional (semantic search, docs/allowlist.md): installed where
# the apt sources offer it, never a failure where they do not
optional=postgresql-$major-pgvector
want_optional() {
    ! dpkg-query -W -f='${Status}' "$optional" 2>/dev/null | grep -q "install ok installed" &&
        command -v apt-cache >/dev/null 2>&1 && apt-cache show "$optional" >/dev/null 2>&1
}
if want_optional; then
    if [ ${#missing[@]} -eq 0 ] && [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then
        echo "pg_agents: $optional (semantic search) is available; install it as root to test it"
    else
        missing+=("$optional")
    fi
fi

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "pg_agents: PostgreSQL $major: installing ${missing[*]}"
if [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then
    echo "pg_agents: not root and no sudo; install: ${missing[*]}" >&2; exit 1
fi
# Installing postgresql-N must not start Debian's own cluster on 5432.
if [ ! -e /usr/sbin/policy-rc.d ] && [ -z "$SUDO" ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt_update
# fresh package lists may offer what the old ones did not
case " ${missing[*]} " in *" $optional "*) ;; *) if want_optional; then missing+=("$optional"); fi ;; esac

# apt-get install with one progress line (redrawn on a terminal, a line every
# quarter otherwise); the whole output in a log, shown when it fails.
log=$(mktemp "${TMPDIR:-/tmp}/pg_agents-apt.XXXXXX")
start=$SECONDS
set +e
$SUDO apt-get install -y -q --no-install-recommends -o APT::Status-Fd=3 "${missing[@]}" 3>&1 >"$log" 2>&1 |
    awk -F: -v tty="$([ -t 1 ] && echo 1 || echo 0)" '
        $1 == "dlstatus" || $1 == "pmstatus" {
            what = ($1 == "dlstatus") ? "downloading" : "installing"
            pct = int($3)
            if (tty) { printf "\rpg_agents: %s %3d%% %-50.50s", what, pct, $4; fflush() }
            else if (what != lastwhat || pct >= nxt) {
                printf "pg_agents: %s %3d%%\n", what, pct; fflush()
                if (what != lastwhat) nxt = 0
                while (nxt <= pct) nxt += 25
                lastwhat = what
            }
        }
        END { if (tty) printf "\r\033[K" }'
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
    tail -20 "$log" >&2
    echo "pg_agents: apt-get install failed (whole output: $log)" >&2
    exit 1
fi
rm -f "$log"
echo "pg_agents: ${#missing[@]} packages installed in $((SECONDS - start)) s"
