"""An agent's stdout and stderr into its log file, bounded on disk and in memory.

An agent CLI may print without end (600 MB of it took 600 MB of disk, and 1.2 GB of the engine's
memory when the log was read back whole for certificates). Its output comes through a pipe: the
first HEAD_BYTES go to the file as they come, the last TAIL_BYTES are kept in memory (a queue of
chunks, never copied as a whole) and written at the end after a line saying how much was cut;
the middle is counted, not stored. The agent is never blocked: whatever it writes is read.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path
from types import TracebackType

HEAD_BYTES = 24 << 20
TAIL_BYTES = 8 << 20
MAX_LOG_BYTES = HEAD_BYTES + TAIL_BYTES + 200
"""What a log (this attempt's part of it) holds at most, the cut line included."""
CHUNK = 1 << 16


class CappedLog:
    """`with CappedLog(path) as log: log.write(chunk)...`: appends to `path`, bounded."""

    def __init__(self, path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self.path = path
        self.head, self.tail = head, tail
        self.written = 0
        self.cut = 0
        """Bytes of output neither written nor kept."""
        self._tail: collections.deque[bytes | bytearray] = collections.deque()
        self._tail_size = 0
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def write(self, data: bytes | bytearray) -> None:
        room = self.head - self.written
        if room > 0:
            piece = data[:room]
            _write_all(self._fd, piece)
            self.written += len(piece)
            data = data[room:]
        if not data:
            return
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size - len(self._tail[0]) >= self.tail:
            self.cut += len(self._tail[0])
            self._tail_size -= len(self._tail.popleft())

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            extra = self._tail_size - self.tail
            if extra > 0:  # the oldest kept chunk is cut to size
                self._tail[0] = self._tail[0][extra:]
                self.cut += extra
            if self.cut:
                _write_all(self._fd, b"\n[benchtui: %d bytes of the agent's output cut here]\n" % self.cut)
            for chunk in self._tail:
                _write_all(self._fd, chunk)
        finally:
            os.close(self._fd)
            self._fd = -1
            self._tail.clear()

    def __enter__(self) -> CappedLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def pump(fd: int, log: CappedLog) -> None:
    """Copy `fd` (a pipe's read end) into `log` until its end (blocking: for a node's thread)."""
    while chunk := os.read(fd, CHUNK):
        log.write(chunk)
