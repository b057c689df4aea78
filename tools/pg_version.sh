#!/usr/bin/env bash
# Which PostgreSQL major version the build, the harness and `make deps` use:
#
#   tools/pg_version.sh major       the major version: $PG_MAJOR when set, else
#                                   the one of $PG_CONFIG when set, else the
#                                   newest whose server development files are
#                                   installed (/usr/lib/postgresql/N/bin/pg_config),
#                                   else the newest server installed, else
#                                   (with --apt) Debian's default (the
#                                   `postgresql` package's dependency)
#   tools/pg_version.sh pg_config   the pg_config of that version (what
#                                   PG_CONFIG defaults to)
#
# Prints nothing and exits 1 when no version can be found.
set -uo pipefail

newest() {  # glob pattern with N for the version: newest N that exists
    local p n best=
    for p in $1; do
        [ -e "$p" ] || continue
        n=${p#/usr/lib/postgresql/}; n=${n%%/*}
        case "$n" in *[!0-9]*|'') continue ;; esac
        if [ -z "$best" ] || [ "$n" -gt "$best" ]; then best=$n; fi
    done
    [ -n "$best" ] && echo "$best"
}

apt_default() {
    command -v apt-cache >/dev/null 2>&1 || return 1
    apt-cache depends postgresql 2>/dev/null |
        sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | sort -n | tail -1 | grep .
}

major() {  # [--apt]
    if [ -n "${PG_MAJOR:-}" ]; then echo "$PG_MAJOR"; return 0; fi
    if [ -n "${PG_CONFIG:-}" ] && command -v "$PG_CONFIG" >/dev/null 2>&1; then
        "$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p'; return 0
    fi
    newest '/usr/lib/postgresql/*/bin/pg_config' && return 0
    newest '/usr/lib/postgresql/*/bin/postgres' && return 0
    if [ "${1:-}" = --apt ]; then apt_default && return 0; fi
    return 1
}

case "${1:-}" in
major)
    shift; major "$@" ;;
pg_config)
    if [ -n "${PG_CONFIG:-}" ]; then echo "$PG_CONFIG"; exit 0; fi
    m=$(major) || exit 1
    if [ -x "/usr/lib/postgresql/$m/bin/pg_config" ]; then echo "/usr/lib/postgresql/$m/bin/pg_config"
    else exit 1; fi ;;
*)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
