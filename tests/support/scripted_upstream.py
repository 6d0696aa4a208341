"""A scripted model provider on 127.0.0.1 speaking the three APIs the gateway relays: OpenAI Chat
Completions, OpenAI Responses and Anthropic Messages, streaming (SSE) and not.

`script(call) -> Answer` decides each answer: text, or a tool call, with the usage it reports
(or none), an HTTP error, or a stream cut short. Every call is recorded with its headers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    text: str = "Done."
    tool: str | None = None
    """Name of a tool to call with `arguments` instead of answering with text."""
    arguments: dict[str, Any] = field(default_factory=dict)
    input_tokens: int = 1000
    output_tokens: int = 50
    usage: bool = True
    """False: the answer (or the stream) carries no usage."""
    usage_block: dict[str, Any] | None = None
    """The usage exactly as sent, in place of the one made of the counts above (a provider's
    cached tokens in its own shape): the whole answer's, the chat stream's usage chunk, the
    responses stream's final event; Anthropic streams send its output_tokens at message_delta."""
    status: int = 200
    cut_after: int | None = None
    """Stream only: close the connection after this many events (a broken stream)."""
    delay_s: float = 0.0
    error_body: Callable[[Call], bytes] | None = None
    """With a `status` other than 200: the error body to send (a hostile provider's echo)."""
    error_headers: dict[str, str] = field(default_factory=dict)
    pad_bytes: int = 0
    """A whole answer this many bytes larger (written 1 MiB at a time; `ScriptedUpstream.sent`)."""
    endless: bool = False
    """Stream only: after the first event, keep sending events until the client goes."""
    chunks: int = 1
    """Chat streams: the text in this many chunks (with `continuous_usage_stats`, each carries the
    cumulative usage so far, as vLLM sends it)."""


@dataclass
class Call:
    api: str  # chat | responses | messages
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name") or t.get("function", {}).get("name") for t in self.body.get("tools") or []]

    @property
    def text(self) -> str:
        return json.dumps(self.body)


