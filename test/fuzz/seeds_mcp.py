#!/usr/bin/env python3
"""Writes the seed corpora of the MCP and OAuth harnesses (test/fuzz/corpus/
mcp, mcp_oauth): scripts of fake_curl.h (responses separated by a line "%%")
in the shapes test/fixtures/mcp_server.py, mcp_stateless_server.py and
oauth_server.py answer.  Run from anywhere: test/fuzz/seeds_mcp.py."""
import json
import os

here = os.path.dirname(os.path.abspath(__file__))


def resp(status=200, body="", ctype="application/json", headers=()):
    head = [str(status)]
    if ctype:
        head.append("Content-Type: " + ctype)
    head += list(headers)
    if not isinstance(body, str):
        body = json.dumps(body)
    return "\n".join(head) + "\n\n" + body


def sse(*events):
    out = ""
    for e in events:
        if isinstance(e, str):
            out += e
            continue
        for k, v in e:
            out += "%s: %s\n" % (k, v if isinstance(v, str) else json.dumps(v))
        out += "\n"
    return out


def rpc(i, result=None, error=None):
    m = {"jsonrpc": "2.0", "id": i}
    if error is not None:
        m["error"] = error
    else:
        m["result"] = result if result is not None else {}
    return m


INIT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "fixture", "version": "1"}}
TOOLS = {"tools": [
    {"name": "search", "description": "find", "inputSchema": {
        "type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                                         "n": {"type": "integer", "default": 3}}}},
    {"name": "bad", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "object", "x-mcp-header": "A"}}}},
    {"name": "dup", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}}]}
CALL = {"content": [{"type": "text", "text": "found 3"}, {"type": "image", "data": "AAAA",
                                                           "mimeType": "image/png"}],
        "structuredContent": {"n": 3}, "isError": False}
ELICIT = {"message": "Which region?", "requestedSchema": {
    "type": "object", "properties": {"region": {"type": "string", "default": "eu"},
                                     "ok": {"type": "boolean", "default": True},
                                     "n": {"type": "number", "default": 1.5},
                                     "c": {"type": "string", "enum": ["a", "b"], "default": "a"}},
    "required": ["region"]}}


def script(*responses):
    return "\n%%\n".join(responses).encode()


def write(d, name, flags, seed, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes([flags, seed]) + data)


