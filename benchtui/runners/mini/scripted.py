"""A scripted OpenAI-compatible chat server on 127.0.0.1: offline tests of real agent loops, and
`benchtui demo` (a real campaign with no key and no network).

Stateless by design: the reply to a request is chosen by how many assistant turns its
conversation already has, so parallel sessions (and several models) can share one server.
Each scripted step is a bash command (sent as a `bash` tool call, or, from a server started with
`text=True`, as a fenced ```mswea_bash_command block in the answer's text, as a server without
tool calling answers), an answer's raw text, or an HTTP error status.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a command to run, or an HTTP error."""

    command: str | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20
    status: int = 200
    delay_s: float = 0.0
    """Answer this late (to make the client time out)."""
    usage: Any = "scripted"
    """The `usage` block: "scripted" (from the token counts above), None (left out) or a dict."""
    body: bytes | None = None
    """A raw body for the 200 answer instead of the completion (e.g. not JSON)."""
    drip_s: float = 0.0
    """Send the answer one byte at a time, this long apart (a slow drip)."""
    headers: dict[str, str] | None = None
    """Headers of an error answer (default: `retry-after-ms: 10`), e.g. {"retry-after": "2"}."""
    content: str | None = None
    """The answer's text as it is, with no tool call (an empty answer, prose, two bash blocks)."""
    arguments: str | None = None
    """A tool call's raw `arguments` (e.g. not JSON) in place of the command's."""
    error: str = "scripted failure"
    """The message of an error answer (e.g. a context window's, which litellm recognises)."""
    finish_reason: str | None = None


@dataclass
class Request:
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    status: int = 0
    received: float = 0.0
    """time.monotonic() when it arrived."""
    answered: float = 0.0
    """time.monotonic() when its answer had been sent."""

    def mentions(self, text: str) -> bool:
        """Whether the task prompt (the first user message) contains `text`."""
        return text in self.messages[1]["content"]

    @property
    def messages(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.body["messages"]
        return found

    @property
    def turn(self) -> int:
        return sum(1 for m in self.messages if m["role"] == "assistant")


@dataclass
class ScriptedLLM:
    """`script(request) -> Reply`; the default plays `steps` in order, one per turn."""

    steps: list[Reply] = field(default_factory=list)
    script: Callable[[Request], Reply] | None = None
    text: bool = False
    """Answer commands in the text, never as tool calls (a server without tool calling)."""
    requests: list[Request] = field(default_factory=list)
    port: int = 0
    template_caps: dict[str, bool] | None = None
    """Answer GET /props with these as `chat_template_caps`, as llama.cpp does (None: 404)."""

    def reply_for(self, request: Request) -> Reply:
        if self.script is not None:
            return self.script(request)
        if request.turn < len(self.steps):
            return self.steps[request.turn]
        return Reply(SUBMIT)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def answered(self) -> list[Request]:
        """Requests that got a 200 (billable calls)."""
        return [r for r in self.requests if r.status == 200]

    def __enter__(self) -> ScriptedLLM:
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/props" and llm.template_caps is not None:
                    self._send(200, json.dumps({"chat_template_caps": llm.template_caps}).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = Request(
                    body.get("model", ""),
                    body,
                    {k.lower(): v for k, v in self.headers.items()},
                    received=time.monotonic(),
                )
                reply = llm.reply_for(request)
                request.status = reply.status
                llm.requests.append(request)
                time.sleep(reply.delay_s)
                if reply.status != 200:
                    payload = json.dumps({"error": {"message": reply.error, "type": "server_error"}})
                    headers = reply.headers if reply.headers is not None else {"retry-after-ms": "10"}
                    self._send(reply.status, payload.encode(), headers)
                else:
                    answer = completion(request, reply, text=llm.text)
                    body = reply.body if reply.body is not None else json.dumps(answer)
                    self._send(200, body if isinstance(body, bytes) else body.encode(), drip_s=reply.drip_s)
                request.answered = time.monotonic()

            def _send(
                self, status: int, payload: bytes, headers: dict[str, str] | None = None, drip_s: float = 0.0
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    if not drip_s:
                        self.wfile.write(payload)
                    for byte in payload if drip_s else ():
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(drip_s)
                except OSError:  # the client gave up (a timeout): nothing more to send
                    pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def completion(request: Request, reply: Reply, *, text: bool = False) -> dict[str, Any]:
    n = len(request.messages)
    message: dict[str, Any] = {"role": "assistant", "content": f"Step {request.turn}: running a command."}
    if reply.content is not None:
        message["content"] = reply.content
    elif text:
        message["content"] += f"\n\n```mswea_bash_command\n{reply.command}\n```\n"
    else:
        arguments = reply.arguments if reply.arguments is not None else json.dumps({"command": reply.command})
        call = {"id": f"call_{n}", "type": "function", "function": {"name": "bash", "arguments": arguments}}
        message["tool_calls"] = [call]
    finish = reply.finish_reason or ("tool_calls" if "tool_calls" in message else "stop")
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": request.model,
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
    } | usage_block(reply)


def usage_block(reply: Reply) -> dict[str, Any]:
    if reply.usage is None:
        return {}
    if reply.usage != "scripted":
        return {"usage": reply.usage}
    total = reply.prompt_tokens + reply.completion_tokens
    return {
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": total,
        }
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    """Hundreds of agents connect at once (socketserver's default backlog of 5 refused some of them
    on a loaded machine: "Connection error" after litellm's retries)."""
