#!/usr/bin/env bash
# The harness itself: the cluster is up with both libraries preloaded.
. "$PG_AGENTS_ENV"
echo "1..2"
v=$(psql -XAtq -c "SHOW shared_preload_libraries")
[ "$v" = "pg_agents,pg_cron" ] && echo "ok 1 - preloaded: $v" || echo "not ok 1 - preloaded: $v"
v=$(psql -XAtq -c "SELECT count(*) FROM pg_extension WHERE extname IN ('pg_agents','pgtap')")
[ "$v" = "2" ] && echo "ok 2 - extensions installed" || echo "not ok 2 - extensions installed ($v)"
