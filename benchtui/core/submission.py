"""The one reader of the benchmark's `submission.json`: what its own Top50 runner wrote for a run.

`python -m benchmark.run_top50` (CodingThrust/problem-reductions-benchmark) writes one JSON file
per run: the frozen shortlist of 50 rules, the triage ledger, then an entry per episode (its
ledger of model generations, shell actions, pred calls and submits, its usage), rewritten after
every episode. The file's format is its `runner_version`; this reader knows the versions in
`RUNNER_VERSIONS` and refuses any other in one line (the ledgers' meaning is the runner's).

Two ways in: `parse` (strict: a finished run's file, anything unreadable or of the wrong type is
a one-line `BadInput`) and `progress` (tolerant: the file of a run still going, possibly absent,
a checkpoint, or unreadable; it never raises and says how far the run got). Neither judges
rankability: `rankable` here is the runner's own flag, structural only (it does not compare the
library commit or pred with the benchmark's published pins: `core/pins.py` does).

The exit code of the runner says nothing (it is 0 on failure): a run is judged by this file's
`status`, `run_error` and episode count.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchtui.core.errors import BadInput
from benchtui.core.inputs import loads_json

RUNNER_VERSIONS = ("0.11.0",)
"""The benchmark runner versions whose submission this reader knows (its 672b214: 0.11.0)."""
PLANNED_EPISODES = 50
"""A Top50 run: triage freezes exactly 50 rules, then one episode per rule."""
MAX_BYTES = 128 * 1024 * 1024
"""A whole run's file. Its ledgers are bounded by the benchmark's own limits (34 messages an
episode, each observation cut to a 10,000-character preview, answers of at most 8,192 tokens):
a few MB for a real run (the stub's is 79 KB); 128 MiB is far past any run and still loads."""
COUNTERS = ("model_generations", "shell_actions", "pred_calls", "solve_calls")
"""The episode counters whose limit a run can hit (the scorer's `cap_hits` names)."""
CHECKPOINT = re.compile(r"run incomplete after episode (\d+)/(\d+)")
"""The run_error of the file the runner rewrites after each episode (and leaves if killed)."""

Phase = Literal["absent", "triage", "episodes", "completed", "failed", "unreadable"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts in the benchmark's four disjoint buckets (`usage_totals`)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
        }


@dataclass(frozen=True, slots=True)
class Count:
    """One ledger counter: how much of its limit a phase used."""

    used: int
    limit: int

    @property
    def hit(self) -> bool:
        """At its limit (the scorer's cap hit: a counter with a positive limit, all used)."""
        return self.limit > 0 and self.used == self.limit


@dataclass(frozen=True, slots=True)
class Accept:
    """A submit the runner accepted (its own verifier said yes, during the run)."""

    attempt: int
    """1: the episode's first submit, 2: its second."""
    certificate: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Episode:
    """One rule's episode, as its ledger records it."""

    index: int
    """1-based position in the frozen shortlist."""
    rule: str
    status: str
    """`completed`, `bug_found` or `run_error` (the runner's words)."""
    counts: Mapping[str, Count]
    """The ledger's counters (`COUNTERS`, and `submit_attempts`)."""
    submits: int
    accepted: Accept | None
    """Its first accepted submit (the scorer counts the first; the runner admits one)."""
    usage: Usage

    @property
    def pred_calls(self) -> int:
        count = self.counts.get("pred_calls")
        return count.used if count else 0

    @property
    def generations(self) -> int:
        count = self.counts.get("model_generations")
        return count.used if count else 0

    @property
    def cap_hits(self) -> tuple[str, ...]:
        return tuple(name for name in COUNTERS if (c := self.counts.get(name)) is not None and c.hit)


@dataclass(frozen=True, slots=True)
class Submission:
    """A run's `submission.json`, typed (the parts benchtui reads; the file itself is kept whole)."""

    model: str
    library_commit: str
    pred_version: str
    runner_version: str
    prompt_id: str
    status: str
    """`completed` or `run_error`."""
    run_error: str
    rankable: bool
    """The runner's own flag: structural (ledgers, prompt, its code path), blind to pins."""
    shortlist: tuple[str, ...]
    """The frozen rules in order; empty when triage froze none."""
    episodes: tuple[Episode, ...]
    triage_usage: Usage
    triage_counts: Mapping[str, Count]
    created_at: str = ""
    test: bool = False
    planned: int = PLANNED_EPISODES
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Top-level keys the reader does not type (`safety_controls`, `inference_parameters`, …)."""

    @property
    def done(self) -> int:
        """Episodes the file records (a run cut off records fewer than `planned`)."""
        return len(self.episodes)

    @property
    def complete(self) -> bool:
        """The runner finished every episode without an error (its file says so, not its exit)."""
        return self.status == "completed" and not self.run_error and self.done == self.planned

    @property
    def checkpoint(self) -> bool:
        """The file the runner leaves after each episode: the run had not ended (or was killed)."""
        return bool(CHECKPOINT.fullmatch(self.run_error))

    @property
    def accepts(self) -> tuple[Episode, ...]:
        return tuple(e for e in self.episodes if e.accepted is not None)

    @property
    def usage(self) -> Usage:
        """`usage_totals` as the scorer sums it: triage and every episode."""
        total = self.triage_usage
        for episode in self.episodes:
            total = total + episode.usage
        return total

    @property
    def pred_calls(self) -> int:
        return sum(e.pred_calls for e in self.episodes)

    @property
    def generations(self) -> int:
        """Model generations the ledgers charged (triage and episodes)."""
        triage = self.triage_counts.get("model_generations")
        return (triage.used if triage else 0) + sum(e.generations for e in self.episodes)

    @property
    def cap_hits(self) -> dict[str, int]:
        """Episodes whose counter ended at its limit, per counter (the scorer's `cap_hits`)."""
        hits: dict[str, int] = {}
        for episode in self.episodes:
            for name in episode.cap_hits:
                hits[name] = hits.get(name, 0) + 1
        return hits


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a run got, from its file as it is now (tolerant: `progress` never raises)."""

    phase: Phase
    done: int = 0
    planned: int = PLANNED_EPISODES
    accepts: int = 0
    status: str = ""
    run_error: str = ""
    problem: str = ""
    """Why the file could not be read (phase `unreadable`)."""

    def describe(self) -> str:
        """One line for the TUI, the headless lines and `ctl status`."""
        if self.phase in ("absent", "triage"):
            return "triage"
        if self.phase == "episodes":
            return f"episode {min(self.done + 1, self.planned)}/{self.planned}, {self.accepts} accepted"
        if self.phase == "completed":
            return f"completed {self.done}/{self.planned}, {self.accepts} accepted"
        if self.phase == "failed":
            return f"run_error after {self.done}/{self.planned}: {self.run_error[:120]}"
        return f"unreadable: {self.problem[:120]}"


def read_file(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file `path`, its last component not followed (a link is refused,
    a FIFO never blocks), within `limit`. Reading beneath a tree an agent writes: open it through
    runners/kit/beneath.py instead, which follows no component at all."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the submission: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: the submission is not a regular file")
        if info.st_size > limit:
            raise BadInput(f"{path}: the submission is too large ({info.st_size:,} bytes, at most {limit:,})")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise BadInput(f"{path}: the submission is too large (at most {limit:,} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the submission: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read(path: Path) -> Submission:
    """A finished run's submission (strict): one BadInput line for anything wrong."""
    return parse(read_file(path), where=str(path))


def parse(data: bytes, *, where: str = "submission.json") -> Submission:
    """Strict: the whole file typed, a known runner version, every read field of its type."""
    if len(data) > MAX_BYTES:
        raise BadInput(f"{where}: the submission is too large ({len(data):,} bytes, at most {MAX_BYTES:,})")
    try:
        doc = loads_json(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{where}: not a submission (not JSON: {str(exc)[:120]})") from None
    try:
        return _decode(doc)
    except _Wrong as exc:
        raise BadInput(f"{where}: {exc}") from None


def progress(data: bytes | None) -> Progress:
    """Tolerant: a run's progress from its file as it is now (None: not written yet)."""
    if data is None:
        return Progress("absent")
    try:
        sub = parse(data)
    except BadInput as exc:
        return Progress("unreadable", problem=str(exc).removeprefix("submission.json: "))
    accepts = len(sub.accepts)
    if sub.complete:
        return Progress("completed", sub.done, sub.planned, accepts, sub.status)
    if sub.checkpoint:
        return Progress("episodes", sub.done, sub.planned, accepts, sub.status, sub.run_error)
    return Progress("failed", sub.done, sub.planned, accepts, sub.status, sub.run_error or "incomplete")


def read_progress(path: Path) -> Progress:
    """`progress` of the file at `path` (absent, unreadable, a link or a FIFO: said, never raised)."""
    try:
        return progress(read_file(path))
    except FileNotFoundError:
        return Progress("absent")
    except BadInput as exc:
        return Progress("unreadable", problem=str(exc))


class _Wrong(Exception):
    """A field of the wrong type or shape (the message names it)."""


_TYPED = frozenset(
    {"model", "library_commit", "pred_version", "runner_version", "prompt_id", "status", "run_error"}
    | {"rankable", "shortlist", "triage", "episodes", "created_at", "test"}
)


def _decode(doc: Any) -> Submission:
    if not isinstance(doc, dict):
        raise _Wrong("not a submission (not a JSON object)")
    version = doc.get("runner_version")
    if version is None:
        raise _Wrong("not a submission of the benchmark's Top50 runner (no runner_version)")
    if version not in RUNNER_VERSIONS:
        known = ", ".join(RUNNER_VERSIONS)
        raise _Wrong(f"a submission of runner version {str(version)[:40]!r}: this benchtui reads {known}")
    status = _text(doc, "status")
    if status not in ("completed", "run_error"):
        raise _Wrong(f"status {status[:40]!r} is neither completed nor run_error")
    shortlist = doc.get("shortlist")
    if shortlist is None:
        rules: tuple[str, ...] = ()
    elif isinstance(shortlist, list):
        rules = tuple(_rule_of(entry, f"shortlist[{i}]") for i, entry in enumerate(shortlist))
    else:
        raise _Wrong("shortlist is not a list")
    triage = doc.get("triage")
    if not isinstance(triage, dict):
        raise _Wrong("triage is not an object")
    ledger = triage.get("ledger")
    episodes = doc.get("episodes")
    if not isinstance(episodes, list):
        raise _Wrong("episodes is not a list")
    rankable, test = doc.get("rankable"), doc.get("test", False)
    if not isinstance(rankable, bool) or not isinstance(test, bool):
        raise _Wrong("rankable or test is not a boolean")
    return Submission(
        model=_text(doc, "model"),
        library_commit=_text(doc, "library_commit"),
        pred_version=_text(doc, "pred_version"),
        runner_version=version,
        prompt_id=_text(doc, "prompt_id"),
        status=status,
        run_error=_text(doc, "run_error", ""),
        rankable=rankable,
        shortlist=rules,
        episodes=tuple(_episode(e, f"episodes[{i}]") for i, e in enumerate(episodes)),
        triage_usage=_usage(triage.get("usage"), "triage.usage"),
        triage_counts=_counts(ledger.get("status") if isinstance(ledger, dict) else None, "triage"),
        created_at=_text(doc, "created_at", ""),
        test=test,
        extra={k: v for k, v in doc.items() if k not in _TYPED},
    )


def _text(doc: Mapping[str, Any], key: str, default: str | None = None, *, where: str = "") -> str:
    value = doc.get(key, default)
    if not isinstance(value, str):
        name = f"{where}.{key}" if where else key
        raise _Wrong(f"{name} is {'missing' if value is None else 'not a string'}")
    return value


def _rule_of(entry: Any, where: str) -> str:
    rule = entry.get("rule") if isinstance(entry, dict) else None
    if not isinstance(rule, str):
        raise _Wrong(f"{where} has no rule")
    return rule


def _int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Wrong(f"{where} is not a non-negative integer")
    return value


def _usage(value: Any, where: str) -> Usage:
    if value is None:
        return Usage()
    if not isinstance(value, dict):
        raise _Wrong(f"{where} is not an object")
    return Usage(
        *(_int(value.get(k) or 0, f"{where}.{k}") for k in ("input", "output", "cache_read", "cache_write"))
    )


def _counts(status: Any, where: str) -> dict[str, Count]:
    if status is None:
        return {}
    if not isinstance(status, dict):
        raise _Wrong(f"{where} status is not an object")
    counts = {}
    for name, item in status.items():
        if not isinstance(item, dict):
            raise _Wrong(f"{where} counter {str(name)[:40]} is not an object")
        counts[name] = Count(
            _int(item.get("used"), f"{where} {name}.used"), _int(item.get("limit"), f"{where} {name}.limit")
        )
    return counts


def _episode(doc: Any, where: str) -> Episode:
    if not isinstance(doc, dict):
        raise _Wrong(f"{where} is not an object")
    ledger = doc.get("ledger") or {}
    if not isinstance(ledger, dict):
        raise _Wrong(f"{where}.ledger is not an object")
    attempts = ledger.get("submit", [])
    if not isinstance(attempts, list):
        raise _Wrong(f"{where} submit ledger is not a list")
    accepted = None
    for n, attempt in enumerate(attempts):
        if not isinstance(attempt, dict):
            raise _Wrong(f"{where} submit[{n}] is not an object")
        if attempt.get("accepted") is True and accepted is None:
            cert = attempt.get("certificate")
            if not isinstance(cert, dict):
                raise _Wrong(f"{where} submit[{n}] was accepted without a certificate object")
            accepted = Accept(_int(attempt.get("attempt"), f"{where} submit[{n}].attempt"), cert)
    status = doc.get("status")
    if not isinstance(status, str):
        raise _Wrong(f"{where}.status is not a string")
    return Episode(
        index=_int(doc.get("index"), f"{where}.index"),
        rule=_text(doc, "rule", where=where),
        status=status,
        counts=_counts(ledger.get("status"), where),
        submits=len(attempts),
        accepted=accepted,
        usage=_usage(doc.get("usage"), f"{where}.usage"),
    )
