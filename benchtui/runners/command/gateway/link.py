"""The channel between the engine and a relay process: one unix socket pair per relay, each
message one JSON array on a line (orjson never writes a raw newline).

relay -> engine
    ["h", id, token, prompt_tokens, output_tokens]   hold a call's worst case (awaits "h")
    ["c", id, buckets, served, provider_cost]        charge call `id` (buckets: core/usage.py's
                                                     {"input", "cache_read", …}; null: its worst case)
    ["t", id, retry_after_s | null]                  the provider answered call `id` with 429
    ["a", id, payload]                               the answer to the engine's request `id`
engine -> relay
    ["h", id, null | refusal message]                the hold is durable (null) or refused
    ["b", id, token, grant]                          a session's token is good (answers "a")
    ["u", id, token]                                 ... no longer: cut its calls (answers "a")
    ["q", id]                                        the connection figures (answers "a")
    ["g"]                                            serve (after the bindings a restart needs)

Charges are one-way and ordered after the call's hold on the same socket; the engine settles a
session only after its relays answered "u", so every charge sent before the answer is counted.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from typing import Any

import orjson

RELAY_ENVIRONMENT = (
    "PATH",
    "HOME",
    "LANG",
    "TMPDIR",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
"""All a relay inherits of its starter's environment: never the provider keys kept there (they
reach a relay over its channel, one session's at a time)."""


def relay_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in RELAY_ENVIRONMENT or k.startswith("LC_")}


def default_limit() -> int:
    """A relay's connections: a quarter of the descriptors a process may open (the rest for the
    provider side), 16..1024."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, min(1024, soft // 4))


def encode(*message: Any) -> bytes:
    return orjson.dumps(message) + b"\n"


class Lines:
    """Feed received bytes; get back each whole message."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> Iterator[list[Any]]:
        data = self._rest + data
        *whole, self._rest = data.split(b"\n")
        for line in whole:
            yield orjson.loads(line)
