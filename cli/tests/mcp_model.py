#!/usr/bin/env python3
"""A scripted model on 127.0.0.1 for tests/mcp.rs's harness journeys: it answers a request
that offers pond's search tool with one call of that tool, and any other request (a request
that carries the call's result, a harness's side request) with the text "done". Every request
is appended to LOG as one JSON line {"path", "body"}. Standard library only.

    mcp_model.py LOG PORT_FILE QUERY

The three wire formats the harnesses speak, each as its harness offers an MCP server's tools:
- Anthropic Messages (Claude Code): `POST .../messages`, a tool named `mcp__pond__pond_search`;
  answered as server-sent events when the body asks for a stream;
- OpenAI Responses (Codex): `POST .../responses`, a `namespace` tool `mcp__pond` holding the
  function `pond_search`; the call names both;
- OpenAI chat completions (opencode): `POST .../chat/completions`, a function `pond_pond_search`.
The port the OS picked is written to PORT_FILE (atomically) once the server listens.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, PORT_FILE, QUERY = sys.argv[1], sys.argv[2], sys.argv[3]
ARGS = json.dumps({"protocol_version": 1, "query": QUERY})
DONE = "done"


def search_tool(names):
    """The offered name ending in `pond_search`, if any."""
    return next((n for n in names if isinstance(n, str) and n.endswith("pond_search")), None)


def anthropic(body):
    names = [t.get("name") for t in body.get("tools") or []]
    last = (body.get("messages") or [{}])[-1]
    content = last.get("content") if isinstance(last.get("content"), list) else []
    answered = any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content)
    tool = search_tool(names)
    if tool and not answered:
        block, stop = {"type": "tool_use", "id": "toolu_pondtest01", "name": tool, "input": {}}, "tool_use"
    else:
        block, stop = {"type": "text", "text": ""}, "end_turn"
    message = {"id": "msg_pondtest", "type": "message", "role": "assistant", "model": "mock-model",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 1, "output_tokens": 1}}
    if block["type"] == "tool_use":
        delta = {"type": "input_json_delta", "partial_json": ARGS}
        whole = dict(block, input=json.loads(ARGS))
    else:
        delta = {"type": "text_delta", "text": DONE}
        whole = {"type": "text", "text": DONE}
    if not body.get("stream"):
        return "application/json", json.dumps(dict(message, content=[whole], stop_reason=stop))
    events = [
        ("message_start", {"message": message}),
        ("content_block_start", {"index": 0, "content_block": block}),
        ("content_block_delta", {"index": 0, "delta": delta}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {}),
    ]
    return "text/event-stream", "".join(
        f"event: {name}\ndata: {json.dumps(dict(type=name, **data))}\n\n" for name, data in events)


def responses(body):
    names = []
    for t in body.get("tools") or []:
        for inner in t.get("tools") or []:
            names.append((t.get("name"), inner.get("name")))
        names.append((None, t.get("name")))
    items = body.get("input") or []
    answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items)
    found = next(((ns, n) for ns, n in names if isinstance(n, str) and n.endswith("pond_search")), None)
    if found and not answered:
        item = {"type": "function_call", "id": "fc_pondtest01", "call_id": "call_pondtest01",
                "name": found[1], "arguments": ARGS, "status": "completed"}
        if found[0]:
            item["namespace"] = found[0]
    else:
        item = {"type": "message", "id": "msg_pondtest01", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": DONE, "annotations": []}]}
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
             "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}
    done = {"id": "resp_pondtest", "object": "response", "status": "completed",
            "model": "mock-model", "output": [item], "usage": usage}
    events = [
        ("response.created", {"response": dict(done, status="in_progress", output=[])}),
        ("response.output_item.added", {"output_index": 0, "item": item}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": done}),
    ]
    return "text/event-stream", "".join(
        f"event: {name}\ndata: {json.dumps(dict(type=name, **data))}\n\n" for name, data in events)


def chat(body):
    names = [(t.get("function") or {}).get("name") for t in body.get("tools") or []]
    answered = any(isinstance(m, dict) and m.get("role") == "tool" for m in body.get("messages") or [])
    tool = search_tool(names)
    if tool and not answered:
        delta = {"role": "assistant", "content": None, "tool_calls": [{
            "index": 0, "id": "call_pondtest01", "type": "function",
            "function": {"name": tool, "arguments": ARGS}}]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": DONE}, "stop"

    def chunk(choices, **extra):
        return "data: " + json.dumps({"id": "chatcmpl-pondtest", "object": "chat.completion.chunk",
                                      "created": 0, "model": "mock-model", "choices": choices,
                                      **extra}) + "\n\n"
    return "text/event-stream", (
        chunk([{"index": 0, "delta": delta, "finish_reason": None}])
        + chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        + chunk([], usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
        + "data: [DONE]\n\n")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_GET(self):
        self.reply("application/json", json.dumps({"object": "list", "data": [
            {"id": "mock-model", "object": "model", "created": 0, "owned_by": "pond-test"}]}))

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": self.path, "body": body}) + "\n")
        path = self.path.split("?")[0]
        if not isinstance(body, dict):
            return self.reply("application/json", "{}")
        if path.endswith("/count_tokens"):
            return self.reply("application/json", '{"input_tokens": 1}')
        if path.endswith("/messages"):
            return self.reply(*anthropic(body))
        if path.endswith("/responses"):
            return self.reply(*responses(body))
        if path.endswith("/chat/completions"):
            return self.reply(*chat(body))
        self.reply("application/json", "{}")

    def reply(self, ctype, text):
        data = text.encode()
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
