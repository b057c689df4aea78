#!/usr/bin/env bash
# make test-matrix: the whole `make test` on other Debian releases, each in a
# minimal root built with debootstrap (what a new user on that release has).
#
#   tools/matrix.sh [LEG...]          run the legs (default: trixie forky)
#   tools/matrix.sh shell LEG [CMD]   a shell (or CMD) in a leg's root, with the
#                                     checkout copied to /build/pg_agents
#   tools/matrix.sh clean [LEG...]    remove the cached roots
#   tools/matrix.sh stale [LEG...]    which cached roots a run would rebuild
#   tools/matrix.sh fresh SUITE DIR   a new minimal root of SUITE in DIR (for
#                                     tools/deb.sh), /proc and /dev/shm mounted;
#                                     `tools/matrix.sh release DIR` ends its
#                                     processes and unmounts
#
# A leg is a Debian suite: trixie (Debian 13, PostgreSQL 17), forky (Debian
# 14 in the making, PostgreSQL 18), bookworm (Debian 12, PostgreSQL 15).  For
# each leg:
#   1. the root: `debootstrap --variant=minbase` from the mirror this host's
#      apt uses (read from its sources at run time), kept in the cache folder
#      $PG_AGENTS_MATRIX_CACHE (default /var/cache/pg_agents-matrix, so that a
#      fresh clone on the same machine finds it; `.matrix` puts it in the
#      git-ignored folder of the checkout).  Packages that `make test`
#      installs stay installed in it, so a second run is fast;
#   2. the host's CA trust store is copied in (npm then works there as it
#      does here), /proc and a /dev/shm are mounted;
#   3. what a new user runs: `apt-get install -y git make ca-certificates`,
#      then `make test` in a copy of this checkout (tracked and untracked
#      files, not ignored ones); then `make deb` and tools/deb_smoke.sh: the
#      package installed with apt-get, a system cluster, an agent run;
#   4. every process left in the root is ended and the mounts are removed,
#      also when the leg fails, times out ($PG_AGENTS_MATRIX_TIMEOUT seconds,
#      default 1500) or is interrupted.  A kept root whose packages cannot be
#      installed any more (a run killed in the middle of apt) is built anew
#      once.  A cached root (and its debootstrap tar) is rebuilt from
#      scratch when tools/deps.sh or this script changed since it was built
#      (their sha256 is kept beside it, in SUITE.base.tar.hash and in the
#      root's .pg_agents-matrix-root), or on demand with MATRIX_FRESH=1:
#      a cache can no longer hide what a new machine lacks.
#      `tools/matrix.sh stale [LEG...]` says, without root or changes, which
#      roots a run would rebuild and why.
# Each leg prints its time and the summary line of its `make test`; its whole
# output is in .matrix/LEG.log.  The last line counts the legs.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${PG_AGENTS_MATRIX_CACHE:-/var/cache/pg_agents-matrix}
case "$cache" in /*) ;; *) cache="$here/$cache" ;; esac
logs="$here/.matrix"
leg_timeout=${PG_AGENTS_MATRIX_TIMEOUT:-1500}

say() { echo "matrix: $*"; }
die() { echo "matrix: $*" >&2; exit 1; }

legs_default=(trixie forky)

# The roots are built by what these files say: a change to them makes a
# cached root stale.
roots_hash() {
    (cd "$here" && sha256sum tools/deps.sh tools/matrix.sh) | sha256sum | cut -c1-64
}
# why_stale WHAT FILE: prints why the cached WHAT (whose hash is in FILE)
# must be built anew, or nothing when it may be kept; MATRIX_FRESH=1 makes
# every one stale, once per run (fresh_done lists what this run built)
fresh_done=" "
why_stale() {
    local what=$1 file=$2 want
    if [ "${MATRIX_FRESH:-}" = 1 ] && [[ $fresh_done != *" $what "* ]]; then echo "MATRIX_FRESH=1"; return; fi
    want=$(roots_hash)
    if [ ! -s "$file" ]; then echo "no hash kept beside it (built before hashes were kept)"
    elif [ "$(head -c 64 "$file")" != "$want" ]; then echo "tools/deps.sh or tools/matrix.sh changed since it was built"
    fi
}
if [ "${1:-}" = stale ]; then
    shift
    legs=("$@"); [ ${#legs[@]} -gt 0 ] || legs=("${legs_default[@]}")
    for leg in "${legs[@]}"; do
        if [ ! -s "$cache/$leg.base.tar" ]; then b="none (built on the next run)"
        else b=$(why_stale "$leg.base" "$cache/$leg.base.tar.hash"); b=${b:-kept}; fi
        if [ ! -f "$cache/$leg/.pg_agents-matrix-root" ]; then l="none (built on the next run)"
        else l=$(why_stale "$leg" "$cache/$leg/.pg_agents-matrix-root"); l=${l:-kept}; fi
        echo "$leg: minimal root: $b; leg root: $l"
    done
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot)"

# The Debian mirror of this host's apt sources (deb822 or one-line format):
# the first that serves the main archive, or with "security" the first that
# serves security updates.
host_mirror() {  # [security]
    local f want=${1:-main} all
    if [ "$want" = main ] && [ -n "${PG_AGENTS_MIRROR:-}" ]; then echo "$PG_AGENTS_MIRROR"; return; fi
    all=$(
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            awk '/^[ \t]*$/ { if (u != "") print u, s; u=""; s=""; next }
                 /^URIs:/ { u=$2 } /^Suites:/ { s=$0 }
                 END { if (u != "") print u, s }' "$f"
        done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i, $(i + 1); break } }' "$f"
        done
    )
    awk -v want="$want" '($0 ~ /security/) == (want == "security") { print $1; exit }' <<<"$all" | grep .
}


# every process whose root is $1 (started in the chroot)
procs_in() {
    local r p
    # (nothing runs in a root that is not there: without this, an empty r
    # would match every process whose root link cannot be read, PID 1 too)
    r=$(readlink -f "$1" 2>/dev/null) && [ -n "$r" ] && [ "$r" != / ] && [ -d "$r" ] || return 0
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$r" ] && echo "${p#/proc/}"
    done
}

unmount_all() {  # root
    local r=$1 m
    # deepest first
    for m in $(awk -v r="$r/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
}

end_procs() {  # root: TERM, then KILL, what still runs in it
    local r=$1 pids i
    pids=$(procs_in "$r")
    [ -n "$pids" ] || return 0
    say "ending processes left in $(basename "$r"): $(echo $pids)"
    kill $pids 2>/dev/null
    for i in $(seq 1 50); do
        pids=$(procs_in "$r"); [ -n "$pids" ] || return 0
        sleep 0.1
    done
    kill -9 $pids 2>/dev/null
    sleep 0.5
}

release_root() {  # root
    end_procs "$1"
    unmount_all "$1"
}

# root, command...: the command in the root, with a clean environment
# (what a login on that machine has, and the few settings of the harness)
enter() {
    local r=$1; shift
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM=dumb CI="${CI:-}" DEBIAN_FRONTEND=noninteractive \
        ${PG_MAJOR:+PG_MAJOR=$PG_MAJOR} ${TESTS:+TESTS=$TESTS} ${WERROR:+WERROR=$WERROR} ${V:+V=$V} \
        chroot "$r" "$@"
}

# Copy the host's CA trust store: the bundle, and each certificate under
# /usr/local/share/ca-certificates so that the root's own update-ca-certificates
# (run when ca-certificates is installed or upgraded there) keeps them.
copy_ca() {  # root
    local r=$1 bundle=/etc/ssl/certs/ca-certificates.crt
    [ -s "$bundle" ] || return 0
    mkdir -p "$r/etc/ssl/certs" "$r/usr/local/share/ca-certificates/host"
    rm -f "$r/usr/local/share/ca-certificates/host/"*.crt
    awk -v d="$r/usr/local/share/ca-certificates/host" '
        /-----BEGIN CERTIFICATE-----/ { n++; f = sprintf("%s/host-%04d.crt", d, n) }
        f != "" { print > f }
        /-----END CERTIFICATE-----/ { close(f); f = "" }' "$bundle"
    cp "$bundle" "$r/etc/ssl/certs/ca-certificates.crt"
}

# The pristine minimal root of a Debian suite, built once with debootstrap and
# kept as $cache/SUITE.base.tar: apt sources from this host's mirror.
base_tar() {  # suite
    local leg=$1 tmp="$cache/$1.base.tmp" mirror script="" why
    if [ -s "$cache/$leg.base.tar" ]; then
        why=$(why_stale "$leg.base" "$cache/$leg.base.tar.hash")
        [ -z "$why" ] && return 0
        say "$leg: the minimal root is built anew: $why"
        rm -f "$cache/$leg.base.tar" "$cache/$leg.base.tar.hash"
    fi
    fresh_done+="$leg.base "
    command -v debootstrap >/dev/null 2>&1 || {
        say "installing debootstrap"
        apt-get update -qq >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
            die "could not install debootstrap"
    }
    mirror=$(host_mirror) || die "no Debian mirror found in this host's apt sources (set PG_AGENTS_MIRROR)"
    # Debootstrap knows a suite by its script; the one of a suite still in
    # the making may be missing (Debian 12's has no forky): it is sid's.
    if [ ! -e "/usr/share/debootstrap/scripts/$leg" ]; then script=/usr/share/debootstrap/scripts/sid; fi
    say "$leg: building a minimal root (debootstrap --variant=minbase)"
    release_root "$tmp" 2>/dev/null
    rm -rf "$tmp"
    mkdir -p "$cache" "$logs"
    if ! debootstrap --variant=minbase "$leg" "$tmp" "$mirror" $script >"$logs/$leg.debootstrap.log" 2>&1; then
        tail -5 "$logs/$leg.debootstrap.log" >&2
        release_root "$tmp"; rm -rf "$tmp"
        die "$leg: debootstrap failed (whole log: .matrix/$leg.debootstrap.log)"
    fi
    release_root "$tmp"
    # the sources of a new machine of that release: the suite, its updates
    # and its security updates (from this host's security mirror)
    {
        printf 'deb %s %s main\n' "$mirror" "$leg"
        case "$leg" in
            forky|sid|unstable) ;;
            *)  printf 'deb %s %s-updates main\n' "$mirror" "$leg"
                security=$(host_mirror security) && printf 'deb %s %s-security main\n' "$security" "$leg" ;;
        esac
    } >"$tmp/etc/apt/sources.list"
    case "$leg" in
        forky|sid|unstable)
            # The mirror's Release file of the suite in the making can be past
            # its Valid-Until date; a real machine of that suite would not be.
            echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99pg-agents-matrix" ;;
    esac
    echo "pg-agents-$leg" >"$tmp/etc/hostname"
    tar -C "$tmp" -cf "$cache/$leg.base.tar.tmp" . && mv "$cache/$leg.base.tar.tmp" "$cache/$leg.base.tar" &&
        roots_hash >"$cache/$leg.base.tar.hash"
    rm -rf "$tmp"
    [ -s "$cache/$leg.base.tar" ] || die "$leg: could not keep the minimal root"
}

fresh_root() {  # suite dir: a new pristine root in dir
    base_tar "$1" || return 1
    rm -rf "$2"; mkdir -p "$2"
    tar -C "$2" -xf "$cache/$1.base.tar"
}

# The root of a leg, built once and kept (with what make test installs in it).
make_root() {  # leg
    local leg=$1 r="$cache/$1" tmp="$cache/$1.tmp" why
    if [ -f "$r/.pg_agents-matrix-root" ]; then
        why=$(why_stale "$leg" "$r/.pg_agents-matrix-root")
        [ -z "$why" ] && return 0
        say "$leg: the root is built anew: $why"
    fi
    fresh_done+="$leg "
    release_root "$tmp" 2>/dev/null
    fresh_root "$leg" "$tmp" || return 1
    roots_hash >"$tmp/.pg_agents-matrix-root"
    release_root "$r"
    rm -rf "$r"
    mv "$tmp" "$r"
}

# Copy this checkout into the root (keeping the npm peers installed there).
copy_tree() {  # root
    local dst="$1/build/pg_agents"
    mkdir -p "$1/build"
    if [ -d "$dst/test/fixtures/node_modules" ]; then
        rm -rf "$1/build/node_modules.keep"
        mv "$dst/test/fixtures/node_modules" "$1/build/node_modules.keep"
    fi
    rm -rf "$dst"; mkdir -p "$dst"
    if git -C "$here" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$here" && git ls-files -z -co --exclude-standard | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' _ |
            tar --null -T - -cf -) | tar -C "$dst" -xf -
    else
        (cd "$here" && tar --exclude=./.matrix --exclude=./.git -cf - .) | tar -C "$dst" -xf -
    fi
    if [ -d "$1/build/node_modules.keep" ]; then
        mkdir -p "$dst/test/fixtures"
        mv "$1/build/node_modules.keep" "$dst/test/fixtures/node_modules"
    fi
}

prepare() {  # root: what each run sets up again
    local r=$1
    copy_ca "$r"
    cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
    mountpoint -q "$r/proc" || mount -t proc proc "$r/proc" || return 1
    mkdir -p "$r/dev/shm"
    mountpoint -q "$r/dev/shm" || mount -t tmpfs -o mode=1777,size=1g shm "$r/dev/shm" || return 1
    copy_tree "$r"
}

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

current_root=
on_exit() {
    if [ -n "$current_root" ]; then release_root "$current_root"; fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# The first steps of README on a new machine, then make test.
LEG_SCRIPT='set -e
cd /build/pg_agents
echo "== apt-get install -y git make ca-certificates"
dpkg --configure -a >/dev/null 2>&1 || true   # a kept root after an interrupted run
apt-get update -qq >/dev/null
apt-get install -y -qq git make ca-certificates >/dev/null 2>&1 || apt-get install -y git make ca-certificates
rc=0
make test || rc=1
# the Debian package of this version, installed with apt-get into a system
# cluster of this root (not with TESTS=..., which runs a part of make test)
if [ -z "${TESTS:-}" ]; then
    echo "== make deb"
    if make deb; then
        major=$(tools/pg_version.sh major)
        bash tools/deb_smoke.sh "$major" "$PWD/$(ls -t dist/postgresql-$major-pg-agents_*.deb | head -1)" || rc=1
    else
        echo "deb: 0 passed, 1 failed"; rc=1
    fi
fi
exit $rc'

run_leg() {  # leg; sets leg_line
    local leg=$1 r="$cache/$1" log="$logs/$1.log" start rc line major deb
    start=$SECONDS
    exec 8>"$cache/$leg.lock"
    if ! flock -n 8; then say "$leg: waiting for another run that uses this root"; flock 8; fi
    make_root "$leg" || return 1
    current_root=$r
    prepare "$r" || { release_root "$r"; current_root=; return 1; }
    say "$leg: make test in a minimal Debian $leg root (whole output: .matrix/$leg.log)"
    local pid waited=0 try
    for try in 1 2; do
        enter "$r" /bin/bash -c "$LEG_SCRIPT" >"$log" 2>&1 </dev/null &
        pid=$!
        while kill -0 "$pid" 2>/dev/null && [ $waited -lt "$leg_timeout" ]; do sleep 1; waited=$((waited + 1)); done
        if kill -0 "$pid" 2>/dev/null; then
            say "$leg: still running after ${leg_timeout}s: ending it"
            end_procs "$r"
            wait "$pid"; rc=124
        else
            wait "$pid"; rc=$?
        fi
        release_root "$r"
        # failed before the tests began (the packages): once, a new root
        if [ $try -eq 1 ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
                ! grep -qE '^pg_agents: PostgreSQL [0-9]+\.[0-9]+' "$log"; then
            say "$leg: the kept root could not install the packages (exit $rc): building it anew"
            tail -5 "$log"
            rm -rf "$r"
            make_root "$leg" && prepare "$r" || { release_root "$r"; current_root=; return 1; }
            continue
        fi
        break
    done
    current_root=
    exec 8>&-
    major=$(sed -n 's/^pg_agents: PostgreSQL \([0-9]*\).*/\1/p' "$log" | head -1)
    line=$(grep -E '^suites: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    [ -n "$line" ] || line="no summary (exit $rc)"
    deb=$(grep -E '^deb: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -z "$deb" ] && grep -q '^== make deb' "$log"; then deb="deb: no summary"; fi
    [ -z "$deb" ] || line="$line; $deb"
    [ $rc -eq 124 ] && line="$line; timed out after ${leg_timeout}s"
    if [ $rc -ne 0 ]; then
        echo "---- $leg: last lines of .matrix/$leg.log"
        grep -E '^(not ok|failed suites|#   (got|expected))|Failed|FAIL' "$log" | head -60
        tail -40 "$log"
        echo "----"
    fi
    leg_line="$leg (PostgreSQL ${major:-?}): $line, $(fmt_time $((SECONDS - start)))"
    say "$leg_line"
    return $rc
}

cmd=${1:-}
case "$cmd" in
clean)
    shift
    for leg in "${@:-${legs_default[@]}}"; do
        release_root "$cache/$leg"; release_root "$cache/$leg.tmp"
        rm -rf "$cache/$leg" "$cache/$leg.tmp" "$cache/$leg.base.tar" "$cache/$leg.base.tar.hash"
    done
    exit 0 ;;
