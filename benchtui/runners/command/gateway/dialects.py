"""The three APIs the gateway speaks: what to enforce on a request, where each puts its usage.

Every dialect answers the same questions: which field bounds the output (capped by the model's
`max_output_tokens` and sent upstream), how to make a stream end with its usage, where the usage
is in an answer or a stream, and what a refusal looks like so the client's SDK raises its own
rate-limit error and does not retry (`x-should-retry: false`, honoured by the official SDKs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

REFUSAL_STATUS = 429
NO_RETRY = [(b"x-should-retry", b"false")]


@dataclass
class StreamUsage:
    """Usage seen so far in a stream; `complete` once the event carrying the final usage came."""

    input_tokens: int = 0
    output_tokens: int = 0
    complete: bool = False


class Dialect:
    name: str
    path: str  # under the provider's base URL
    output_field: str
    auth_header: str  # how the real key travels upstream
    default_base: str

    def prepare(self, body: dict[str, Any], upstream_model: str, max_output: int) -> int:
        """Pin the model and cap the output in place; returns the output bound authorised for."""
        body["model"] = upstream_model
        asked = body.get(self.output_field)
        bound = min(asked, max_output) if isinstance(asked, int) and asked > 0 else max_output
        body[self.output_field] = bound
        return bound

    def usage(self, answer: dict[str, Any]) -> tuple[int, int] | None:
        raise NotImplementedError

    def observe(self, event: dict[str, Any], seen: StreamUsage) -> bool:
        """Note the usage an event carries; False to keep the event from the client."""
        raise NotImplementedError

    def error(self, status: int, message: str, kind: str) -> bytes:
        return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": kind}}).encode()


def _ints(*values: Any) -> int:
    return sum(v for v in values if isinstance(v, int) and v > 0)


class ChatCompletions(Dialect):
    name, path, output_field, auth_header = "chat", "chat/completions", "max_tokens", "authorization"
    default_base = "https://api.openai.com/v1"

    client_wants_usage = False

    def prepare(self, body: dict[str, Any], upstream_model: str, max_output: int) -> int:
        if "max_completion_tokens" in body:  # the newer name wins where the client used it
            self.output_field = "max_completion_tokens"
        if body.get("stream"):  # without it a stream has no usage: ask, and hide it if not asked
            options = body.get("stream_options") or {}
            self.client_wants_usage = bool(options.get("include_usage"))
            body["stream_options"] = {**options, "include_usage": True}
        return super().prepare(body, upstream_model, max_output)

    def usage(self, answer: dict[str, Any]) -> tuple[int, int] | None:
        u = answer.get("usage")
        if not isinstance(u, dict) or not isinstance(u.get("prompt_tokens"), int):
            return None
        return _ints(u.get("prompt_tokens")), _ints(u.get("completion_tokens"))

    def observe(self, event: dict[str, Any], seen: StreamUsage) -> bool:
        found = self.usage(event)
        if found is None:
            return True
        seen.input_tokens, seen.output_tokens = found
        seen.complete = True
        return bool(event.get("choices")) or self.client_wants_usage


class Responses(Dialect):
    name, path, output_field, auth_header = "responses", "responses", "max_output_tokens", "authorization"
    default_base = "https://api.openai.com/v1"
    FINAL = ("response.completed", "response.incomplete", "response.failed")

    def usage(self, answer: dict[str, Any]) -> tuple[int, int] | None:
        u = answer.get("usage")
        if not isinstance(u, dict) or not isinstance(u.get("input_tokens"), int):
            return None
        return _ints(u.get("input_tokens")), _ints(u.get("output_tokens"))

    def observe(self, event: dict[str, Any], seen: StreamUsage) -> bool:
        if event.get("type") in self.FINAL and isinstance(event.get("response"), dict):
            found = self.usage(event["response"])
            if found is not None:
                seen.input_tokens, seen.output_tokens = found
                seen.complete = True
        return True


class Messages(Dialect):
    name, path, output_field, auth_header = "messages", "messages", "max_tokens", "x-api-key"
    default_base = "https://api.anthropic.com/v1"
    final_usage = False

    @staticmethod
    def _input(u: dict[str, Any]) -> int:
        # Cache writes and reads are prompt tokens too; the campaign has one input price.
        return _ints(
            u.get("input_tokens"), u.get("cache_creation_input_tokens"), u.get("cache_read_input_tokens")
        )

    def usage(self, answer: dict[str, Any]) -> tuple[int, int] | None:
        u = answer.get("usage")
        if not isinstance(u, dict) or not isinstance(u.get("output_tokens"), int):
            return None
        return self._input(u), _ints(u.get("output_tokens"))

    def observe(self, event: dict[str, Any], seen: StreamUsage) -> bool:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            u = event["message"].get("usage") or {}
            seen.input_tokens, seen.output_tokens = self._input(u), _ints(u.get("output_tokens"))
        elif kind == "message_delta" and isinstance(event.get("usage"), dict):
            u = event["usage"]
            seen.output_tokens = max(seen.output_tokens, _ints(u.get("output_tokens")))  # cumulative
            seen.input_tokens = max(seen.input_tokens, self._input(u))
            self.final_usage = isinstance(u.get("output_tokens"), int)
        elif kind == "message_stop":
            seen.complete = self.final_usage
        return True

    def error(self, status: int, message: str, kind: str) -> bytes:
        kinds = {"insufficient_quota": "rate_limit_error", "authentication_error": "authentication_error"}
        return json.dumps(
            {"type": "error", "error": {"type": kinds.get(kind, "api_error"), "message": message}}
        ).encode()


ROUTES: dict[str, type[Dialect]] = {
    "/v1/chat/completions": ChatCompletions,
    "/v1/responses": Responses,
    "/v1/messages": Messages,
}
