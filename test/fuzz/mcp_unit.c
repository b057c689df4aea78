/* the MCP client (src/mcp/mcp_transport.c, mcp_protocol.c, mcp_async.c) with the
 * fake clock of fake_curl.c (the MCP and OAuth harnesses) */
#include "fake_time.h"
#include "../../src/mcp/mcp_transport.c"
#include "../../src/mcp/mcp_protocol.c"
#include "../../src/mcp/mcp_async.c"