fresh)
    leg=${2:?usage: tools/matrix.sh fresh SUITE DIR}; dir=${3:?usage: tools/matrix.sh fresh SUITE DIR}
    mkdir -p "$logs" "$cache"
    exec 8>"$cache/$leg.lock"; flock 8
    fresh_root "$leg" "$dir" || exit 1
    exec 8>&-
    cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    mount -t proc proc "$dir/proc" || { release_root "$dir"; exit 1; }
    mkdir -p "$dir/dev/shm"
    mount -t tmpfs -o mode=1777,size=1g shm "$dir/dev/shm" || { release_root "$dir"; exit 1; }
    exit 0 ;;
release)
    dir=${2:?usage: tools/matrix.sh release DIR}
    release_root "$dir"
    exit 0 ;;
shell)
    leg=${2:?usage: tools/matrix.sh shell LEG [COMMAND...]}
    shift 2
    mkdir -p "$logs"
    exec 8>"$cache/$leg.lock"; flock 8
    make_root "$leg" || exit 1
    current_root="$cache/$leg"
    prepare "$current_root" || exit 1
    if [ $# -eq 0 ]; then enter "$current_root" /bin/bash -c 'cd /build/pg_agents; exec bash -i'
    else enter "$current_root" /bin/bash -c 'cd /build/pg_agents; eval "$@"' _ "$@"; fi
    exit $? ;;
esac

mkdir -p "$logs" "$cache"
legs=("$@")
[ ${#legs[@]} -gt 0 ] || legs=("${legs_default[@]}")
passed=0; failed=0; lines=()
for leg in "${legs[@]}"; do
    leg_line=
    if run_leg "$leg"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    lines+=("${leg_line:-$leg: could not run}")
done
echo
for l in "${lines[@]}"; do echo "  $l"; done
echo "matrix: $passed passed, $failed failed"
[ $failed -eq 0 ]
