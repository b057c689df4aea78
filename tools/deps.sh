#!/usr/bin/env bash
# Install what pg_agents needs to build and test, when it is missing.
# Idempotent and quiet when everything is already there.
set -euo pipefail

pkgs=(postgresql-15 postgresql-server-dev-15 postgresql-15-cron postgresql-15-pgtap
      libtap-parser-sourcehandler-pgtap-perl libcurl4-openssl-dev libjansson-dev libssl-dev
      build-essential curl ca-certificates procps
      clang-14 libclang-rt-14-dev)  # clang-14 + libclang-rt-14-dev: libFuzzer for test/fuzz
command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs npm)

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "pg_agents: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
    command -v sudo >/dev/null 2>&1 || { echo "pg_agents: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
# Installing postgresql-15 must not start Debian's own cluster on 5432.
if [ ! -e /usr/sbin/policy-rc.d ] && [ -z "$SUDO" ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "pg_agents: packages installed"
