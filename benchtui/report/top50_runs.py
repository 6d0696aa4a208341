"""The Top50 runs of a run dir (sessions of the `top50` runner kind), each scored by the
benchmark's rule.

One session of the `top50` kind is one whole run of the benchmark's own runner for one model;
its runner keeps the run's output byte for byte as `sessions/<id>/attempt-<N>.submission.json`.
A session's run is its latest attempt's file (an attempt cut off by a cap, a kill or a crash is
run again as a new attempt: its file is the earlier attempt's, never merged). Every file is read
beneath the run dir without following any link (runners/kit/beneath.py), bounded, and through
the one reader of the format (core/submission.py).

The score is the scorer's (`benchmark.top50_contract.score_top50_submission`), counted here from
the typed ledgers: an episode counts once when a submit was accepted (its first accepted one),
`bugs_at_k` counts those among the first k positions, pred calls per bug are all episodes' pred
calls over the bugs, `cap_hits` the episodes whose counter ended at its limit. The accepts are
the runner's own verifier's (the benchmark's, replaying with the run's pred), which is what the
scorer re-checks; where benchtui's verifier re-checked them (`attempt-N.certificates.json`,
written by the runner), a disagreement is named.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtui.core import pins, submission
from benchtui.core.errors import BadInput
from benchtui.core.outcome import Looked
from benchtui.engine.reader import RunDir
from benchtui.engine.records import JournalRecord
from benchtui.runners.kit import beneath

RAN = ("done", "error", "killed")
KINDS = frozenset({"top50"})
"""Runner kinds whose sessions are whole runs of the benchmark's runner. A session of one (or of
a profile whose other sessions left submissions) that left none is `missing`; a session of
another kind with a submission file counts too (the file is what is read)."""
CERTIFICATES_MAX_BYTES = 64 * 1024 * 1024
TOP = (10, 25, 50)


def submission_path(session: str, attempt: int) -> str:
    """Where the runner keeps an attempt's submission, relative to the run dir."""
    return f"sessions/{session}/attempt-{attempt}.submission.json"


@dataclass(frozen=True, slots=True)
class Score:
    """A run's score, in the scorer's terms."""

    positions: tuple[int, ...]
    """Shortlist positions (1-based) with an accepted submit."""
    first_attempt: int
    second_attempt: int
    pred_calls: int
    cap_hits: dict[str, int]
    usage: submission.Usage

    @property
    def bugs(self) -> int:
        return len(self.positions)

    def at(self, k: int) -> int:
        return sum(1 for p in self.positions if p <= k)

    @property
    def pred_calls_per_bug(self) -> float | None:
        return round(self.pred_calls / self.bugs, 4) if self.bugs else None


def score(sub: submission.Submission) -> Score:
    """The scorer's numbers. A run its runner did not certify fails the scorer's validation, which
    then counts nothing of it (no bug, no pred call, no cap hit; its usage still summed)."""
    if not sub.rankable:
        return Score((), 0, 0, 0, {}, sub.usage)
    positions = sorted({e.index for e in sub.accepts})
    firsts = sum(1 for e in sub.accepts if e.accepted is not None and e.accepted.attempt == 1)
    return Score(
        positions=tuple(positions),
        first_attempt=firsts,
        second_attempt=len(sub.accepts) - firsts,
        pred_calls=sub.pred_calls,
        cap_hits=sub.cap_hits,
        usage=sub.usage,
    )


@dataclass(frozen=True, slots=True)
class Top50Run:
    """One session's run: its latest attempt's submission, read and typed."""

    run_dir: Path
    session: str
    model: str
    index: int
    attempt: int
    state: str
    """The session's state in the journal (`done`, `error`, `killed`)."""
    data: bytes
    sub: submission.Submission
    disagreements: tuple[str, ...] = ()
    """Accepted certificates benchtui's own verifier did not confirm (rule: its verdict)."""
    rechecked: int = 0
    """Accepted certificates benchtui's verifier re-checked."""

    @property
    def relative(self) -> str:
        return submission_path(self.session, self.attempt)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def finished(self) -> bool:
        """Exported and ranked: the session ended `done` and its file says the run completed."""
        return self.state == "done" and self.sub.complete

    @property
    def counted(self) -> bool:
        """Finished and certified by its runner: what the scorer counts and its board shows (an
        uncertified run fails its validation: the report leaves it out rather than count a 0)."""
        return self.finished and self.sub.rankable

    @property
    def label(self) -> str:
        return pins.label(self.sub)

    @property
    def score(self) -> Score:
        return score(self.sub)


