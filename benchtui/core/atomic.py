"""Crash-safe file writes (temp file in the same dir, rename; fsynced, with the dir, when the file
is the only record of what it holds), append-only logs, and bulk parsing without the cyclic GC."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """For bulk (de)serialisation, which builds many containers and no cycles: the collector's
    full passes over a large live heap would make it quadratic (measured: 75 us a line, not 20)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data`: a reader, or a process killed at any instant, finds the old or
    the new file, whole. `durable`: also through an OS crash or a power cut (fsync of the file and
    of its folder). A file derived from a durable record (the ledger and the results, from the
    journal) needs no fsync: a power cut may leave it old, empty or torn, and whoever opens the
    run next rebuilds it from the record."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class AppendLog:
    """An append-only JSON-lines file; a torn last line (crash mid-write) is cut off on open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._cut_torn_tail(os.lseek(self.fd, 0, os.SEEK_END))
        self.size = os.lseek(self.fd, 0, os.SEEK_END)
        """Bytes of whole lines in the file (what was written through this log included)."""

    def _cut_torn_tail(self, size: int) -> None:
        end = size
        while end > 0:
            start = max(0, end - 65536)
            os.lseek(self.fd, start, os.SEEK_SET)
            chunk = os.read(self.fd, end - start)
            if end == size and chunk.endswith(b"\n"):
                return
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                os.ftruncate(self.fd, start + cut + 1)
                return
            end = start
        os.ftruncate(self.fd, 0)

    def append(self, data: bytes, *, durable: bool = True) -> None:
        """Write whole lines; `durable`: and fsync them."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        self.size += len(data)
        if durable:
            os.fsync(self.fd)

    def close(self) -> None:
        """Once: a second close must not close whatever file has since been given this number."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
