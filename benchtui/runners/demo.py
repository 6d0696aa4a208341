"""A scripted fake runner for screenshots and demos: deterministic steps, notes, costs, outcomes.

Use it as `kind = "demo"` (a built-in name; old campaigns spell it `benchtui.ui.demo:DemoRunner`).
Each session makes `steps` authorised model calls with token counts derived from its index, reports a progress note per call, then ends
with an outcome picked by its index, unless its index is `hold_from` or more: then it keeps
running (its reservation visible) until it is killed or the campaign stops.
"""

from __future__ import annotations

from typing import ClassVar

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
from benchtui.core.outcome import claimed
from benchtui.runners.fake import canned_certificate

NOTES = (
    "read the sources",
    "run the library's program",
    "try a tiny input",
    "compare with the expected answer",
    "write certificate",
)
"""What a session is doing, step by step, for a target whose brief has no `demo.notes` (one a line)."""
OUTCOMES: tuple[Result, ...] = ("bug_found", "no_certificate", "no_bug", "rejected", "bug_found")


class DemoProfile(RunnerProfile):
    kind: str = "demo"
    steps: int = Field(default=4, ge=1)
    """Model calls per session."""
    prompt_tokens: int = Field(default=9000, ge=0)
    """Prompt size of the first call; each later call adds a quarter of it."""
    hold_from: int = Field(default=1_000_000, ge=0)
    """Sessions with this index or higher keep running after their calls."""
    step_s: float = Field(default=0.0, ge=0)
    """Seconds each step takes (campaigns/play.toml: slow enough to try the keys)."""
    bug_sessions: dict[str, list[int]] | None = None
    """As the fake runner's: exactly these session indices of a model find a bug, the rest none."""


class DemoRunner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = DemoProfile
    profile: DemoProfile

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        p = self.profile
        notes = self.target.brief["demo.notes"].split("\n") if "demo.notes" in self.target.brief else NOTES
        for step in range(p.steps):
            prompt = p.prompt_tokens + step * p.prompt_tokens // 4
            if not await meter.authorise(meter.worst_case_usd(prompt)):
                return SessionOutcome(
                    "no_certificate",
                    reason="budget_exhausted",
                    steps=step,
                    ending="budget_exhausted",
                    actions=step,
                )
            if p.step_s:
                await trio.sleep(p.step_s)
            meter.charge(Usage(prompt, 400 + 150 * ((session.index + step) % 5)))
            meter.progress(f"step {step + 1}: {notes[(session.index + step) % len(notes)]}")
            if p.step_s:
                await trio.sleep(p.step_s)
        if session.index >= p.hold_from:
            await trio.sleep_forever()
        result = OUTCOMES[session.index % len(OUTCOMES)]
        if p.bug_sessions is not None:
            result = (
                "bug_found"
                if session.index in p.bug_sessions.get(session.model.name, ())
                else "no_certificate"
            )
        certificate = canned_certificate() if result in ("bug_found", "rejected") else None
        if certificate is not None and session.task:
            certificate = {**certificate, "rule": session.task}
        return SessionOutcome(
            result,
            steps=p.steps,
            certificate=certificate,
            judgement=claimed("demo", bug=result == "bug_found") if certificate else None,
            ending="found" if result == "bug_found" else "model_done",
            actions=p.steps,
        )
