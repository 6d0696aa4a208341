"""Durability by group commit: everything the engine acts on goes into the journal, one fsync a batch.

Callers queue journal lines (session records, outcome details) and events to announce once those
are durable, change the ledger in memory, then `await commit()`, which returns once everything
queued before the call is on disk. One committer task writes each batch in a worker thread:

1. the journal (`sessions.jsonl`): the batch's lines, plus a flight line for every attempt whose
   holds, charges or logical units changed and an `active_runner` line when the runner did
   (engine/journal.py), appended and fsynced: the batch's one fsync;
2. the outcome details' copies (`outcomes/<model>.jsonl`) and the ledger (`ledger.toml`, whole,
   temp file + rename, with the journal position it reflects): not fsynced, since the journal
   says all they say; whoever opens the run next brings them up to date (run.open_run).

Then the batch's events are announced, in the order they were queued, and its waiters go on. A
batch gathers what is ready: commits of concurrent calls share it, and the committer lets the
tasks its wake-up set off run for a few ticks first, so a launch that takes a slot an end just
freed rides that end's commit. Batching keeps the cost per event flat however many sessions run.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from benchtui.core.atomic import AppendLog, atomic_write
from benchtui.core.errors import StorageFailed
from benchtui.engine import journal as wal
from benchtui.engine.ledger import Ledger
from benchtui.engine.plan import slug

JOURNAL = wal.JOURNAL
JOURNAL_FORMAT_FILE = wal.FORMAT_FILE
JOURNAL_FORMAT = wal.FORMAT
OUTCOMES = "outcomes"  # one JSON-lines file per model: the details lines of the journal, by model
LEDGER = "ledger.toml"
SOON_S = 0.05
"""`mark_dirty_soon`: the change is written within this, or with the next commit if sooner."""
GATHER_TICKS = 3
"""Scheduler ticks the committer lets pass between its wake-up and taking a batch: what the
wake-up set off (an end frees a slot; the launch loop reserves the next session and queues its
start line: 2-3 ticks) joins the batch. A tick is microseconds; nothing waits on a timer."""


class Store:
    def __init__(
        self,
        run_dir: Path,
        ledger: Ledger,
        *,
        snapshot: Callable[[], Any] = lambda: None,
        on_commit: Callable[[Any], None] = lambda snap: None,
        emit: Callable[[Any], None] = lambda event: None,
        runner: str | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.ledger = ledger
        self.snapshot = snapshot
        """Called when a batch is taken; its value goes to `on_commit` once the batch is on disk."""
        self.on_commit = on_commit
        self.emit = emit
        """Announces the events queued with `after_commit`, once their batch is durable."""
        self.journal = AppendLog(run_dir / JOURNAL)
        self.size = self.journal.size
        """The journal's durable size: bytes of whole lines."""
        self.outcomes: dict[str, AppendLog] = {}
        self._lines: list[str] = []
        self._writing = 0
        self._rows: dict[str, list[str]] = {}
        self._events: list[Any] = []
        self._flights: dict[str, tuple[Any, ...]] = {}
        """The state of each attempt in flight as last journaled."""
        self._runner = runner if runner is not None else ledger.control.runner
        """The active runner as the journal last says it."""
        self._wanted = trio.Event()
        self._soon: float | None = None
        self._waiting: trio.CancelScope | None = None
        self._batch_done = trio.Event()
        self.failure: StorageFailed | None = None
        self.commits = 0
        self.fsyncs = 0
        self.write_seconds = 0.0

    @property
    def position(self) -> int:
        """The journal's size once everything queued so far is written (derived files record
        the position their content reflects)."""
        return self.size + self._writing + sum(len(line.encode()) + 1 for line in self._lines)

    def append(self, record: dict[str, Any]) -> None:
        """Queue a journal line (one session state change)."""
        self._queue(wal.dumps(record))

    def append_details(self, model: str, file: str, details: dict[str, Any]) -> None:
        """Queue an ended attempt's details (certificates): a journal line, copied to
        `outcomes/<file>.jsonl`; they go before the line that ends the attempt."""
        line = wal.details_line(model, details)
        self._queue(line)
        self._rows.setdefault(file, []).append(line)

    def _queue(self, line: str) -> None:
        self._lines.append(line)

    def after_commit(self, event: Any) -> None:
        """Announce `event` once everything queued so far is durable (events go out in the
        order they were queued, whichever task waits for which commit)."""
        self._events.append(event)
        self._wanted.set()

    def mark_dirty(self) -> None:
        """The ledger changed; the next commit writes it (no waiting)."""
        self._wanted.set()

    def mark_dirty_soon(self) -> None:
        """The ledger changed in a way no one waits for (a call's charge settling its hold: until
        written, the hold stands, and a crash charges it in full): written with the next commit,
        at the latest SOON_S from now. A model call's charge so rides with the next call's hold,
        and a session makes one commit a call, not two."""
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
            for _ in range(GATHER_TICKS):  # let what the wake-up set off join this batch
                await trio.lowlevel.checkpoint()
            await self.flush()

    async def flush(self) -> None:
        """Write one batch now (also used for the final commit after the committer stops)."""
        if self.failure:
            raise self.failure
        self._wanted = trio.Event()
        self._soon = None
        rows, self._rows = self._rows, {}
        lines, self._lines = self._lines, []
        events, self._events = self._events, []
        done, self._batch_done = self._batch_done, trio.Event()
        try:
            lines += self._changes()
            batch = ("\n".join(lines) + "\n").encode() if lines else b""
            self._writing = len(batch)
            ledger_bytes = self.ledger.to_toml(journal_bytes=self.size + len(batch))
            snap = self.snapshot()
            # The write is not abandoned on cancel: a batch is either written or has failed.
            await trio.to_thread.run_sync(self._write, rows, batch, ledger_bytes)
            self.size += len(batch)
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
            self._writing = 0
            done.set()
        if self.failure:
            raise self.failure
        self.commits += 1
        self.on_commit(snap)
        for event in events:
            self.emit(event)

    def _changes(self) -> list[str]:
        """Journal lines for what changed in the ledger since the last batch and was not a line
        of its own: each attempt in flight whose holds, charges or units changed, the runner."""
        lines = []
        running = self.ledger.running
        for session in [s for s in self._flights if s not in running]:
            del self._flights[session]  # ended: its end line says the rest
        for session, flight in running.items():
            state = (flight.attempt, flight.spent, flight.held, *flight.counters.items())
            if self._flights.get(session, (flight.attempt, flight.spent, flight.held)) != state:
                lines.append(wal.flight_line(flight))
            self._flights[session] = state
        if self.ledger.control.runner != self._runner:
            self._runner = self.ledger.control.runner
            lines.append(wal.runner_line(self._runner))
        return lines

    def _write(self, rows: dict[str, list[str]], batch: bytes, ledger_bytes: bytes) -> None:
        t0 = time.perf_counter()
        if batch:
            self.journal.append(batch)
            self.fsyncs += 1
        for file, lines in rows.items():
            if file not in self.outcomes:
                (self.run_dir / OUTCOMES).mkdir(exist_ok=True)
                self.outcomes[file] = AppendLog(self.run_dir / OUTCOMES / f"{file}.jsonl")
            self.outcomes[file].append(("\n".join(lines) + "\n").encode(), durable=False)
        atomic_write(self.run_dir / LEDGER, ledger_bytes, durable=False)
        self.write_seconds += time.perf_counter() - t0

    def close(self) -> None:
        self.journal.close()
        for log in self.outcomes.values():
            log.close()


