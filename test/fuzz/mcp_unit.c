/* src/mcp.c with the fake clock of fake_curl.c (the MCP and OAuth harnesses) */
#include "fake_time.h"
#include "../../src/mcp.c"
