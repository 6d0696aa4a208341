"""The three APIs the gateway speaks: where each lives upstream, how its key travels, and what
its errors look like (what a call may cost is `policy`'s).

A refusal of the budget is a 429 the client's SDK raises as its own rate-limit error, and does
not retry (`x-should-retry: false`, honoured by the official SDKs); a request the price table
cannot bound, or a malformed one, is a 400 in the same shape.
"""

from __future__ import annotations

import json

from benchtui.runners.kit.gateway.policy import Api

REFUSAL_STATUS = 429
NO_RETRY = [(b"x-should-retry", b"false")]


class Dialect:
    name: Api
    path: str  # under the provider's base URL
    auth_header: str  # how the real key travels upstream
    default_base: str

    def error(self, status: int, message: str, kind: str) -> bytes:
        return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": kind}}).encode()

    def stream_error(self, message: str) -> bytes:
        """An error event that ends a stream the gateway cuts (each SDK raises it as an error)."""
        return b"data: " + self.error(500, message, "api_error") + b"\n\n"


class ChatCompletions(Dialect):
    name, path, auth_header = "chat", "chat/completions", "authorization"
    default_base = "https://api.openai.com/v1"


class Responses(Dialect):
    name, path, auth_header = "responses", "responses", "authorization"
    default_base = "https://api.openai.com/v1"

    def stream_error(self, message: str) -> bytes:
        event = {"type": "error", "code": "api_error", "message": message, "param": None}
        return b"event: error\ndata: " + json.dumps(event).encode() + b"\n\n"


class Messages(Dialect):
    name, path, auth_header = "messages", "messages", "x-api-key"
    default_base = "https://api.anthropic.com/v1"
    KINDS = {
        "insufficient_quota": "rate_limit_error",
        "authentication_error": "authentication_error",
        "invalid_request_error": "invalid_request_error",
        "not_found_error": "not_found_error",
        "request_too_large": "request_too_large",
        "timeout_error": "timeout_error",
    }

    def error(self, status: int, message: str, kind: str) -> bytes:
        return json.dumps(
            {"type": "error", "error": {"type": self.KINDS.get(kind, "api_error"), "message": message}}
        ).encode()

    def stream_error(self, message: str) -> bytes:
        return b"event: error\ndata: " + self.error(500, message, "api_error") + b"\n\n"


ROUTES: dict[str, type[Dialect]] = {
    "/v1/chat/completions": ChatCompletions,
    "/v1/responses": Responses,
    "/v1/messages": Messages,
}
