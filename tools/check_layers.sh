#!/usr/bin/env bash
# tools/check_layers.sh [OBJDIR]: the layering the built objects show (nm),
# checked (issue 34; test/t/050_layers.t runs it, docs/hacking.md).
#
# The runs module (run_*.o) reaches a tool family only through the
# dispatcher (tools.o) and the family's ToolFamily table (tool_family.h), as
# PostgreSQL reaches an index access method only through its
# IndexAmRoutine: no symbol a run_*.o file uses may be defined in a family's
# object (one that defines a *Family table) or in an MCP client object, nor
# be named Mcp*, mcp_*, Teams*, or Tools* outside tools.o.
#
# Prints one line per call that breaks the rule ("run_slots.o -> McpCallFree
# (mcp_tools.o)") and exits 1; exits 0 silently; 2 when there is nothing to
# check (build first: make).
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/../src" && pwd)}
command -v nm >/dev/null || { echo "check_layers: nm not found (binutils)" >&2; exit 2; }
shopt -s nullglob
runs=("$dir"/run_*.o)
objs=("$dir"/*.o)
[ ${#runs[@]} -gt 0 ] || { echo "check_layers: no run_*.o in $dir (run make first)" >&2; exit 2; }

# symbol -> the object defining it (global definitions only)
declare -A def=()
declare -A family=()
for o in "${objs[@]}"; do
    b=$(basename "$o")
    while read -r _ type sym; do
        [ -n "$sym" ] || continue
        def[$sym]=$b
        case "$type:$sym" in
            [DR]:*Family) family[$b]=1 ;;
        esac
    done < <(nm --defined-only -g "$o")
    case $b in mcp*.o) family[$b]=1 ;; esac
done

bad=0
for o in "${runs[@]}"; do
    b=$(basename "$o")
    while read -r _ sym; do
        [ -n "$sym" ] || continue
        at=${def[$sym]:-}
        why=
        if [ -n "$at" ] && [ -n "${family[$at]:-}" ]; then
            why=$at
        else
            case $sym in
                Mcp*|mcp_*|Teams*) why=${at:-undefined here} ;;
                Tools*) [ "$at" = tools.o ] || why=${at:-undefined here} ;;
            esac
        fi
        if [ -n "$why" ]; then
            echo "$b -> $sym ($why)"
            bad=1
        fi
    done < <(nm -u "$o")
done
exit $bad
