#!/usr/bin/env python3
"""Writes the seed corpora of the LLM harnesses (test/fuzz/corpus/llm_reply,
llm_stream) from the scripted provider of the tests (test/fixtures/
llm_server.py: the very bodies and event streams it serves), plus the
reproductions of issue 36:
  repro_anthropic_index   a content_block_start with "index": 300000
  repro_openai_fragments  one data: event with tool_calls {"index": 0..N-1}
  repro_usage_overflow    Anthropic input + cache token counts that overflow
Run from anywhere: test/fuzz/seeds_llm.py (rewrites the seed files)."""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "fixtures"))
import llm_server  # noqa: E402

REPLIES = {
    "text": {"text": "Hello there, \u00e9t\u00e9 \U0001F600 \"quoted\" \\ back\nline"},
    "tool": {"tool": "read_page", "input": {"id": 7, "q": "x"}},
    "two_tools": {"tool_calls": [{"name": "a", "input": {}}, {"name": "b", "input": {"k": [1, 2]}}],
                  "text": "calling"},
    "bad_args": {"tool_calls": [{"name": "a", "input": "{not json"}]},
    "refusal": {"refusal": "I can't help with that", "text": None},
    "length": {"text": "cut", "finish_reason": "length"},
    "max_tokens": {"text": "cut", "finish_reason": "max_tokens"},
    "pause": {"text": "wait", "finish_reason": "pause_turn"},
    "context": {"text": "", "finish_reason": "model_context_window_exceeded"},
    "filter": {"text": "x", "finish_reason": "content_filter"},
    "usage": {"text": "u", "usage": {"in": 1200, "out": 30, "cached": 1000, "reasoning": 12,
                                     "cache_write": 100}},
    "usage_negative": {"text": "u", "usage": {"in": -100, "out": -4294967296}},
    "many_tools": {"tool": "t", "input": {}, "tool_count": 65},
    "stream_error": {"text": "abcdefghijklmnop", "stream_error": {"type": "overloaded_error",
                                                                  "message": "Overloaded"}},
}


def write(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def sse(events):
    return "".join(("event: %s\n" % n if n else "") + "data: %s\n\n" % d for n, d in events).encode()


def main():
    rdir = os.path.join(here, "corpus", "llm_reply")
    sdir = os.path.join(here, "corpus", "llm_stream")
    for name, reply in REPLIES.items():
        reply = dict(reply, stream_chunk=5)
        ob = llm_server.openai_body(reply, "gpt-test")
        ab = llm_server.anthropic_body(reply, "claude-test")
        write(rdir, "openai_" + name, b"\x00" + json.dumps(ob).encode())
        write(rdir, "anthropic_" + name, b"\x01" + json.dumps(ab).encode())
        write(sdir, "openai_" + name, b"\x00\x11" + sse(llm_server.openai_events(ob, reply, True)))
        write(sdir, "anthropic_" + name, b"\x01\x24" + sse(llm_server.anthropic_events(ab, reply)))
    # OpenAI without [DONE], CRLF line ends, comments and a multi-line data event
    ob = llm_server.openai_body({"text": "crlf"}, "m")
    ev = llm_server.openai_events(ob, {"stream_chunk": 2}, False)[:-1]
    write(sdir, "openai_crlf_no_done", b"\x00\x08: keep-alive\r\n" +
          sse(ev).replace(b"\n", b"\r\n"))
    write(sdir, "anthropic_multiline_data", b"\x01\x00" +
          b'event: message_start\ndata: {"type":"message_start",\ndata: "message":{"id":"m","content":[],'
          b'"usage":{"input_tokens":3}}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')
    write(rdir, "error_body", b"\x00" + json.dumps(
        {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}).encode())

    # issue 36, item 2: placeholders up to a peer's index
    ab = llm_server.anthropic_body({"text": "hi"}, "claude-test")
    start = dict(ab, content=[], stop_reason=None)
    write(sdir, "repro_anthropic_index", b"\x01\x31" + sse([
        ("message_start", json.dumps({"type": "message_start", "message": start})),
        ("content_block_start", json.dumps({"type": "content_block_start", "index": 300000,
                                            "content_block": {"type": "text", "text": ""}})),
        ("content_block_delta", json.dumps({"type": "content_block_delta", "index": 300000,
                                            "delta": {"type": "text_delta", "text": "x"}})),
        ("content_block_stop", json.dumps({"type": "content_block_stop", "index": 300000})),
        ("message_delta", json.dumps({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                      "usage": {"output_tokens": 1}})),
        ("message_stop", json.dumps({"type": "message_stop"}))]))
    # issue 36, item 3: one event with N tool-call fragments, each matched by a scan
    n = 15000
    frag = ",".join('{"index":%d}' % i for i in range(n))
    chunk = ('{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
             '{"tool_calls":[%s]},"finish_reason":null}]}' % frag)
    write(sdir, "repro_openai_fragments", b"\x00\x42" + sse([("", chunk), ("", "[DONE]")]))
    # issue 36, item 5: usage sums that overflow int64
    ab = llm_server.anthropic_body({"text": "u"}, "claude-test")
    ab["usage"] = {"input_tokens": 9223372036854775807, "cache_read_input_tokens": 1,
                   "cache_creation_input_tokens": 9223372036854775807, "output_tokens": 1}
    write(rdir, "repro_usage_overflow", b"\x01" + json.dumps(ab).encode())


if __name__ == "__main__":
    main()
