#!/usr/bin/env bash
# The cluster the demo runs on.
. "$PG_AGENTS_ENV"
echo "pg_agents demo — throwaway PostgreSQL $(psql -XAtq -c 'SHOW server_version') on port $PGPORT"
echo "  preloaded: $(psql -XAtq -c 'SHOW shared_preload_libraries'); extension pg_agents $(psql -XAtq -c "SELECT extversion FROM pg_extension WHERE extname='pg_agents'")"
