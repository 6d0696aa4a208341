"""Each session counted once, wherever its run dir lives.

A session is itself by its identity: its run's campaign identity (the parts that say what its
sessions were given: environment, runner profiles, target, protocol; not the campaign's name nor
the dates of its history, which a copy may have edited), its model and id, and when its first
attempt started (the journal's `running` line, to the microsecond). A run dir copied with `cp -a`
and pooled with its original, or last month's export pooled with this month's, holds the same
sessions twice: each is counted once (the first run given keeps it), its spend and its attempts'
ends with it, and the report names the duplicates. Two runs of one campaign are never confused:
their sessions started at other times.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from benchtui.core.money import ZERO
from benchtui.report.runs import RecordedRun, SessionHistory

GIVEN = ("environment", "runners", "target", "protocol")
"""The identity parts a session's identity takes: what it was given, unchanged by a growth."""

SessionKey = tuple[tuple[str, ...], str, str, float | None]


def session_key(run: RecordedRun, view: SessionHistory) -> SessionKey:
    """(what it was given, model, session id, when its first attempt started); a session that
    never started is placed by its run's first journal line instead (a copy keeps both)."""
    given = tuple(run.identity.get(part, "") for part in GIVEN)
    started = view.first_started if view.first_started is not None else run.t0
    return given, view.planned.model, view.planned.id, started


@dataclass(frozen=True, slots=True)
class Duplicates:
    sessions: int
    """Sessions dropped as another run's (each counted once)."""
    notes: list[str]
    """One line per run that held any: how many, and whose they are."""


def count_once(runs: list[RecordedRun]) -> Duplicates:
    """Drop, from each run in turn, the sessions an earlier run already holds (in place: its
    sessions, its attempts' ends and their spend); say which run held them first."""
    seen: dict[SessionKey, RecordedRun] = {}
    notes: list[str] = []
    dropped = 0
    for run in runs:
        kept: list[SessionHistory] = []
        first_of: dict[str, int] = defaultdict(int)
        gone: set[str] = set()
        for view in run.sessions:
            key = session_key(run, view)
            earlier = seen.get(key)
            if earlier is None:
                seen[key] = run
                kept.append(view)
            else:
                first_of[str(earlier.path)] += 1
                gone.add(view.planned.id)
        if not gone:
            continue
        dropped += len(gone)
        run.sessions = kept
        _drop_spend(run, gone)
        whose = ", ".join(f"{n} of {path}" for path, n in first_of.items())
        example = sorted(gone)[0]
        notes.append(
            f"{run.path}: {len(gone)} session(s) already pooled from another run dir ({whose}; "
            f"e.g. session {example}: the same campaign identity, session id and attempt start): "
            "each counted once"
        )
    return Duplicates(dropped, notes)


def _drop_spend(run: RecordedRun, gone: set[str]) -> None:
    """The dropped sessions' attempts leave the run's ends, and their cost its spend (what the
    ledger counted: every end's cost is spent; a cost of an end other than done was wasted)."""
    for rec in [r for r in run.ends if r.session in gone]:
        run.spent[rec.model] = run.spent.get(rec.model, ZERO) - rec.cost_usd
        if rec.state != "done":
            run.wasted[rec.model] = run.wasted.get(rec.model, ZERO) - rec.cost_usd
    run.ends = [r for r in run.ends if r.session not in gone]