@dataclass
class ScriptedUpstream:
    script: Callable[[Call], Answer] = lambda call: Answer()
    calls: list[Call] = field(default_factory=list)
    port: int = 0
    sent: int = 0
    """Bytes of padded answers and endless streams written so far."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedUpstream:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                api = {
                    "/v1/chat/completions": "chat",
                    "/v1/responses": "responses",
                    "/v1/messages": "messages",
                }
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/v1/messages/count_tokens":
                    return self._send(200, {"input_tokens": len(json.dumps(body)) // 4})
                call = Call(api.get(self.path, "?"), body, {k.lower(): v for k, v in self.headers.items()})
                upstream.calls.append(call)
                answer = upstream.script(call)
                time.sleep(answer.delay_s)
                if answer.status != 200:
                    if answer.error_body is not None:
                        return self._send_raw(answer.status, answer.error_body(call), answer.error_headers)
                    return self._send(
                        answer.status, {"error": {"message": "scripted failure", "type": "server_error"}}
                    )
                if not call.stream and answer.pad_bytes:
                    return self._send_padded(ANSWERS[call.api](call, answer), answer.pad_bytes)
                if not call.stream:
                    return self._send(200, ANSWERS[call.api](call, answer))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for n, (event, data) in enumerate(STREAMS[call.api](call, answer)):
                    if answer.cut_after is not None and n >= answer.cut_after:
                        break
                    if answer.endless and n == 1:
                        return self._send_forever(event, data)
                    head = f"event: {event}\n" if event else ""
                    self.wfile.write(
                        f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()
                    )
                    self.wfile.flush()

            def _send_raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _send_padded(self, payload: dict[str, Any], pad: int) -> None:
                head, tail = json.dumps({**payload, "padding": ""}).encode().rsplit(b'""', 1)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(head) + pad + 2 + len(tail)))
                self.end_headers()
                block = b"x" * (1 << 20)
                try:
                    self.wfile.write(head + b'"')
                    for start in range(0, pad, len(block)):
                        self.wfile.write(block[: min(len(block), pad - start)])
                        upstream.sent += min(len(block), pad - start)
                    self.wfile.write(b'"' + tail)
                except OSError:
                    pass  # the gateway stopped reading: what `sent` shows

            def _send_forever(self, event: str, data: Any) -> None:
                head = f"event: {event}\n" if event else ""
                line = f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()
                try:
                    while True:
                        self.wfile.write(line)
                        self.wfile.flush()
                        upstream.sent += len(line)
                        time.sleep(0.01)
                except OSError:
                    pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # 64 parallel clients: the default 5 refuses some

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def _args(answer: Answer) -> str:
    return json.dumps(answer.arguments)


# -- OpenAI Chat Completions ---------------------------------------------------------------------
def chat_answer(call: Call, a: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None if a.tool else a.text}
    if a.tool:
        message["tool_calls"] = [
            {"id": "call_1", "type": "function", "function": {"name": a.tool, "arguments": _args(a)}}
        ]
    out = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": call.body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if a.tool else "stop"}],
    }  # fmt: skip
    if a.usage:
        out["usage"] = a.usage_block or {"prompt_tokens": a.input_tokens, "completion_tokens": a.output_tokens,
                                         "total_tokens": a.input_tokens + a.output_tokens}  # fmt: skip
    return out


def chat_stream(call: Call, a: Answer) -> Iterator[tuple[str, Any]]:
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": call.body["model"],
    }
    if a.tool:
        delta = {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": a.tool, "arguments": _args(a)}}]}  # fmt: skip
    else:
        delta = {"role": "assistant", "content": a.text}
    options = call.body.get("stream_options") or {}
    continuous = a.usage and options.get("continuous_usage_stats")
    parts = [a.text[i :: a.chunks] for i in range(a.chunks)] if a.chunks > 1 and not a.tool else None
    for n, part in enumerate(parts or [None]):
        chunk: dict[str, Any] = {
            **base,
            "choices": [
                {"index": 0, "delta": delta if part is None else {"content": part}, "finish_reason": None}
            ],
        }
        if continuous:  # cumulative, as vLLM's continuous_usage_stats
            so_far = a.output_tokens * (n + 1) // (len(parts) if parts else 1)
            chunk["usage"] = {"prompt_tokens": a.input_tokens, "completion_tokens": so_far,
                              "total_tokens": a.input_tokens + so_far}  # fmt: skip
        yield "", chunk
    yield (
        "",
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if a.tool else "stop"}]},
    )
    if a.usage and (call.body.get("stream_options") or {}).get("include_usage"):
        usage = a.usage_block or {"prompt_tokens": a.input_tokens, "completion_tokens": a.output_tokens,
                                  "total_tokens": a.input_tokens + a.output_tokens}  # fmt: skip
        yield "", {**base, "choices": [], "usage": usage}
    yield "", "[DONE]"


# -- OpenAI Responses ----------------------------------------------------------------------------
def _response(call: Call, a: Answer, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    out = {
        "id": "resp_1", "object": "response", "created_at": 1700000000, "status": status,
        "model": call.body["model"], "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "error": None, "incomplete_details": None,
    }  # fmt: skip
    if a.usage and status == "completed":
        out["usage"] = {"input_tokens": a.input_tokens, "output_tokens": a.output_tokens,
                        "total_tokens": a.input_tokens + a.output_tokens,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
        if a.usage_block is not None:
            out["usage"] = a.usage_block
    return out


def _item(a: Answer) -> dict[str, Any]:
    if a.tool:
        return {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": a.tool,
                "arguments": _args(a), "status": "completed"}  # fmt: skip
    return {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": a.text, "annotations": []}]}  # fmt: skip


def responses_answer(call: Call, a: Answer) -> dict[str, Any]:
    return _response(call, a, "completed", [_item(a)])


def responses_stream(call: Call, a: Answer) -> Iterator[tuple[str, Any]]:
    item, seq = _item(a), iter(range(1000))
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": _response(call, a, "in_progress", [])}),
        ("response.output_item.added", {"output_index": 0, "item": {**item, "status": "in_progress"}}),
    ]
    if not a.tool:
        events.append(("response.output_text.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                                       "delta": a.text, "logprobs": []}))  # fmt: skip
    events += [
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": _response(call, a, "completed", [item])}),
    ]
    for name, data in events:
        yield name, {"type": name, "sequence_number": next(seq), **data}


# -- Anthropic Messages --------------------------------------------------------------------------
def _block(a: Answer) -> dict[str, Any]:
    if a.tool:
        return {"type": "tool_use", "id": "toolu_1", "name": a.tool, "input": a.arguments}
    return {"type": "text", "text": a.text}


def messages_answer(call: Call, a: Answer) -> dict[str, Any]:
    out = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": call.body["model"],
        "content": [_block(a)], "stop_reason": "tool_use" if a.tool else "end_turn", "stop_sequence": None,
    }  # fmt: skip
    if a.usage:
        out["usage"] = a.usage_block or {"input_tokens": a.input_tokens, "output_tokens": a.output_tokens}
    return out


def messages_stream(call: Call, a: Answer) -> Iterator[tuple[str, Any]]:
    start = {**messages_answer(call, a), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": a.input_tokens, "output_tokens": 1} if a.usage else {}
    if a.usage and a.usage_block is not None:
        start["usage"] = {**a.usage_block, "output_tokens": 1}
    output = (a.usage_block or {}).get("output_tokens", a.output_tokens)
    block = _block(a)
    empty = {**block, "input": {}} if a.tool else {**block, "text": ""}
    delta = ({"type": "input_json_delta", "partial_json": _args(a)} if a.tool
             else {"type": "text_delta", "text": a.text})  # fmt: skip
    final: dict[str, Any] = {"stop_reason": "tool_use" if a.tool else "end_turn", "stop_sequence": None}
    events = [
        ("message_start", {"message": start}),
        ("content_block_start", {"index": 0, "content_block": empty}),
        ("content_block_delta", {"index": 0, "delta": delta}),
        ("content_block_stop", {"index": 0}),
        (
            "message_delta",
            {"delta": final, **({"usage": {"output_tokens": output}} if a.usage else {})},
        ),
        ("message_stop", {}),
    ]
    for name, data in events:
        yield name, {"type": name, **data}


ANSWERS = {"chat": chat_answer, "responses": responses_answer, "messages": messages_answer}
STREAMS = {"chat": chat_stream, "responses": responses_stream, "messages": messages_stream}
