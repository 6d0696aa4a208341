"""Connections that have not yet said who they are, bounded: the engine's listeners on the
cluster network (Ray nodes calling back, nodes' gateway relays) are open to any host there.

A node sends its first line as it connects, so only a stranger lingers before it: at most
`limit` handshakes wait at once, and a newcomer past that ends the oldest one. A flood of silent
connections so holds at most `limit` of the engine's descriptors (which its ledger writes need
too) and cannot keep a node out for longer than the node takes to send its line.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import trio

MAX_PENDING = 256


class Handshakes:
    def __init__(self, limit: int = MAX_PENDING) -> None:
        self.limit = limit
        self._pending: dict[int, trio.CancelScope] = {}  # oldest first
        self._ids = itertools.count()
        self.evicted = 0

    @contextlib.contextmanager
    def pending(self, timeout_s: float) -> Iterator[trio.CancelScope]:
        """Read a connection's first words inside this: it ends (cancelled, like its timeout)
        after `timeout_s`, or earlier if `limit` newer handshakes came since."""
        while len(self._pending) >= self.limit:
            oldest = next(iter(self._pending))
            self._pending.pop(oldest).cancel()
            self.evicted += 1
        key = next(self._ids)
        scope = self._pending[key] = trio.CancelScope(deadline=trio.current_time() + timeout_s)
        try:
            with scope:
                yield scope
        finally:
            self._pending.pop(key, None)
