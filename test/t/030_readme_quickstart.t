#!/usr/bin/env bash
# The README stays true (issue 31): every ```sql block of README.md runs, in
# order, as written, in a fresh database (CREATE EXTENSION included), and the
# quick start does what its comments say: the explain_access answers, and the
# high-priority ticket queues one run of the agent in workspace w1.
. "$PG_AGENTS_ENV"
. "$(dirname "$0")/../fixtures/tap.sh"
plan 7

readme="$(dirname "$0")/../../README.md"
db=pga_readme_$$
tmp=$(mktemp -d)
trap 'psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; rm -rf "$tmp"' EXIT

# the sql blocks, one file each, in order
awk -v dir="$tmp" '
  /^```sql[[:space:]]*$/ { n++; f = sprintf("%s/block%02d.sql", dir, n); inb = 1; next }
  /^```/ && inb { inb = 0; close(f); next }
  inb { print > f }
' "$readme"
nblocks=$(ls "$tmp"/block*.sql 2>/dev/null | wc -l)
ok "$([ "$nblocks" -ge 3 ] && echo 0 || echo 1)" "README.md has its sql blocks ($nblocks)"

psql -XAtq -d postgres -c "CREATE DATABASE $db" >/dev/null
: > "$tmp/all.sql"
for f in "$tmp"/block*.sql; do cat "$f" >> "$tmp/all.sql"; echo >> "$tmp/all.sql"; done
out=$(psql -X -d "$db" -v ON_ERROR_STOP=1 -f "$tmp/all.sql" 2>&1)
rc=$?
is "$rc" 0 "every sql block of README.md runs as written"
[ "$rc" = 0 ] || diag "$out"
lacks "$out" "WARNING" "with no warning (an event of no workspace would warn)"

q() { psql -XAtq -d "$db" -c "$1"; }
id=$(q "SELECT id FROM agent.agents WHERE workspace_id = 'w1' AND name = 'Triage'")
is "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $id AND origin = 'event' AND status = 'queued'")" 1 \
   "the high-priority ticket queued one run of the agent"
is "$(q "SELECT workspace_id FROM agent.runs WHERE agent_id = $id")" "w1" "... in workspace w1"
contains "$out" "grant_read_only" "explain_access says grant_read_only for edit, as the comment says"
contains "$out" "not_granted" "... and not_granted for p2"
done_testing