def mend_derived_files(run_dir: Path, models: list[str]) -> None:
    """Before a run opens (in a worker thread): the journal's format made current, then each
    model's `outcomes/<model>.jsonl` made what the journal says it is: the lines an older release
    kept only there, then the journal's details lines of the model, in order. A file a crash left
    short, torn or old is rewritten (not fsynced: the journal has it all). One streamed pass over
    the journal when every file is right (its details lines are most of it)."""
    wal.make_current(run_dir)
    journal = run_dir / JOURNAL
    wanted = wal.details_digests(journal, models)
    for model in models:
        path = run_dir / OUTCOMES / f"{slug(model)}.jsonl"
        older, copied, whole = _outcomes(path)
        if whole and copied.digest() == wanted[model].digest():
            continue
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, b"".join(older + wal.details_lines(journal, model)), durable=False)


def _outcomes(path: Path) -> tuple[list[bytes], Any, bool]:
    """An outcomes file as found: its lines of an older release, a sha256 of its copies of the
    journal's lines, and whether it is exactly those, in that order, with nothing torn."""
    older: list[bytes] = []
    copied = hashlib.sha256()
    size, in_order = 0, True
    try:
        for line in wal.whole_lines(path, "the outcome details"):
            size += len(line)
            if line.startswith(wal.DETAILS.encode()):
                copied.update(line)
            else:
                in_order = in_order and copied.digest() == hashlib.sha256().digest()
                older.append(line)
        return older, copied, in_order and size == path.stat().st_size
    except FileNotFoundError:
        return [], copied, True
