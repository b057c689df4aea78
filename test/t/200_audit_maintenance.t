#!/usr/bin/env bash
# agent.schedule_maintenance() where pg_cron is not installed (the worker's
# database has pg_agents but no pg_cron): a clear error with a hint.
. "$PG_AGENTS_ENV"
. "$(dirname "$0")/../fixtures/tap.sh"
plan 4
check() {  # description, condition (shows $out when it fails)
    if eval "$2"; then ok 0 "$1"; else ok 1 "$1"; diag "got: $out"; fi
}
out=$(psql -XAtq -c "SELECT count(*) FROM pg_extension WHERE extname = 'pg_cron'" 2>&1)
check "pg_cron is not installed in $PGDATABASE" '[ "$out" = 0 ]'
out=$(psql -X -q -v VERBOSITY=verbose -c "SELECT agent.schedule_maintenance()" 2>&1)
check "the error names the problem" '[[ "$out" == *"ERROR:  55000: pg_cron is not installed in this database"* ]]'
check "with a hint on how to fix it" '[[ "$out" == *"HINT:  Add pg_cron to shared_preload_libraries"* ]]'
out=$(psql -XAtq -c "SELECT agent.purge_audit()" 2>&1)
check "purge_audit works without pg_cron" '[[ "$out" =~ ^[0-9]+$ ]]'
done_testing
