#!/usr/bin/env bash
# The harness itself: the cluster is up with both libraries preloaded.
. "$PG_AGENTS_ENV"
. "$(dirname "$0")/../fixtures/tap.sh"
plan 2
v=$(psql -XAtq -c "SHOW shared_preload_libraries")
is "$v" "pg_agents,pg_cron" "preloaded: $v"
v=$(psql -XAtq -c "SELECT count(*) FROM pg_extension WHERE extname IN ('pg_agents','pgtap')")
is "$v" 2 "extensions installed"
done_testing
