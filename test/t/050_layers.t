#!/usr/bin/env bash
# The layering the built objects show (issue 34), over nm of the objects under src/
# (tools/check_layers.sh): no cycle at all in the call graph between object
# files, and the runs module reaches a tool family (MCP, teams, the built-in
# tools ...) only through the dispatcher and its ToolFamily table, never by
# calling the family's own functions.  Both fail on a tree that breaks them
# (the check prints each cycle with the symbols of its calls).
set -u
. "$(dirname "$0")/../fixtures/tap.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
plan 2
out=$("$root/tools/check_layers.sh" "$root/src" 2>&1)
rc=$?
is "$rc:$out" "0:" "no cycle between object files; no function of run_*.c calls a tool family except through ToolFamily"

# the check itself: three objects calling round, beside the real ones, make a cycle it prints
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shopt -s globstar nullglob
for o in "$root"/src/**/*.o; do   # (the objects of the sources there are, flattened)
    [ -f "${o%.o}.c" ] || continue
    cp "$o" "$tmp"/
    : >"$tmp/$(basename "${o%.o}").c"
done
printf 'int layers_b(void);\nint layers_a(void) { return layers_b(); }\n' >"$tmp/zz_a.c"
printf 'int layers_c(void);\nint layers_b(void) { return layers_c(); }\n' >"$tmp/zz_b.c"
printf 'int layers_a(void);\nint layers_c(void) { return layers_a(); }\n' >"$tmp/zz_c.c"
for f in zz_a zz_b zz_c; do ${CC:-cc} -c -o "$tmp/$f.o" "$tmp/$f.c"; done
out=$("$root/tools/check_layers.sh" "$tmp" 2>&1)
rc=$?
is "$rc:$out" "1:cycle: zz_a.o -> zz_b.o -> zz_c.o -> zz_a.o
  zz_a.o -> zz_b.o: layers_b
  zz_b.o -> zz_c.o: layers_c
  zz_c.o -> zz_a.o: layers_a" "a cycle between object files fails the check, printed with its calls"
done_testing
