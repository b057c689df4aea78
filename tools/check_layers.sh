#!/usr/bin/env bash
# tools/check_layers.sh [OBJDIR]: the layering the built objects show (nm),
# checked over the objects under OBJDIR (default src/, every folder) (issue
# 34; test/t/050_layers.t runs it, docs/hacking.md).
#
# Two rules, over the global symbols each object defines (nm --defined-only
# -g) and uses (nm -u); an object whose source file is gone (a stale object
# of a renamed file) is left out:
#
# 1. No cycle between files: the graph "a.o calls or reads b.o" has no
#    cycle at all, short or round about, so that every file can be read,
#    tested and moved with the files below it only.  A file that must hear
#    from one above it takes a callback (as PostgreSQL's hooks do: the shared
#    memory parts, http.c's header and stream hooks, the ToolFamily table).
#    Each strongly connected set of objects (Tarjan) is printed as one cycle
#    through it, then the symbols of each of its calls:
#      cycle: shmem.o -> wake.o -> shmem.o
#        shmem.o -> wake.o: WakeShmemInit WakeShmemSize
#        wake.o -> shmem.o: ShmemDbSlotFor
#
# 2. The runs module (run_*.o) reaches a tool family only through the
#    dispatcher (tools.o) and the family's ToolFamily table (tool_family.h),
#    as PostgreSQL reaches an index access method only through its
#    IndexAmRoutine: no symbol a run_*.o file uses may be defined in a
#    family's object (one that defines a *Family table) or in an MCP client
#    object, nor be named Mcp*, Teams*, or Tools* outside tools.o.
#    Prints one line per call that breaks it ("run_loop.o -> McpCallFree
#    (mcp_tools.o)").
#
# Exits 1 when a rule is broken, 0 silently; 2 when there is nothing to
# check (build first: make).
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/../src" && pwd)}
command -v nm >/dev/null || { echo "check_layers: nm not found (binutils)" >&2; exit 2; }
shopt -s nullglob globstar
objs=()
for o in "$dir"/**/*.o; do
    [ -f "${o%.o}.c" ] && objs+=("$o")
done
runs=()
for o in "${objs[@]}"; do
    case $(basename "$o") in run_*.o) runs+=("$o") ;; esac
done
[ ${#runs[@]} -gt 0 ] || { echo "check_layers: no run_*.o under $dir (run make first)" >&2; exit 2; }

# symbol -> the object defining it (global definitions only); the symbols
# each object defines and uses, for the graph
declare -A def=()
declare -A family=()
graph_in=$(mktemp)
trap 'rm -f "$graph_in"' EXIT
for o in "${objs[@]}"; do
    b=$(basename "$o")
    while read -r _ type sym; do
        [ -n "$sym" ] || continue
        def[$sym]=$b
        echo "D $b $sym" >>"$graph_in"
        case "$type:$sym" in
            [DR]:*Family) family[$b]=1 ;;
        esac
    done < <(nm --defined-only -g "$o")
    case $b in mcp*.o) family[$b]=1 ;; esac
    nm -u "$o" | while read -r _ sym; do
        [ -n "$sym" ] && echo "U $b $sym"
    done >>"$graph_in"
done

bad=0

# ---- rule 1: no cycle between object files (Tarjan's strongly connected sets) ----
cycles=$(LC_ALL=C sort -k1,1 -k2,2 -k3,3 "$graph_in" | awk '
    $1 == "D" { at[$3] = $2; if (!($2 in known)) { known[$2] = 1; node[++nn] = $2 } next }
    $1 == "U" { use[++nu] = $2; usym[nu] = $3; if (!($2 in known)) { known[$2] = 1; node[++nn] = $2 } }
    function connect(v,    i, w, c, comp) {
        idx[v] = low[v] = ++counter
        stack[++sp] = v; onstack[v] = 1
        for (i = 1; i <= nadj[v]; i++) {
            w = adj[v, i]
            if (!(w in idx)) { connect(w); if (low[w] < low[v]) low[v] = low[w] }
            else if (onstack[w] && idx[w] < low[v]) low[v] = idx[w]
        }
        if (low[v] == idx[v]) {
            ncomp++; c = 0
            do { w = stack[sp--]; onstack[w] = 0; comp_of[w] = ncomp; c++ } while (w != v)
            size[ncomp] = c
        }
    }
    # one cycle through s inside its set (breadth first: a shortest one)
    function cycle(s,    q, head, tail, u, i, w, path, k) {
        split("", prev); split("", seen)
        head = 1; tail = 1; q[1] = s; seen[s] = 1
        while (head <= tail) {
            u = q[head++]
            for (i = 1; i <= nadj[u]; i++) {
                w = adj[u, i]
                if (comp_of[w] != comp_of[s]) continue
                if (w == s) {
                    path = s
                    for (k = u; k != s; k = prev[k]) path = k " -> " path
                    return s " -> " path
                }
                if (!(w in seen)) { seen[w] = 1; prev[w] = u; q[++tail] = w }
            }
        }
        return s
    }
    END {
        for (i = 1; i <= nu; i++) {
            a = use[i]; b = at[usym[i]]
            if (b == "" || b == a) continue
            if (!((a, b) in esym)) { adj[a, ++nadj[a]] = b; esym[a, b] = usym[i] }
            else esym[a, b] = esym[a, b] " " usym[i]
        }
        for (i = 1; i <= nn; i++) if (!(node[i] in idx)) connect(node[i])
        for (i = 1; i <= nn; i++) {
            v = node[i]; c = comp_of[v]
            if (size[c] < 2 || (c in done)) continue
            done[c] = 1
            p = cycle(v)
            print "cycle: " p
            n = split(p, hop, " -> ")
            for (k = 1; k < n; k++) print "  " hop[k] " -> " hop[k + 1] ": " esym[hop[k], hop[k + 1]]
        }
    }')
if [ -n "$cycles" ]; then
    echo "$cycles"
    bad=1
fi

# ---- rule 2: the runs module reaches the tool families through ToolFamily only ----
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
                Mcp*|Teams*) why=${at:-undefined here} ;;
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
