#!/usr/bin/env bash
# events: SQL-level randomized fuzz of the filter evaluator (random filters
# and payloads; no crash, no hang, refusals only with 22023/42501, and the
# evaluator's invariants hold).  test/fuzz/events_filter.sh runs it longer.
. "$PG_AGENTS_ENV"
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/../fixtures/tap.sh"
plan 2
out=$(python3 "$here/test/fuzz/events_filter_fuzz.py" 2000 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
ok "$rc" "2000 random filters and payloads: no crash, no invariant broken"
v=$(psql -XAtq -c "SELECT agent.filter_matches('{\"all\": [{\"property\": \"a\", \"op\": \"eq\", \"value\": 1}]}', '{\"row\": {\"a\": 1}}')")
is "$v" t "the server is still up and answers"
done_testing
