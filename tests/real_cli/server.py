#!/usr/bin/env python3
"""A scripted model server on 127.0.0.1 speaking the protocols of four agent CLIs:

- Anthropic Messages (`POST /v1/messages`, SSE when `stream`) for Claude Code,
- OpenAI Responses (`POST /v1/responses`, SSE) for codex,
- Gemini (`POST /v1beta/models/<m>:streamGenerateContent?alt=sse`, `:generateContent`,
  `:countTokens`) for gemini-cli,
- OpenAI Chat Completions (`POST /v1/chat/completions`, SSE) for opencode's openai-compatible
  provider.

Every conversation goes the same way: the first answer is a call of the CLI's shell tool running
`--command`; once the tool's result comes back, the final answer is that result's text, verbatim
(so the command decides what the agent says: a revised document, the completion promise).
Answers that are not part of the main conversation (titles, quota checks) are short text.

`--escalate Q` makes codex's call ask to run the command outside its sandbox (`require_escalated`,
with `Q` as its justification), which `codex exec` refuses.

`--limited N` answers N conversations (after the first `--limited-after M`) with the vendor's own
limit error: HTTP 429 with the body (and, for Anthropic, the headers) the vendor sends.
Each request is logged as one JSON line to `--log`. Prints `READY <port>` when listening.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()
COUNT = {"main": 0}

USAGE_IN, USAGE_OUT = 1200, 80


def log(entry):
    if ARGS.log:
        with LOCK, open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def limited():
    """Whether this conversation is refused: after `--limited-after` answered ones, the next
    `--limited`."""
    with LOCK:
        COUNT["main"] += 1
        n = COUNT["main"] - ARGS.limited_after
        return 0 < n <= ARGS.limited


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def send_json(self, code, obj, headers=()):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, name, obj):
        head = f"event: {name}\n" if name else ""
        self.wfile.write(f"{head}data: {json.dumps(obj)}\n\n".encode())
        self.wfile.flush()

    def do_GET(self):
        log({"method": "GET", "path": self.path})
        if self.path.startswith("/v1/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "local", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        path = self.path
        req = self.body()
        log({"method": "POST", "path": path, "body": req})
        if path.startswith("/v1/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": USAGE_IN})
        if path.startswith("/v1/messages"):
            return self.anthropic(req)
        if path.startswith("/v1/responses"):
            return self.openai_responses(req)
        if path.startswith("/v1/chat/completions"):
            return self.chat_completions(req)
        if ":countTokens" in path:
            return self.send_json(200, {"totalTokens": USAGE_IN})
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return self.gemini(req, stream=":streamGenerateContent" in path)
        self.send_json(404, {"error": {"message": f"no route {path}"}})

    # --- Anthropic Messages -------------------------------------------------------------
    def anthropic(self, req):
        tools = [t.get("name") for t in req.get("tools") or []]
        main = "Bash" in tools
        result = None
        for m in req.get("messages") or []:
            content = m.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        result = tool_text(block.get("content"))
        if main and result is None and limited():
            return self.send_json(429, {"type": "error", "error": {"type": "rate_limit_error",
                                  "message": "This request would exceed your account's rate limit. Please try again later."}},
                                  headers=[("retry-after", str(ARGS.reset_in)),
                                           ("anthropic-ratelimit-unified-status", "rejected"),
                                           ("anthropic-ratelimit-unified-reset", str(int(time.time()) + ARGS.reset_in)),
                                           ("anthropic-ratelimit-unified-representative-claim", "five_hour")])
        model = req.get("model", "claude-sonnet-4-5")
        if main and result is None:
            blocks = [{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                       "input": {"command": ARGS.command, "description": "do the loop's work"}}]
            stop = "tool_use"
        else:
            text = result if result is not None else "Loop work"
            blocks = [{"type": "text", "text": text}]
            stop = "end_turn"
        usage = {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not req.get("stream"):
            return self.send_json(200, {"id": "msg_01", "type": "message", "role": "assistant",
                                        "model": model, "content": blocks, "stop_reason": stop,
                                        "stop_sequence": None, "usage": usage})
        self.start_sse()
        self.event("message_start", {"type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": USAGE_IN, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                self.event("content_block_start", {"type": "content_block_start", "index": i,
                           "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                self.event("content_block_delta", {"type": "content_block_delta", "index": i,
                           "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            else:
                self.event("content_block_start", {"type": "content_block_start", "index": i,
                           "content_block": {"type": "text", "text": ""}})
                self.event("content_block_delta", {"type": "content_block_delta", "index": i,
                           "delta": {"type": "text_delta", "text": b["text"]}})
            self.event("content_block_stop", {"type": "content_block_stop", "index": i})
        self.event("message_delta", {"type": "message_delta",
                   "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": USAGE_OUT}})
        self.event("message_stop", {"type": "message_stop"})

    # --- OpenAI Responses ---------------------------------------------------------------
    def openai_responses(self, req):
        names = [t.get("name") for t in req.get("tools") or []]
        tool = ARGS.codex_tool if ARGS.codex_tool in names else next(
            (n for n in names if n in ("exec_command", "shell", "local_shell")), None)
        result = None
        for item in req.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                result = tool_text(item.get("output"))
                # exec_command's result is framed ("Chunk ID: …", "Output:"); the command's own
                # output follows the frame.
                if "\nOutput:\n" in result:
                    result = result.split("\nOutput:\n", 1)[1]
        if tool and result is None and limited():
            return self.send_json(429, {"error": {"message": "Rate limit reached for requests. Please try again in 2s.",
                                                  "type": "requests", "code": "rate_limit_exceeded"}},
                                  headers=[("retry-after", "2")])
        self.start_sse()
        rid = "resp_01"
        self.event("response.created", {"type": "response.created", "response": {"id": rid, "status": "in_progress"}})
        if tool and result is None:
            args = {"cmd": ARGS.command} if tool == "exec_command" else {"command": ["bash", "-lc", ARGS.command]}
            if ARGS.escalate and tool == "exec_command":
                # The model asks to run the command outside codex's sandbox, with its question.
                args.update({"sandbox_permissions": "require_escalated",
                             "justification": ARGS.escalate})
            item = {"type": "function_call", "id": "fc_01", "call_id": "call_01", "name": tool,
                    "arguments": json.dumps(args), "status": "completed"}
        else:
            text = result if result is not None else "Loop work"
            item = {"type": "message", "id": "msg_01", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
            self.event("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                       "item": dict(item, status="in_progress", content=[])})
            self.event("response.output_text.delta", {"type": "response.output_text.delta",
                       "item_id": "msg_01", "output_index": 0, "content_index": 0, "delta": text})
        self.event("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item})
        self.event("response.completed", {"type": "response.completed", "response": {
            "id": rid, "status": "completed", "output": [item],
            "usage": {"input_tokens": USAGE_IN, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": USAGE_OUT, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": USAGE_IN + USAGE_OUT}}})

    # --- OpenAI Chat Completions (opencode's openai-compatible provider) ------------------
    def chat_completions(self, req):
        names = [(t.get("function") or {}).get("name") for t in req.get("tools") or []]
        main = "bash" in names
        result = None
        for m in req.get("messages") or []:
            if m.get("role") == "tool":
                result = tool_text(m.get("content"))
        if main and result is None and limited():
            return self.send_json(429, {"error": {"message": "Rate limit reached for requests. Please try again in 2s.",
                                                  "type": "requests", "code": "rate_limit_exceeded"}},
                                  headers=[("retry-after", "2")])
        usage = {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT, "total_tokens": USAGE_IN + USAGE_OUT}
        if main and result is None:
            delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_01", "type": "function",
                     "function": {"name": "bash", "arguments": json.dumps(
                         {"command": ARGS.command, "description": "do the loop's work"})}}]}
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": result if result is not None else "Loop work"}
            finish = "stop"
        base = {"id": "chatcmpl-01", "object": "chat.completion.chunk", "created": 0, "model": req.get("model", "local")}
        if not req.get("stream"):
            message = dict(delta)
            return self.send_json(200, dict(base, object="chat.completion", usage=usage,
                                            choices=[{"index": 0, "message": message, "finish_reason": finish}]))
        self.start_sse()
        self.event(None, dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]))
        self.event(None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}], usage=usage))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    # --- Gemini -------------------------------------------------------------------------
    def gemini(self, req, stream):
        names = [d.get("name") for t in req.get("tools") or [] for d in t.get("functionDeclarations") or []]
        main = "run_shell_command" in names
        result = None
        for c in req.get("contents") or []:
            for p in c.get("parts") or []:
                if "functionResponse" in p:
                    result = gemini_output(tool_text(p["functionResponse"].get("response")))
        if main and result is None and limited():
            # The free tier's daily quota, as the Generative Language API words it.
            return self.send_json(429, {"error": {
                "code": 429, "status": "RESOURCE_EXHAUSTED",
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"},
                        "quotaValue": "50"}]},
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{ARGS.reset_in}s"}]}})
        config = req.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if not main and schema:
            # A side request (the model router) asking for JSON of a schema: the least answer.
            part = {"text": json.dumps(from_schema(schema))}
        elif main and result is None:
            part = {"functionCall": {"name": "run_shell_command",
                                     "args": {"command": ARGS.command, "description": "do the loop's work"}}}
        else:
            part = {"text": result if result is not None else "Loop work"}
        chunk = {"candidates": [{"content": {"parts": [part], "role": "model"}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": USAGE_IN, "candidatesTokenCount": USAGE_OUT,
                                   "totalTokenCount": USAGE_IN + USAGE_OUT},
                 "modelVersion": "gemini-2.5-pro"}
        if not stream:
            return self.send_json(200, chunk)
        self.start_sse()
        self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        self.wfile.flush()


def from_schema(schema):
    """A small value of a JSON schema (Gemini's upper-case types too)."""
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: from_schema(v) for k, v in props.items()}
    if kind == "array":
        return []
    if kind == "integer":
        return 10
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    return "simple"


def gemini_output(text):
    """run_shell_command's result ("Output: …" then "Process Group PGID: …", in an
    untrusted_context frame): the command's own output."""
    text = text.replace("<untrusted_context>\n", "").replace("\n</untrusted_context>", "")
    if not text.startswith("Output: "):
        return text
    out = []
    for i, line in enumerate(text[len("Output: "):].split("\n")):
        if i > 0 and line.split(":", 1)[0] in ("Error", "Exit Code", "Signal", "Background PIDs", "Process Group PGID"):
            break
        out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"


def tool_text(content):
    """The text of a tool result in any of the three protocols' shapes."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(tool_text(c) for c in content)
    if isinstance(content, dict):
        for k in ("text", "output", "content", "llmContent", "result"):
            if k in content:
                return tool_text(content[k])
        return json.dumps(content)
    return str(content)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--command", required=True)
    p.add_argument("--log")
    p.add_argument("--limited", type=int, default=0)
    p.add_argument("--limited-after", type=int, default=0)
    p.add_argument("--codex-tool", default="exec_command")
    p.add_argument("--escalate", help="codex's call asks to run outside its sandbox, with this question")
    p.add_argument("--reset-in", type=int, default=5, help="seconds until a limit resets")
    ARGS = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    print(f"READY {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
