"""The session journal (`sessions.jsonl`): the run's write-ahead record, its lines and its reader.

Every change the engine acts on is a line here before it acts (appended, then fsynced once per
group commit: engine/store.py); ledger.toml, the outcome details and the results files are derived
from it, and whoever opens the run next brings them up to date (docs/design/invariants.md#f7).
A line is one JSON object; its first key says what it is:

- `{"session": …}` a session's state change (`records.JournalRecord`; the only kind in format 1);
- `{"flight": <session>, "attempt": n, "spent_usd": x, "held_usd": y, "counters": {…}}` an
  attempt in flight as the ledger holds it after a commit: what it spent, its open holds and the
  logical units it took. Absolute, not a delta: the attempt's last one is its state;
- `{"details": <model>, "session": …, "attempt": n, …}` an ended attempt's bulky details
  (certificate, the verifier's details, the prompt's hash), before its end line;
- `{"active_runner": <profile>}` the runner profile new sessions use from here on.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchtui.core import bounds, inputs
from benchtui.core.atomic import atomic_write, gc_paused
from benchtui.core.errors import BadInput
from benchtui.core.money import to_float, usd
from benchtui.core.outcome import OutcomeDetails
from benchtui.engine import shortlist
from benchtui.engine.ledger import InFlight
from benchtui.engine.plan import PlannedSession
from benchtui.engine.records import JournalRecord

JOURNAL = "sessions.jsonl"
FORMAT_FILE = "sessions.format"
"""Beside the journal: its format number (`2\n`). Run dirs made before formats had numbers have
none: the same layout as format 1."""
FORMAT = 2
"""1: session lines only (holds and charges were in ledger.toml alone). 2: the kinds above; a
reader of format 1 would take them for corruption, so it refuses the file in one line."""

FLIGHT, DETAILS, RUNNER = '{"flight":', '{"details":', '{"active_runner":'
_FLIGHT, _DETAILS, _RUNNER = FLIGHT.encode(), DETAILS.encode(), RUNNER.encode()


def dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def flight_line(flight: InFlight) -> str:
    counters = {"counters": flight.counters} if flight.counters else {}
    return dumps({"flight": flight.session, "attempt": flight.attempt, "spent_usd": to_float(flight.spent),
                  "held_usd": to_float(flight.held), **counters})  # fmt: skip


def details_line(model: str, details: dict[str, Any]) -> str:
    return dumps({"details": model, **details})


def runner_line(profile: str) -> str:
    return dumps({"active_runner": profile})


@dataclass(frozen=True, slots=True)
class Flight:
    """An attempt in flight as the journal last recorded it."""

    spent: Decimal
    held: Decimal
    counters: dict[str, int]


@dataclass
class Journal:
    """A journal as read: its session records in order, what else it says, and its size."""

    records: list[JournalRecord] = field(default_factory=list)
    format: int = FORMAT
    size: int = 0
    """Bytes of whole lines (a torn last line, which the next writer cuts off, excluded)."""
    runner: str | None = None
    """The last `active_runner` line's profile."""
    flight_lines: list[tuple[int, str]] = field(default_factory=list)
    """(line number, text) of every flight line: parsed only for attempts still in flight."""
    path: Path = Path(JOURNAL)

    def flight(self, session: str, attempt: int) -> Flight | None:
        """The last state the journal recorded for an attempt in flight, if any."""
        head = f"{FLIGHT}{json.dumps(session)},"
        for number, line in reversed(self.flight_lines):
            if not line.startswith(head):
                continue
            try:
                data = json.loads(line)
                if data["attempt"] != attempt:
                    continue
                spent, held = data["spent_usd"], data["held_usd"]
                counts = data.get("counters", {})
                if not (bounds.sane_amount(spent) and bounds.sane_amount(held)):
                    raise ValueError("an amount out of range")
                if not isinstance(counts, dict) or not all(
                    type(v) is int and v >= 0 and isinstance(k, str) for k, v in counts.items()
                ):
                    raise ValueError("counters are not counts")
                return Flight(usd(spent), usd(held), counts)
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                raise BadInput(
                    f"{self.path}: corrupted journal at line {number} ({exc}); use --fresh to start over"
                ) from None
        return None


def journal_format(run_dir: Path) -> int:
    """The journal's format (0 for run dirs made before formats had numbers: the same as 1);
    BadInput for one newer than this code reads."""
    path = run_dir / FORMAT_FILE
    try:
        text = inputs.read_text(path, inputs.SMALL_MAX_BYTES, "the journal's format").strip()
    except FileNotFoundError:
        return 0
    if not text.isdigit() or len(text) > 6:
        raise BadInput(f"{path}: corrupted (not a format number)")
    if int(text) > FORMAT:
        raise BadInput(
            f"{path}: journal of format {int(text)}, newer than this benchtui reads ({FORMAT}): "
            "upgrade benchtui to read it"
        )
    return int(text)


