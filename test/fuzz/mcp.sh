#!/usr/bin/env bash
# kind: libfuzzer
# Fuzz the MCP client (src/mcp/mcp_transport.c, mcp_protocol.c, mcp_async.c)
# against a hostile server: JSON and SSE answers, JSON-RPC messages,
# negotiation, lists, calls, input_required and elicitation, sync and async;
# the network is test/fuzz/fake_curl.c.
# See mcp_fuzz.c.
#   test/fuzz/mcp.sh short|long|SECONDS
# Limits: 1 s per input, 256 MB of memory, inputs up to 256 kB.
set -uo pipefail
. "$(dirname "$0")/libfuzzer.bash"
fuzz_main mcp "${1:-short}" -timeout=1 -rss_limit_mb=256 -max_len=262144 -- \
    test/fuzz/mcp_unit.c test/fuzz/fake_curl.c test/fuzz/mcp_fuzz.c
