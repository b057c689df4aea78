#!/usr/bin/env bash
# kind: libfuzzer
# Fuzz the streamed replies of both LLM wire formats (src/llm/llm.c: the SSE
# reader, LlmStreamNew/Feed/Finish, then LlmParseReplyJson and
# LlmStopKindOf), chunk boundaries anywhere; see llm_stream_fuzz.c.
#   test/fuzz/llm_stream.sh short|long|SECONDS
# Limits: 2 s per input (fed twice), 256 MB of memory, inputs up to 256 kB:
# a content_block_start with a huge "index" (placeholders up to it) or an
# OpenAI event with thousands of tool-call fragments (matched by a scan of
# every call) trips them.
set -uo pipefail
. "$(dirname "$0")/libfuzzer.bash"
fuzz_main llm_stream "${1:-short}" -timeout=2 -rss_limit_mb=256 -max_len=262144 -- \
    src/llm/llm.c test/fuzz/shim/pg_shim.c test/fuzz/llm_stream_fuzz.c
