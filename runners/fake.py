"""FakeRunner: no model calls; one authorised "call" of `cost_usd` per session, a canned certificate."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

import trio
from pydantic import Field

from runners.base import Meter, Result, RunnerProfile, SessionOutcome, SessionSpec, Usage

CANNED_CERTIFICATE = Path(__file__).with_name("data") / "fake-certificate.json"


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
    """The outcome every fake session reports."""


@cache
def canned_certificate() -> dict[str, Any]:
    return json.loads(CANNED_CERTIFICATE.read_text())


class FakeRunner:
    Profile: ClassVar[type[RunnerProfile]] = FakeProfile

    def __init__(self, profile: FakeProfile, *, run_dir: Path) -> None:
        self.profile = profile
        self.call_log = run_dir / profile.call_log if profile.call_log else None

    def _log_call(self, session: SessionSpec) -> None:
        line = json.dumps({"model": session.model.name, "session": session.id}) + "\n"
        # O_APPEND + one write: lines from concurrent sessions never interleave.
        fd = os.open(self.call_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        usage = Usage(flat_usd=self.profile.cost_usd)
        if not await meter.authorise(meter.price(usage)):
            return SessionOutcome("no_certificate", reason="budget_exhausted")
        if self.call_log is not None:
            self._log_call(session)
        if self.profile.latency_s:
            await trio.sleep(self.profile.latency_s)
        meter.charge(usage)
        certificate = canned_certificate() if self.profile.result in ("bug_found", "rejected") else None
        return SessionOutcome(
            self.profile.result,
            steps=1,
            certificate=certificate,
            verify_details={"verifier": "none: fake runner"} if certificate else None,
        )
