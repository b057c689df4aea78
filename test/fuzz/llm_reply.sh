#!/usr/bin/env bash
# kind: libfuzzer
# Fuzz the whole replies of both LLM wire formats (src/llm/llm.c: LlmParseReply,
# LlmStopKindOf, the usage fields, LlmErrorMessage, LlmQuotaError), built
# against the PostgreSQL shim test/fuzz/shim; see llm_reply_fuzz.c.
#   test/fuzz/llm_reply.sh short|long|SECONDS
# Limits: 1 s per input, 256 MB of memory, inputs up to 256 kB.
set -uo pipefail
. "$(dirname "$0")/libfuzzer.bash"
fuzz_main llm_reply "${1:-short}" -timeout=1 -rss_limit_mb=256 -max_len=262144 -- \
    src/llm/llm.c test/fuzz/shim/pg_shim.c test/fuzz/llm_reply_fuzz.c