def make_current(run_dir: Path) -> None:
    """Before writing lines of this format into an older journal: say so, durably (the lines
    written so far are lines of this format too)."""
    if journal_format(run_dir) < FORMAT:
        atomic_write(run_dir / FORMAT_FILE, f"{FORMAT}\n".encode())


def read(path: Path, plan_ids: dict[str, PlannedSession]) -> Journal:
    """Parse the journal; a torn last line is ignored, any other bad session line is corruption.

    A shortlist campaign's plan grows as it is read: a triage's end line adds its episodes to
    `plan_ids` (engine/shortlist.py)."""
    journal = Journal(format=journal_format(path.parent), path=path)
    sessions: list[str] = []
    numbers: list[int] = []
    try:
        for number, raw in enumerate(whole_lines(path), 1):  # kinds told apart by their first key
            journal.size += len(raw)
            if raw.startswith(_DETAILS):
                continue  # bulky, and only their readers need them (details_of)
            line = raw[:-1].decode("utf-8", errors="replace")
            if raw.startswith(_FLIGHT):
                journal.flight_lines.append((number, line))
            elif raw.startswith(_RUNNER):
                journal.runner = _runner(line, number, path)
            else:
                sessions.append(line)
                numbers.append(number)
    except FileNotFoundError:
        return journal
    lines = sessions
    try:
        values = _parse_all(lines, numbers)
    except ValueError as exc:
        raise BadInput(f"{path}: corrupted journal {exc}; use --fresh to start over") from None
    with gc_paused():
        for number, value in zip(numbers, values, strict=True):
            try:
                rec = JournalRecord.from_json(value)
                if not bounds.sane_amount(value["cost_usd"]):  # edited by hand: inf, 1e300
                    raise ValueError(f"cost_usd {value['cost_usd']!r} is not a sane amount")
                planned = plan_ids.get(rec.session)
                if planned is None or planned.model != rec.model:
                    raise ValueError("a session this campaign does not plan")
            except ValueError as exc:
                raise BadInput(
                    f"{path}: corrupted journal at line {number} ({exc}); use --fresh to start over"
                ) from None
            journal.records.append(rec)
            if planned.triage:
                for episode in shortlist.grown_by(rec, planned):
                    plan_ids.setdefault(episode.id, episode)
    return journal


def _runner(line: str, number: int, path: Path) -> str:
    try:
        profile = json.loads(line)["active_runner"]
        if isinstance(profile, str):
            return profile
    except (ValueError, KeyError, TypeError, RecursionError):
        pass
    raise BadInput(f"{path}: corrupted journal at line {number} (not a runner); use --fresh to start over")


def _parse_all(lines: list[str], numbers: list[int]) -> list[Any]:
    """One JSON parse for the whole journal (4x faster than a parse a line); a line that
    does not parse, or holds more or less than one value, is found and named line by line."""
    try:
        with gc_paused():
            records: list[Any] = json.loads("[" + ",".join(lines) + "]")
        if len(records) == len(lines):
            return records
    except (ValueError, RecursionError):
        pass
    for number, line in zip(numbers, lines, strict=True):
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            raise ValueError(f"at line {number}") from None
    raise ValueError("(a line holds more than one record)")


def whole_lines(path: Path, what: str = "the journal") -> Iterator[bytes]:
    """The file's whole lines, newline included (a torn last line is not one), read as a stream:
    a regular file only (never blocking on a FIFO); FileNotFoundError when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadInput(f"{path}: {what} is not a regular file")
    try:
        with open(fd, "rb", buffering=1 << 20) as file:
            for line in file:
                if line.endswith(b"\n"):
                    yield line
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None


def details_lines(path: Path, model: str) -> list[bytes]:
    """A model's details lines in the journal at `path`, whole, in order (none if it is missing)."""
    head = f"{DETAILS}{json.dumps(model)},".encode()
    try:
        return [line for line in whole_lines(path) if line.startswith(head)]
    except FileNotFoundError:
        return []


def details_of(path: Path, model: str) -> dict[tuple[str, int], OutcomeDetails]:
    """A model's outcome details in the journal at `path`, by (session, attempt); a broken line
    is skipped, as the file of details older releases kept was read."""
    found: dict[tuple[str, int], OutcomeDetails] = {}
    for line in details_lines(path, model):
        try:
            data = json.loads(line)
            if isinstance(data, dict):
                data.pop("details", None)  # the line's tag: its model
            rec = OutcomeDetails.from_json(data)
        except (ValueError, RecursionError):
            continue
        found[rec.session, rec.attempt] = rec
    return found


def details_digests(path: Path, models: list[str]) -> dict[str, Any]:
    """Per model, a running sha256 of its details lines in the journal, in one pass."""
    heads = {f"{DETAILS}{json.dumps(m)},".encode(): m for m in models}
    digests = {m: hashlib.sha256() for m in models}
    try:
        for line in whole_lines(path):
            if line.startswith(_DETAILS):
                model = next((m for head, m in heads.items() if line.startswith(head)), None)
                if model is not None:
                    digests[model].update(line)
    except FileNotFoundError:
        pass
    return digests
