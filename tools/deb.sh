#!/usr/bin/env bash
# The Debian package of pg_agents, built the way Debian builds PostgreSQL
# extensions (debian/, pg_buildext), for the installed PostgreSQL major
# version (tools/pg_version.sh; PG_MAJOR=17 to choose).
#
#   tools/deb.sh build    make deb: dist/postgresql-NN-pg-agents_<version>-1_<arch>.deb
#   tools/deb.sh test     make test-deb: install that package with apt-get into a
#                         fresh minimal root of this host's Debian release, create a
#                         system cluster with pg_createcluster, preload the library,
#                         CREATE EXTENSION (and ALTER EXTENSION ... UPDATE from the
#                         previous version), run an agent end to end against the
#                         scripted LLM server, then remove the package
#                         (tools/deb_smoke.sh, run inside the root)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
die() { echo "pg_agents: $*" >&2; exit 1; }

major=$(tools/pg_version.sh major) || die "no PostgreSQL found: run make deps"
extversion=$(sed -n "s/^default_version = '\(.*\)'/\1/p" pg_agents.control)
arch=$(dpkg --print-architecture)

build() {
    local debversion work src log deb
    debversion=$(dpkg-parsechangelog -l debian/changelog -S Version)
    [ "${debversion%-*}" = "$extversion" ] ||
        die "debian/changelog is at $debversion, pg_agents.control at $extversion: add a changelog entry (dch -v $extversion-1)"
    work=$(mktemp -d "${TMPDIR:-/tmp}/pg_agents_deb.XXXXXX")
    trap 'rm -rf "$work"' RETURN
    src="$work/pg-agents-$extversion"
    mkdir -p "$src"
    # this checkout's files (tracked and untracked, not ignored), not its build products
    if git rev-parse --git-dir >/dev/null 2>&1; then
        git ls-files -z -co --exclude-standard | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' _ |
            tar --null -T - -cf - | tar -C "$src" -xf -
    else
        tar --exclude=./.git --exclude=./.matrix --exclude=./dist --exclude=./test/fixtures/node_modules \
            --exclude=./bin --exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude=./results \
            -cf - . | tar -C "$src" -xf -
    fi
    log="$work/build.log"
    echo "pg_agents: building postgresql-$major-pg-agents $debversion"
    # debian/control for this version only, from debian/control.in
    if ! (cd "$src" && export PG_SUPPORTED_VERSIONS=$major &&
            pg_buildext updatecontrol && dpkg-buildpackage -b -us -uc) >"$log" 2>&1; then
        tail -30 "$log" >&2
        die "dpkg-buildpackage failed"
    fi
    deb="postgresql-${major}-pg-agents_${debversion}_${arch}.deb"
    [ -f "$work/$deb" ] || { tail -30 "$log" >&2; die "no $deb was built"; }
    mkdir -p dist
    mv "$work/$deb" dist/
    echo "pg_agents: dist/$deb"
    dpkg-deb -f "dist/$deb" Depends Recommends | sed 's/^/  /'
}

smoke() {
    local debversion deb suite rc start
    debversion=$(dpkg-parsechangelog -l debian/changelog -S Version)
    deb="postgresql-${major}-pg-agents_${debversion}_${arch}.deb"
    [ -f "dist/$deb" ] || die "dist/$deb is missing: make deb"
    suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$suite" ] || die "cannot tell this host's Debian release (/etc/os-release)"
    [ "$(id -u)" -eq 0 ] || die "make test-deb runs as root (debootstrap and chroot)"
    root=$(mktemp -d "${TMPDIR:-/tmp}/pg_agents_debroot.XXXXXX")
    trap 'tools/matrix.sh release "$root"; rm -rf "$root"' EXIT
    start=$SECONDS
    echo "pg_agents: a fresh minimal Debian $suite root"
    tools/matrix.sh fresh "$suite" "$root" || die "could not make the root"
    mkdir -p "$root/tmp/pg_agents_deb"
    cp "dist/$deb" tools/deb_smoke.sh test/fixtures/llm_server.py test/fixtures/llm.sh "$root/tmp/pg_agents_deb/"
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive \
        chroot "$root" /bin/bash /tmp/pg_agents_deb/deb_smoke.sh "$major" "/tmp/pg_agents_deb/$deb" </dev/null
    rc=$?
    echo "pg_agents: test-deb took $((SECONDS - start)) s"
    return $rc
}

case "${1:-}" in
build) build ;;
test) smoke ;;
*) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
