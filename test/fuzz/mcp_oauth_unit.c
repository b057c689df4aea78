/* src/mcp/mcp_oauth.c with the fake clock of fake_curl.c (the OAuth harness) */
#include "fake_time.h"
#include "../../src/mcp/mcp_oauth.c"
