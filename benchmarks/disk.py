"""The machine's fsync latency, printed beside every durable figure: a durable figure on a shared
disk says as much about the disk that minute as about the code."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path


def fsync_latency(folder: Path, tries: int = 50) -> float:
    """Median seconds of a 4 KiB write + fsync in `folder` (what one group commit waits for)."""
    fd, name = tempfile.mkstemp(dir=folder)
    took = []
    try:
        for _ in range(tries):
            started = time.perf_counter()
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
            took.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        os.unlink(name)
    return statistics.median(took)
