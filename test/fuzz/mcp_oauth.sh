#!/usr/bin/env bash
# kind: libfuzzer
# Fuzz OAuth for MCP servers (src/mcp/mcp_oauth.c) against hostile resource and
# authorization servers: challenge, metadata, registration, token
# responses, redirect, export/import; the network is
# test/fuzz/fake_curl.c.  See mcp_oauth_fuzz.c.
#   test/fuzz/mcp_oauth.sh short|long|SECONDS
# Limits: 1 s per input, 256 MB of memory, inputs up to 64 kB.
set -uo pipefail
. "$(dirname "$0")/libfuzzer.bash"
fuzz_main mcp_oauth "${1:-short}" -timeout=1 -rss_limit_mb=256 -max_len=65536 -- \
    test/fuzz/mcp_unit.c test/fuzz/mcp_oauth_unit.c test/fuzz/fake_curl.c test/fuzz/mcp_oauth_fuzz.c