@dataclass(frozen=True, slots=True)
class Missing:
    """A session that ran without a submission to show (the runner wrote none)."""

    run_dir: Path
    session: str
    model: str
    attempt: int
    state: str


@dataclass(slots=True)
class Top50Runs:
    runs: list[Top50Run] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    wasted: dict[str, int] = field(default_factory=dict)
    """Per model, earlier attempts of its sessions that ran again (cut off, re-run on --resume)."""

    @property
    def wasted_attempts(self) -> int:
        return sum(self.wasted.values())

    def wasted_attempts_of(self, model: str) -> int:
        return self.wasted.get(model, 0)


@dataclass(frozen=True, slots=True)
class Ended:
    """A session's latest attempt, as the journal says it (what `read` needs of it)."""

    session: str
    model: str
    index: int
    attempt: int
    state: str
    runner: str


def ended_of(records: Iterable[JournalRecord]) -> list[Ended]:
    last: dict[str, JournalRecord] = {}
    for rec in records:
        last[rec.session] = rec
    return [Ended(r.session, r.model, r.index, r.attempt, r.state, r.runner) for r in last.values()]


def read(run_dirs: Iterable[Path], ended: Mapping[Path, list[Ended]] | None = None) -> Top50Runs:
    """Every Top50 run of the run dirs (`ended`: their sessions, where the caller has read the
    journals already). A submission that is corrupted, a link, a FIFO, too large or of an unknown
    format is a one-line BadInput naming it (nothing is written)."""
    found = Top50Runs()
    for run_dir in run_dirs:
        saved = RunDir(run_dir)
        kinds = {name: profile.kind for name, profile in saved.campaign.runners.items()}
        folders = _session_folders(run_dir)
        if not folders and not any(kind in KINDS for kind in kinds.values()):
            continue  # no runner wrote a session's files (fake, demo): nothing to read
        sessions = ended[run_dir] if ended is not None and run_dir in ended else ended_of(saved.journal)
        unfiled: list[Ended] = []
        top50 = {name for name, kind in kinds.items() if kind in KINDS}
        for rec in sessions:
            if rec.state not in RAN:
                continue
            if rec.session not in folders:  # the runner wrote nothing for it (fake, demo, ...)
                unfiled.append(rec)
                continue
            data = _read_beneath(run_dir, submission_path(rec.session, rec.attempt), submission.MAX_BYTES)
            if data is None:
                unfiled.append(rec)
                continue
            top50.add(rec.runner)
            where = f"{run_dir}/{submission_path(rec.session, rec.attempt)}"
            sub = submission.parse(data, where=where)
            if sub.model != rec.model:
                raise BadInput(f"{where}: a submission of {sub.model[:80]!r} in a session of {rec.model!r}")
            earlier = sum(
                1 for n in range(1, rec.attempt) if _exists(run_dir, submission_path(rec.session, n))
            )
            found.wasted[rec.model] = found.wasted.get(rec.model, 0) + earlier
            agreed, rechecked = _recheck(run_dir, rec, sub)
            found.runs.append(
                Top50Run(
                    run_dir,
                    rec.session,
                    rec.model,
                    rec.index,
                    rec.attempt,
                    rec.state,
                    data,
                    sub,
                    agreed,
                    rechecked,
                )
            )
        # a session of a profile that writes submissions (its kind, or its other sessions did)
        found.missing += [
            Missing(run_dir, rec.session, rec.model, rec.attempt, rec.state)
            for rec in unfiled
            if rec.runner in top50
        ]
    found.runs.sort(key=lambda r: (str(r.run_dir), r.model, r.index))
    return found


def _read_beneath(run_dir: Path, relative: str, limit: int) -> bytes | None:
    try:
        return beneath.read_beneath(run_dir, relative, limit)
    except beneath.Refused as exc:
        raise BadInput(f"{run_dir}: {exc}") from None


def _session_folders(run_dir: Path) -> set[str]:
    """The names in `sessions/` (one listing, so that a 100,000-session fake run costs one call)."""
    top = _open_root(run_dir)
    if top is None:
        return set()
    try:
        folder = beneath.open_folder(top, ["sessions"], shown="sessions")
    except beneath.Refused as exc:
        raise BadInput(f"{run_dir}: {exc}") from None
    finally:
        os.close(top)
    if folder is None:
        return set()
    try:
        return set(os.listdir(folder))
    finally:
        os.close(folder)