def mcp():
    d = os.path.join(here, "corpus", "mcp")
    sid = ["Mcp-Session-Id: s-123"]
    # 2025-11-25, JSON answers
    write(d, "stateful_json", 1, 0, script(
        resp(body=rpc(1, INIT), headers=sid), resp(202, "", None),
        resp(body=rpc(2, dict(TOOLS, nextCursor="p2"))), resp(body=rpc(3, {"tools": [], "ttlMs": 5000})),
        resp(body=rpc(4, CALL)), resp(body=rpc(5, {"contents": [{"uri": "file:///a", "text": "x"}]})),
        resp(body=rpc(6, CALL)), resp(200, "", None)))
    # 2025-11-25, SSE answers with notifications, a server request, a batch, an elicitation
    write(d, "stateful_sse", 5, 7, script(
        resp(body=sse([("event", "message"), ("id", "e1"), ("data", rpc(1, INIT))]), ctype="text/event-stream",
             headers=sid), resp(202, "", None),
        resp(200, "", "text/event-stream"),
        resp(body=sse(": keep-alive\n\n",
                      [("data", {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})],
                      [("data", {"jsonrpc": "2.0", "id": 90, "method": "ping"})],
                      [("data", [{"jsonrpc": "2.0", "method": "notifications/progress"}, rpc(2, TOOLS)])]),
             ctype="text/event-stream"),
        resp(200, "", "text/event-stream"),
        resp(body=sse([("data", {"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create",
                                 "params": ELICIT})],
                      [("event", "message"), ("data", '{"jsonrpc":"2.0",'), ("data", '"id":"3","result":%s}'
                                                                             % json.dumps(CALL))]),
             ctype="text/event-stream"),
        resp(202, "", None), resp(200, "", "text/event-stream"),
        resp(body=rpc(4, {"contents": []})),
        resp(body=sse([("data", {"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": ELICIT})],
                      [("data", rpc(5, CALL))]), ctype="text/event-stream")))
    # a stream cut before the answer, resumed with Last-Event-ID after retry
    write(d, "resume", 1, 3, script(
        resp(body=rpc(1, INIT), headers=sid), resp(202, "", None),
        resp(body=sse([("id", "a1"), ("retry", "10"), ("data", "")]), ctype="text/event-stream"),
        resp(body=sse([("id", "a2"), ("data", rpc(2, TOOLS))]).replace("\n", "\r\n"), ctype="text/event-stream"),
        resp(body=sse([("retry", "99999999999"), ("id", "b1")]), ctype="text/event-stream"),
        resp(body=sse([("data", rpc(3, CALL))]).replace("\n", "\r"), ctype="text/event-stream")))
    # lost session, 401, JSON-RPC errors, too-new version
    write(d, "errors", 1, 9, script(
        resp(body=rpc(1, dict(INIT, protocolVersion="1999-01-01")), headers=sid),
        resp(body=rpc(1, INIT), headers=sid), resp(202, "", None),
        resp(404, "{}"), resp(body=rpc(3, INIT), headers=["Mcp-Session-Id: s-2"]), resp(202, "", None),
        resp(body=rpc(4, error={"code": -32601, "message": "no such method"})),
        resp(401, "", None, ['WWW-Authenticate: Bearer resource_metadata="https://mcp.example/.well-known/'
                             'oauth-protected-resource", scope="a b"']),
        resp(500, "oops", "text/plain")))
    # 2026-07-28: discover, stateless calls, input_required rounds, -32022
    disc = {"supportedVersions": ["2026-07-28", "2025-11-25"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "stateless", "version": "2"}}
    ir = {"resultType": "input_required", "inputRequests": {"r1": {"method": "elicitation/create",
                                                                   "params": ELICIT}},
          "requestState": "opaque-state"}
    write(d, "stateless", 4, 5, script(
        resp(body=rpc(1, disc)), resp(body=rpc(2, dict(TOOLS, ttlMs=1))),
        resp(body=rpc(3, ir)), resp(body=rpc(4, ir)), resp(body=rpc(5, dict(CALL, resultType="complete"))),
        resp(body=rpc(6, error={"code": -32022, "message": "unsupported", "data": {"supported": ["2026-07-28"]}})),
        resp(body=rpc(7, {"contents": []})), resp(body=rpc(8, TOOLS)), resp(body=rpc(9, ir)),
        resp(body=rpc(10, CALL))))
    write(d, "stateless_deferred", 2 | 16, 2, script(
        resp(body=rpc(1, TOOLS)), resp(body=rpc(2, ir)), resp(body=rpc(3, {"contents": []})),
        resp(body=rpc(4, ir))))
    # held elicitation: the worker's asynchronous call only (with an elicitation callback
    # notifications/initialized has a GET stream open beside it, first)
    write(d, "held_async", 1 | 4 | 8, 6, script(
        resp(body=rpc(1, INIT), headers=sid), resp(200, "", "text/event-stream"), resp(202, "", None),
        resp(body=sse([("data", {"jsonrpc": "2.0", "id": 8, "method": "elicitation/create", "params": ELICIT})],
                      [("id", "z"), ("data", {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]),
             ctype="text/event-stream"),
        resp(body=sse([("data", rpc(2, CALL))]), ctype="text/event-stream")))
    write(d, "discover_fallback", 0, 1, script(
        resp(body=rpc(1, error={"code": -32601, "message": "Method not found"})),
        resp(body=rpc(2, dict(INIT, protocolVersion="2025-06-18")), headers=sid), resp(202, "", None),
        resp(body=rpc(3, TOOLS)), resp(body=rpc(4, CALL))))


def oauth():
    d = os.path.join(here, "corpus", "mcp_oauth")
    prm = {"resource": "https://mcp.example/mcp", "authorization_servers": ["https://auth.example"],
           "scopes_supported": ["read", "write"]}
    asm = {"issuer": "https://auth.example", "authorization_endpoint": "https://auth.example/authorize",
           "token_endpoint": "https://auth.example/token", "registration_endpoint": "https://auth.example/register",
           "code_challenge_methods_supported": ["S256"], "scopes_supported": ["read", "write", "offline_access"],
           "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none",
                                                     "private_key_jwt"],
           "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
           "authorization_response_iss_parameter_supported": True,
           "client_id_metadata_document_supported": False}
    reg = {"client_id": "c-1", "client_secret": "s-1", "token_endpoint_auth_method": "client_secret_basic"}
    tok = {"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-1",
           "scope": "read write"}
    www = 'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="read"'
    # the first line of an OAuth script is the WWW-Authenticate header (fuzz_oauth.c)
    write(d, "code_flow", 0, 0, (www + "\n").encode() + script(
        resp(body=prm), resp(body=asm), resp(201, reg), resp(body=tok), resp(body=dict(tok, access_token="at-2")),
        resp(body=tok)))
    write(d, "fallbacks", 1, 4, b"Bearer realm=\"x\", error=\"insufficient_scope\", scope=\"admin\"\n" + script(
        resp(404, "nope", "text/plain"), resp(404, ""), resp(404, ""),
        resp(body=dict(asm, issuer="https://auth.example/")), resp(body=asm),
        resp(400, {"error": "invalid_client_metadata", "error_description": "no"}),
        resp(400, {"error": "invalid_grant", "error_description": "expired"}),
        resp(body={"access_token": "x", "token_type": "mac", "expires_in": -5})))
    write(d, "client_credentials", 2, 2, b"\n" + script(
        resp(body=prm), resp(body=asm), resp(body={"access_token": "m2m", "token_type": "bearer",
                                                    "expires_in": 9223372036854775807})))
    write(d, "no_prm", 0, 8, b"Bearer\n" + script(
        resp(404, ""), resp(404, ""), resp(404, ""), resp(404, ""), resp(404, ""), resp(201, reg),
        resp(body=tok)))


if __name__ == "__main__":
    mcp()
    oauth()
