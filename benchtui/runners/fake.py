"""FakeRunner: no model calls; one authorised "call" of `cost_usd` per session, a canned certificate."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, Literal

import trio
from pydantic import Field

from benchtui.core.contract import (
    Meter,
    Result,
    RunnerKind,
    RunnerProfile,
    SessionOutcome,
    SessionSpec,
    Usage,
)
from benchtui.core.endings import CANNOT_ACT, GROUP, MEANING, Ending
from benchtui.core.outcome import claimed
from benchtui.core.target import TargetKind


class FakeProfile(RunnerProfile):
    kind: Literal["fake"] = "fake"
    """No model calls: a canned certificate for tests and demos."""
    cost_usd: Decimal = Field(default=Decimal("0.01"), ge=0)
    """Spent by each session in its one authorised call."""
    latency_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """How long the fake call takes."""
    call_log: str | None = None
    """Relative to the run dir: one JSON line {"model", "session"} appended per real call."""
    result: Result = "bug_found"
    """The outcome every fake session reports (unless `bug_sessions` is given)."""
    bug_sessions: dict[str, list[int]] | None = None
    """Scripted outcomes, e.g. {"fake/model-a" = [0, 2]}: exactly those session indices of a
    model find a bug, every other session ends `no_certificate` (models not named find none).
    With `tasks`, the certificate's rule is the session's task (distinct-rule counting)."""
    rules: list[str] | None = None
    """The rule inventory a shortlist campaign's triage chooses from (`[protocol]`)."""
    shortlist: dict[str, list[str]] | None = None
    """Scripted triage commits, e.g. {"fake/model-a" = ["r3", "r1"]}: the rules (in order) each
    model's triage commits, unknown or repeated ones included; a model not named commits the
    inventory's first `shortlist_size` rules."""
    endings: dict[str, Ending] | None = None
    """Scripted endings, e.g. {"fake/model-b" = "no_action"}: that model's sessions that find no
    bug end so (core/endings.py), having run no action where the ending says the model could not
    act, an infrastructure ending as a retryable error (default: `model_done`)."""

    added_later: ClassVar[dict[str, Any]] = {"endings": None}


def canned_certificate() -> dict[str, Any]:
    """A claim in the target benchmark's certificate shape, built here (a fresh copy each call):
    `unsound_extraction` on MaximumIndependentSet → MaximumClique of the path 0-1-2."""
    unit = {"graph": "SimpleGraph", "weight": "One"}

    def problem(kind: str, edges: list[list[int]]) -> dict[str, Any]:
        return {
            "data": {"graph": {"edges": edges, "num_vertices": 3}, "weights": [1, 1, 1]},
            "type": kind,
            "variant": dict(unit),
        }

    source = problem("MaximumIndependentSet", [[0, 1], [1, 2]])
    return {
        "rule": "MaximumIndependentSetToMaximumClique",
        "source": source,
        "bundle": {
            "path": [
                {"name": "MaximumIndependentSet", "variant": dict(unit)},
                {"name": "MaximumClique", "variant": dict(unit)},
            ],
            "source": problem("MaximumIndependentSet", [[0, 1], [1, 2]]),
            "target": problem("MaximumClique", [[0, 2]]),
        },
        "violation": "unsound_extraction",
        "target_config": "1,0,0",
        "claimed_source_solution": [1, 1, 0],
        "note": "A buggy extract_solution maps target config [1,0,0] back to [1,1,0] in source "
        "space; vertices 0 and 1 are adjacent, so it is not an independent set.",
    }


class FakeRunner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = FakeProfile
    #: Logical budgets it applies: its one call (the meter) and its one certificate (a submit).
    enforces: ClassVar[frozenset[str]] = frozenset({"model_calls", "submits"})

    def __init__(
        self, profile: FakeProfile, *, run_dir: Path, target: TargetKind, executor: object = None
    ) -> None:
        super().__init__(profile, run_dir=run_dir, target=target, executor=executor)
        self.profile: FakeProfile = profile
        self.call_log = run_dir / profile.call_log if profile.call_log else None

    runs_triage = True

    @classmethod
    def scripted_inventory(cls, profile: Any) -> list[str] | None:
        """Shortlist campaigns: the rules a triage chooses from (the profile's `rules`), in place
        of the target's."""
        return list(profile.rules) if profile.rules is not None else None

    def _log_call(self, session: SessionSpec) -> None:
        line = json.dumps({"model": session.model.name, "session": session.id}) + "\n"
        # O_APPEND + one write: lines from concurrent sessions never interleave.
        assert self.call_log is not None
        fd = os.open(self.call_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def _result(self, session: SessionSpec) -> Result:
        scripted = self.profile.bug_sessions
        if scripted is None:
            return self.profile.result
        return "bug_found" if session.index in scripted.get(session.model.name, ()) else "no_certificate"

    def _triage(self, session: SessionSpec) -> SessionOutcome:
        assert session.triage is not None
        scripted = (self.profile.shortlist or {}).get(session.model.name)
        rules = scripted if scripted is not None else list(session.triage.rules[: session.triage.size])
        committed = [{"rule": rule, "hypothesis": f"scripted: {rule} looks fragile"} for rule in rules]
        return SessionOutcome("no_certificate", steps=1, shortlist=committed, ending="model_done", actions=1)

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        usage = Usage(flat_usd=self.profile.cost_usd)
        if not await meter.authorise(meter.price(usage)):
            return SessionOutcome("no_certificate", reason="budget_exhausted", ending="budget_exhausted")
        if self.call_log is not None:
            self._log_call(session)
        if self.profile.latency_s:
            await trio.sleep(self.profile.latency_s)
        meter.charge(usage)
        if session.triage is not None:
            return self._triage(session)
        result = self._result(session)
        scripted = (self.profile.endings or {}).get(session.model.name)
        if scripted is not None and result != "bug_found":
            return scripted_ending(scripted)
        certificate = None
        if result in ("bug_found", "rejected") and not (session.limits and await meter.use("submits")):
            certificate = canned_certificate()
            if session.task:
                certificate = {**certificate, "rule": session.task}
        return SessionOutcome(
            result,
            steps=1,
            certificate=certificate,
            judgement=claimed("none: fake runner", bug=result == "bug_found") if certificate else None,
            ending="found" if result == "bug_found" else "model_done",
            actions=1,
        )


def scripted_ending(ending: Ending) -> SessionOutcome:
    """A fake session that ended as the profile's `endings` say."""
    infra = GROUP[ending] == "infrastructure"
    return SessionOutcome(
        "error" if infra else "no_certificate",
        reason=f"scripted: {MEANING[ending]}",
        steps=1,
        infra_error=infra,
        ending=ending,
        actions=0 if ending in CANNOT_ACT else 1,
    )