def _open_root(run_dir: Path) -> int | None:
    try:
        return beneath.open_root(run_dir)
    except beneath.Refused as exc:
        raise BadInput(f"{run_dir}: {exc}") from None


def _exists(run_dir: Path, relative: str) -> bool:
    """Whether the name is there (never read: a limit of 0 refuses any content)."""
    try:
        return beneath.read_beneath(run_dir, relative, 0) is not None
    except beneath.Refused:
        return True


def _recheck(run_dir: Path, rec: Ended, sub: submission.Submission) -> tuple[tuple[str, ...], int]:
    """benchtui's verifier's verdicts on the accepted certificates, where the runner kept them."""
    relative = f"sessions/{rec.session}/attempt-{rec.attempt}.certificates.json"
    raw = _read_beneath(run_dir, relative, CERTIFICATES_MAX_BYTES)
    if raw is None:
        return (), 0
    try:
        entries = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadInput(f"{run_dir}/{relative}: not JSON") from None
    by_content: dict[str, str] = {}
    by_rule: dict[str, str] = {}
    for item in entries if isinstance(entries, list) else []:
        looked = Looked.from_json(item)
        if looked is None or looked.verdict is None or not isinstance(looked.certificate, dict):
            continue
        by_content[_canonical(looked.certificate)] = looked.verdict.status
        if isinstance(rule := looked.certificate.get("rule"), str):
            by_rule[rule] = looked.verdict.status
    found: list[tuple[str, str]] = []
    for episode in sub.accepts:
        assert episode.accepted is not None
        # the certificate itself (what the runner re-checked), else the rule it names
        status = by_content.get(_canonical(episode.accepted.certificate), by_rule.get(episode.rule))
        if status is not None:
            found.append((episode.rule, status))
    return tuple(f"{rule}: {status}" for rule, status in found if status != "accepted"), len(found)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# --- the benchmark's board shape -----------------------------------------------------------------

_TS = re.compile(r"[^0-9T]")
_SLUG = re.compile(r"[^a-z0-9._-]+")


def timestamp(sub: submission.Submission) -> str:
    """The board's `timestamp`: the run's `created_at` as digits (the scorer's spelling)."""
    return _TS.sub("", sub.created_at)[:15] or "unknown"


def submission_id(run: Top50Run) -> str:
    """The board's `submission_id`: the file's own hash (8 hex), so every run's differs."""
    return run.sha256[:8]


def board_entry(run: Top50Run) -> dict[str, Any]:
    """The run's public entry, in the board's shape (the keys `check_aggregate.py` allows; no rule,
    no certificate). `rankable` is benchtui's label (the published pins too), not the runner's
    structural flag: a local variant shows as `rankable: false`, by its commit and pred."""
    s, sub = run.score, run.sub
    return {
        "model": sub.model,
        "library_commit": sub.library_commit,
        "runner_version": sub.runner_version,
        "pred_version": sub.pred_version,
        "rankable": run.label == pins.RANKABLE,
        "bugs_found": s.bugs,
        "rules_tested": sub.planned,
        "bugs_at_10": s.at(10),
        "bugs_at_25": s.at(25),
        "bugs_at_50": s.at(50),
        "first_attempt_accepts": s.first_attempt,
        "second_attempt_accepts": s.second_attempt,
        "pred_calls_per_bug": s.pred_calls_per_bug,
        "cap_hits": dict(s.cap_hits),
        "usage_totals": s.usage.to_json(),
        "total_tokens_k": round(s.usage.total / 1000, 2),
        "submitted_by": sub.extra.get("submitted_by")
        if isinstance(sub.extra.get("submitted_by"), str)
        else None,
        "placeholder": False,
        "timestamp": timestamp(sub),
        "submission_id": submission_id(run),
    }


def board_slug(run: Top50Run) -> str:
    """The entry's file name (without .json), as the scorer names its board files."""
    model = _SLUG.sub("-", run.sub.model.lower()).strip("-") or "model"
    return f"{model}--{timestamp(run.sub)}--{submission_id(run)}"


def file_name(n: int, run: Top50Run) -> str:
    """A submission's name under `submissions/`: its number in the export, the first 8 hex of its
    sha256 (the scorer takes the part after the first `-` as its submission id), then the model,
    the session and the attempt, for people."""
    model = _SLUG.sub("-", run.model.lower()).strip("-") or "model"
    return f"{n:04d}-{run.sha256[:8]}-{model}-{run.session}-attempt-{run.attempt}.json"
