"""The channel between the engine and a relay process: one unix socket pair per relay, each
message one JSON array on a line (orjson never writes a raw newline).

relay -> engine
    ["h", id, token, prompt_tokens, output_tokens]   hold a call's worst case (awaits "h")
    ["c", id, input_tokens, output_tokens, served]   charge call `id` (tokens null: its worst case)
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

from collections.abc import Iterator
from typing import Any

import orjson


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
