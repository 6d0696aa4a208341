"""Durability by group commit: journal lines, result rows and the ledger, written in batches.

Callers append records and mark the ledger dirty in memory, then `await commit()`, which
returns once everything appended before the call is on disk. One committer task writes each
batch in a worker thread, in this order: result details (`outcomes/<model>.jsonl`), journal lines
(`sessions.jsonl`), then the ledger (`ledger.toml`, atomically). A SIGKILL between any two
writes leaves files that `checkpoint.load` reconciles. Batching keeps the cost per event flat
however many sessions run: the ledger holds accounts and in-flight attempts, not history.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from benchtui.core.atomic import AppendLog, atomic_write
from benchtui.core.errors import StorageFailed
from benchtui.engine.ledger import Ledger

JOURNAL = "sessions.jsonl"
OUTCOMES = "outcomes"  # one JSON-lines file per model: results are written a model at a time
LEDGER = "ledger.toml"
JOURNAL_FORMAT_FILE = "sessions.format"
"""Beside the journal: its format number (`1\n`). Run dirs made before formats had numbers have
none: the same layout as format 1. The journal itself stays one JSON record a line."""
JOURNAL_FORMAT = 1
SOON_S = 0.05
"""`mark_dirty_soon`: the ledger is written within this, or with the next commit if sooner."""


class Store:
    def __init__(
        self,
        run_dir: Path,
        ledger: Ledger,
        *,
        snapshot: Callable[[], Any] = lambda: None,
        on_commit: Callable[[Any], None] = lambda snap: None,
    ) -> None:
        self.run_dir = run_dir
        self.ledger = ledger
        self.snapshot = snapshot
        """Called when a batch is taken; its value goes to `on_commit` once the batch is on disk."""
        self.on_commit = on_commit
        self.journal = AppendLog(run_dir / JOURNAL)
        self.outcomes: dict[str, AppendLog] = {}
        self._lines: list[str] = []
        self._rows: dict[str, list[str]] = {}
        self._wanted = trio.Event()
        self._soon: float | None = None
        self._waiting: trio.CancelScope | None = None
        self._batch_done = trio.Event()
        self.failure: StorageFailed | None = None
        self.commits = 0
        self.write_seconds = 0.0

    def append(self, record: dict[str, Any]) -> None:
        """Queue a journal line (one session state change)."""
        self._lines.append(json.dumps(record, separators=(",", ":")))

    def append_row(self, file: str, record: dict[str, Any]) -> None:
        """Queue result details (certificates) for `outcomes/<file>.jsonl`; they are written
        before the journal line that ends the session."""
        self._rows.setdefault(file, []).append(json.dumps(record, separators=(",", ":")))

    def mark_dirty(self) -> None:
        """The ledger changed; the next commit writes it (no waiting)."""
        self._wanted.set()

    def mark_dirty_soon(self) -> None:
        """The ledger changed in a way no one waits for (a call's charge settling its hold: until
        written, the hold stands, and a crash charges it in full): written with the next commit,
        at the latest SOON_S from now. A model call's charge so rides with the next call's hold,
        and a session makes one ledger write a call, not two."""
        if self._soon is None:
            try:
                self._soon = trio.current_time() + SOON_S
            except RuntimeError:  # not in a Trio run: no committer to wait for
                self._wanted.set()
                return
            if self._waiting is not None:
                self._waiting.deadline = self._soon

    async def commit(self) -> None:
        """Wait until everything queued so far is durable (raises StorageFailed if it cannot be)."""
        if self.failure:
            raise self.failure
        done = self._batch_done
        self._wanted.set()
        await done.wait()
        if self.failure:
            raise self.failure

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The committer: runs until cancelled; commits whatever is pending when it wakes."""
        task_status.started()
        while True:
            with trio.CancelScope(deadline=self._soon or math.inf) as self._waiting:
                await self._wanted.wait()
            self._waiting = None
            await self.flush()

    async def flush(self) -> None:
        """Write one batch now (also used for the final commit after the committer stops)."""
        if self.failure:
            raise self.failure
        self._wanted = trio.Event()
        self._soon = None
        rows, self._rows = self._rows, {}
        lines, self._lines = self._lines, []
        done, self._batch_done = self._batch_done, trio.Event()
        try:
            ledger_bytes = self.ledger.to_toml()
            snap = self.snapshot()
            # The write is not abandoned on cancel: a batch is either written or has failed.
            await trio.to_thread.run_sync(self._write, rows, lines, ledger_bytes)
        except BaseException as exc:
            # Any failure (not only OSError) means nothing from here on is durable: every waiter,
            # now and later, must see it rather than act as if its change were saved.
            why = (exc.strerror or exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
            self.failure = StorageFailed(
                f"cannot save state in {self.run_dir}: {why}; the last saved "
                "state is intact: fix this, then run with --resume"
            )
            self._batch_done.set()
            if not isinstance(exc, Exception):
                raise
        finally:
            done.set()
        if self.failure:
            raise self.failure
        self.commits += 1
        self.on_commit(snap)

    def _write(self, rows: dict[str, list[str]], lines: list[str], ledger_bytes: bytes) -> None:
        t0 = time.perf_counter()
        for file, batch in rows.items():
            if file not in self.outcomes:
                (self.run_dir / OUTCOMES).mkdir(exist_ok=True)
                self.outcomes[file] = AppendLog(self.run_dir / OUTCOMES / f"{file}.jsonl")
            self.outcomes[file].append(("\n".join(batch) + "\n").encode())
        if lines:
            self.journal.append(("\n".join(lines) + "\n").encode())
        atomic_write(self.run_dir / LEDGER, ledger_bytes)
        self.write_seconds += time.perf_counter() - t0

    def close(self) -> None:
        self.journal.close()
        for log in self.outcomes.values():
            log.close()
