#!/usr/bin/env bash
# The layering the built objects show (issue 34): the runs module reaches a
# tool family (MCP, teams, the built-in tools ...) only through the
# dispatcher and its ToolFamily table, never by calling the family's own
# functions (tools/check_layers.sh, over nm of src/*.o).
set -u
. "$(dirname "$0")/../fixtures/tap.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
plan 1
out=$("$root/tools/check_layers.sh" "$root/src" 2>&1)
rc=$?
is "$rc:$out" "0:" "no function of run_*.c calls a tool family except through ToolFamily"
done_testing
