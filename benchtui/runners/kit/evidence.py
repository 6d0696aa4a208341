"""The evidence ledger: `sessions/<id>/evidence.jsonl`, one typed record per step of a session.

`generation` (a model call: tokens, cost, charged, its `outcome`: `action`, or `format_error` as the
benchmark counts an answer with no usable action), `action` (a shell command: exit, duration,
raw bytes, characters shown, cut), `tool` (a gated call: argv, counters, request id, free),
`submit` (a submitted file: its hash, the verdict, the reason). Each record is one JSON line,
appended and fsynced as it happens (a SIGKILL loses at most the step in flight; a torn last
line is cut on the next open), so a maintainer can audit what each counter counted.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from benchtui.core.atomic import AppendLog

FILE = "evidence.jsonl"
VERSION = 1
Kind = Literal["generation", "action", "tool", "submit"]
KINDS: tuple[str, ...] = ("generation", "action", "tool", "submit")
MAX_TEXT = 2000  # a command or argv word kept in a record (the trajectory keeps the whole)


class Evidence:
    """The ledger of one session (all its attempts: each record names its attempt)."""

    def __init__(self, session_dir: Path, attempt: int) -> None:
        session_dir.mkdir(parents=True, exist_ok=True)
        self.path = session_dir / FILE
        self.attempt = attempt
        self._log: AppendLog | None = AppendLog(self.path)
        self._started = time.monotonic()
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)

    def record(self, kind: Kind, **fields: Any) -> None:
        if self._log is None:
            return
        self.counts[kind] += 1
        record = {
            "v": VERSION,
            "kind": kind,
            "attempt": self.attempt,
            "n": self.counts[kind],
            "t": round(time.monotonic() - self._started, 3),
            **{k: _short(v) for k, v in fields.items()},
        }
        self._log.append(json.dumps(record, default=str).encode() + b"\n")

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _short(value: Any) -> Any:
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, list):
        return [_short(v) for v in value[:64]]
    return value
